"""What the package and its docs tell a user to install or run exists (issue 33).

The distribution is not on a package index: ``pip install "langgraph-ctx[postgres]"``
fails for everyone, while from a clone it is ``pip install ".[postgres]"``. And there is
no ``langgraph-ctx bench`` command (the benchmarks are scripts). And one environment
variable names the database URL, wherever a user sets one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, blocks

# The distribution's name with extras, as a pip argument; pyproject.toml's own dev
# extra naming the project's other extras is the one place that form is right.
BY_NAME = re.compile(r"""(?<![\w.-])langgraph-ctx\[[\w,]+\]""")


def _shipped_text() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "mkdocs.yml", ROOT / "benchmarks" / "README.md"]
    for folder in ("docs", "examples", "langgraph_ctx"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md", ".json"}]
    return files


def test_nothing_tells_a_user_to_install_the_unpublished_distribution_by_name() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {match}"
        for path in _shipped_text()
        for match in BY_NAME.findall(path.read_text(encoding="utf-8"))
    ]
    assert not found, "install by path from a clone (pip install '.[x]'):\n" + "\n".join(found)


def test_every_langgraph_ctx_command_named_exists(capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph_ctx.cli.commands import main

    named: set[str] = set()
    for path in [*_shipped_text(), ROOT / "pyproject.toml"]:
        text = path.read_text(encoding="utf-8")
        # As written in a command: inline code, a comment, or a shell line.
        named |= set(re.findall(r"(?:`|# |^|&& )langgraph-ctx ([a-z]+)", text, re.M))
    assert {"demo", "inspect", "migrate"} <= named
    missing = []
    for command in sorted(named):
        with pytest.raises(SystemExit) as exited:
            main([command, "--help"])
        if exited.value.code != 0:
            missing.append(command)
    capsys.readouterr()
    assert not missing, f"named as a langgraph-ctx command but not one: {missing}"


# An environment variable for a database URL, as code or docs name one.
URL_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9_]*(?:DATABASE|DB|PG|POSTGRES)[A-Z0-9_]*_URL\b")


def test_one_environment_variable_names_the_database_url() -> None:
    """The CLI, the server example, the examples and the benchmarks read
    LANGGRAPH_CTX_DATABASE_URL; the tests' own name is only explained in the docs."""
    files = [*_shipped_text(), *(ROOT / "benchmarks").rglob("*.py")]
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in URL_VARIABLE.findall(path.read_text(encoding="utf-8"))
        if name != "LANGGRAPH_CTX_DATABASE_URL"
        and not (name == "LANGGRAPH_CTX_TEST_DATABASE_URL" and path.suffix == ".md")
    }
    assert not found, "read LANGGRAPH_CTX_DATABASE_URL instead:\n" + "\n".join(sorted(found))


def test_the_server_page_shows_the_langgraph_json_that_ships() -> None:
    """docs/server.md's langgraph.json is examples/server/langgraph.json, and what it
    names by path (the repository, the graph's module) is there."""
    shipped_path = ROOT / "examples" / "server" / "langgraph.json"
    shipped = json.loads(shipped_path.read_text(encoding="utf-8"))
    shown = [json.loads(b.code) for b in blocks(ROOT / "docs" / "server.md") if b.lang == "json"]
    assert shown == [shipped]
    local = [d for d in shipped["dependencies"] if d.startswith(".")]
    assert (shipped_path.parent / "../..").resolve() == ROOT and "../.." in local
    for graph in shipped["graphs"].values():
        assert (shipped_path.parent / graph.split(":")[0]).is_file(), graph
