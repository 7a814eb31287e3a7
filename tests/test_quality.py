"""Lint and strict typing are part of the test command, so CI cannot skip them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_passes_strict_mypy() -> None:
    result = run("mypy")  # [tool.mypy] in pyproject: strict, the package only
    assert result.returncode == 0, result.stdout + result.stderr


def test_imports_keep_to_the_layers() -> None:
    # [tool.importlinter] in pyproject: cli > agent, interop > middleware > ... > errors,
    # and no import cycle inside any package. A cycle or an upward import fails here.
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


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
