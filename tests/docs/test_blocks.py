"""Every Python block of README.md and docs/ runs as written, in a fresh interpreter.

A reader copies a block into a file and runs it: so does this test, in an empty
directory, with nothing imported or defined beforehand. A block that needs a
PostgreSQL server reads its URL from ``LANGGRAPH_CTX_DATABASE_URL`` (the one name the
CLI, the server example and the docs use), pointed at the test server here. A block
on ``ChatOpenAI`` or ``ChatAnthropic`` builds each request with the client's own
payload builder, offline (tests/docs/offline_providers.py).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, Block, blocks, pages, python_blocks
from tests.docs.run_block import PROVIDERS

HERE = Path(__file__).resolve().parent
# Blocks that are not Python: shell commands, config, program output.
OTHER_LANGS = {"bash", "sh", "console", "text", "json", "toml", "yaml", "ini", "sql"}


def uncovered(paths: list[Path]) -> list[str]:
    """The blocks of these pages the runner would skip: one fenced ``py`` or
    ``python3``, one indented under a list item, Python fenced as ``text`` or with
    no language."""
    found = []
    for page in paths:
        for block in blocks(page):
            if block.lang == "python":
                if block.indent:  # Markdown renders it inside the list, oddly
                    found.append(f"{block.where}: indented python fence")
                continue
            if block.lang and block.lang not in OTHER_LANGS:
                found.append(f"{block.where}: fence language {block.lang!r}")
                continue
            if block.lang in ("", "text") and _looks_like_python(block.code):
                found.append(f"{block.where}: Python fenced as {block.lang or 'no language'}")
    return found


def test_every_code_block_is_run_or_is_not_python() -> None:
    missed = uncovered(pages())
    assert not missed, "blocks the runner does not cover:\n" + "\n".join(missed)


def test_a_block_the_runner_would_skip_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "probe.md"
    page.write_text(
        "# probe\n\n"
        "```py\nimport os\n```\n\n"
        "- a list item:\n\n  ```python\n  import os\n  ```\n\n"
        "```\nfrom os import path\n```\n\n"
        "```text\nlanggraph_ctx/\n  agent/\n```\n\n"
        "```python\nimport os\n```\n",
        encoding="utf-8",
    )
    missed = uncovered([page])
    assert [m.split(": ", 1)[1] for m in missed] == [
        "fence language 'py'",
        "indented python fence",
        "Python fenced as no language",
    ]


def _looks_like_python(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return any(isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.walk(tree))


def test_the_readme_and_every_docs_page_have_python_blocks_found() -> None:
    per_page = {p.name for p in (b.path for b in python_blocks())}
    assert "README.md" in per_page
    assert len(python_blocks()) >= 25


@pytest.mark.parametrize("block", python_blocks(), ids=lambda b: b.where)
def test_block_runs_as_written(block: Block, tmp_path: Path, postgres_db: str) -> None:
    # This checkout's package, whatever is installed (as tests/test_examples.py does).
    path_var = os.pathsep.join(filter(None, [str(ROOT), str(HERE), os.environ.get("PYTHONPATH")]))
    payloads = tmp_path / "payloads.log"
    env = {
        **os.environ,
        "LANGGRAPH_CTX_DATABASE_URL": postgres_db,
        "LANGGRAPH_CTX_HOME": str(tmp_path),
        "PYTHONPATH": path_var,
        # The provider clients want a key at construction; nothing is sent.
        "OPENAI_API_KEY": "sk-test",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "DOCS_PAYLOAD_LOG": str(payloads),
    }
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-W", "error", str(HERE / "run_block.py"), str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"block at {block.where} failed:\n{result.stderr}"
    if any(name in block.code for name in PROVIDERS) and "invoke(" in block.code:
        # It ran through a real client's payload builder, not around it.
        assert payloads.exists() and payloads.read_text(), f"{block.where}: no payload built"


def test_the_server_clients_loop_skips_the_runs_metadata_part(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The server page's ``drive()`` as a server streams it: a ``metadata`` part first
    (it has no ``langgraph_ctx`` key: indexing it was a ``KeyError``), then the events."""
    from types import SimpleNamespace

    from langgraph_sdk.schema import StreamPart

    drives = [b.code for b in python_blocks() if "def drive(" in b.code]
    assert drives, "the server page's drive() block is gone"
    for code in drives:
        parts = [
            StreamPart("metadata", {"run_id": "r1", "attempt": 1}),
            StreamPart("custom", {"langgraph_ctx": {"kind": "utilization"}}),
            StreamPart("custom", {"langgraph_ctx": {"kind": "recall"}}),
        ]
        client = SimpleNamespace(
            threads=SimpleNamespace(create=lambda: {"thread_id": "t1"}),
            runs=SimpleNamespace(stream=lambda *args, parts=parts, **kwargs: iter(parts)),
        )
        namespace: dict[str, object] = {}
        exec(code, namespace)
        namespace["get_sync_client"] = lambda url, client=client: client
        namespace["drive"]()  # type: ignore[operator]
        assert capsys.readouterr().out.split() == ["utilization", "recall"]
