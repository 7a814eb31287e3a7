"""Lint and strict typing are part of the test command, so CI cannot skip them."""

from __future__ import annotations

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
