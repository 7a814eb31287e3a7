"""Every Python block in README.md runs as written, in a fresh interpreter.

A reader copies a block into a file and runs it: so does this test, in an empty
directory, with nothing imported or defined beforehand. A block that needs a
PostgreSQL server reads its URL from ``DATABASE_URL``, which points at the test
server here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
HEADING = re.compile(r"^#+ (.+)$", re.M)


def readme_blocks() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        headings = HEADING.findall(text, 0, match.start())
        found.append((f"{headings[-1] if headings else 'top'} @{match.start()}", match.group(1)))
    return found


def test_the_readme_has_python_blocks() -> None:
    assert len(readme_blocks()) >= 6


@pytest.mark.parametrize(("where", "code"), readme_blocks(), ids=lambda v: str(v)[:40])
def test_readme_block_runs_as_written(
    where: str, code: str, tmp_path: Path, postgres_db: str
) -> None:
    # This checkout's package, whatever is installed (as tests/test_examples.py does).
    path_var = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "DATABASE_URL": postgres_db,
        "LANGGRAPH_CTX_HOME": str(tmp_path),
        "PYTHONPATH": path_var,
    }
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"README block under {where!r} failed:\n{result.stderr}"


def test_the_server_clients_loop_skips_the_runs_metadata_part(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The README's ``drive()`` as a server streams it: a ``metadata`` part first (it
    has no ``langgraph_ctx`` key: indexing it was a ``KeyError``), then the events."""
    from types import SimpleNamespace

    from langgraph_sdk.schema import StreamPart

    (code,) = [c for _, c in readme_blocks() if "def drive(" in c]
    parts = [
        StreamPart("metadata", {"run_id": "r1", "attempt": 1}),
        StreamPart("custom", {"langgraph_ctx": {"kind": "utilization"}}),
        StreamPart("custom", {"langgraph_ctx": {"kind": "recall"}}),
    ]
    client = SimpleNamespace(
        threads=SimpleNamespace(create=lambda: {"thread_id": "t1"}),
        runs=SimpleNamespace(stream=lambda *args, **kwargs: iter(parts)),
    )
    namespace: dict[str, object] = {}
    exec(code, namespace)
    namespace["get_sync_client"] = lambda url: client
    namespace["drive"]()  # type: ignore[operator]
    assert capsys.readouterr().out.split() == ["utilization", "recall"]
