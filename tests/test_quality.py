"""Lint and strict typing are part of the test command, so CI cannot skip them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.slow
def test_ruff_is_clean() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_package_passes_strict_mypy() -> None:
    result = run("mypy")  # [tool.mypy] in pyproject: strict, the package only
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_imports_keep_to_the_layers() -> None:
    # [tool.importlinter] in pyproject: cli > agent, interop > strategies > middleware > ...,
    # and no import cycle inside any package. A cycle or an upward import fails here.
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def private_imports_across_packages() -> list[str]:
    """Every import of ``pkg._x`` (at any depth) from a module outside ``pkg``."""
    # Type-checking imports count too: the rule is about who depends on whose
    # internals, not about cycles. Root modules (``langgraph_ctx._checks``) are
    # private to the whole package, so every module may use them.
    graph = grimp.build_graph("langgraph_ctx", cache_dir=None)
    offenders = []
    for module in sorted(graph.modules):
        parts = module.split(".")
        private = next((i for i, p in enumerate(parts) if i and p.startswith("_")), None)
        if private is None or parts[private].startswith("__"):
            continue
        owner = ".".join(parts[:private])
        for importer in sorted(graph.find_modules_that_directly_import(module)):
            if importer != owner and not importer.startswith(owner + "."):
                for line in graph.get_import_details(importer=importer, imported=module):
                    offenders.append(f"{importer}:{line['line_number']} imports {module}")
    return offenders


@pytest.mark.slow
def test_no_module_imports_another_packages_private_module() -> None:
    # A package's private modules are its own, so that it can change them freely: one
    # used by another package becomes public instead. Checked here, not in
    # [tool.importlinter], as import-linter's wildcards match whole names only (no `_*`).
    offenders = private_imports_across_packages()
    assert offenders == [], "\n".join(offenders)


@pytest.mark.slow
def test_no_import_of_langgraph_internals() -> None:
    # langgraph._internal changes without notice between releases: public API only.
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "langgraph_ctx").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and any(
            name.startswith("langgraph._internal")
            for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            + [a.name for a in node.names]
        )
    ]
    assert offenders == []
