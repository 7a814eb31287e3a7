from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.postgres_fixture"]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel a user would install, built from a copy of the whole repository.

    A copy, so the build's ``build/`` and ``*.egg-info`` never land in the checkout;
    the whole repository, so a file outside the package that the build picked up
    (benchmarks, tests) would show in the wheel.
    """
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv*",
            "__pycache__",
            "*.egg-info",
            "build",
            "dist",
            "*.sqlite",
            "*.sqlite-*",
            "*.png",
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", tmp],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp.glob("langgraph_ctx-*.whl")
    return wheel
