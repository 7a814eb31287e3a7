from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.postgres_fixture", "tests.ledger_check"]

ROOT = Path(__file__).resolve().parents[1]

# Marked whole: every test in these directories or files runs sessions end to end.
SLOW_PATHS = ("tests/conformance/", "tests/bench/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` and ``postgres`` from where a test lives and what it needs, so
    ``-m "not slow and not postgres and not server"`` is the fast part without a
    decorator on each of these tests (other slow tests carry ``@pytest.mark.slow``)."""
    for item in items:
        where = Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
        if where.startswith(SLOW_PATHS):
            item.add_marker(pytest.mark.slow)
        fixtures = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        # Tests that pick a backend by parameter (id part "postgres") reach the server
        # through request.getfixturevalue, which no static fixture list shows.
        parts = re.split(r"[-_ ,]", callspec.id) if callspec is not None else []
        if "postgres_url" in fixtures or "postgres" in parts:
            item.add_marker(pytest.mark.postgres)


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
