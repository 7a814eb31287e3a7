"""Run a snippet in fresh interpreters with different string-hash salts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def outputs_under_hash_seeds(code: str, seeds: Sequence[str] = ("1", "2")) -> set[str]:
    """What ``python -c code`` prints (from the repository root) under each
    ``PYTHONHASHSEED``: one output means nothing printed depends on Python's
    per-process salt, as anything another process reads back must not."""
    return {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in seeds
    }
