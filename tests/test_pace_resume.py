"""A PACE session (its history in a delta channel, ``DeltaContextState``) SIGKILLed
in the middle of a turn, on SQLite and on PostgreSQL: the history read back is
exactly the committed one, across the channel's snapshots; PACE's records come
back with it; the resumed session ends as one that never died; ``inspect`` reads it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from langgraph_ctx import DeltaReadCache
from langgraph_ctx.cli.inspect import inspect_session
from tests.pace_worker import THREAD, TURNS, drive, session, turn

ROOT = Path(__file__).resolve().parents[1]
KILL_AT = 55
CONFIG: Any = {"configurable": {"thread_id": THREAD}}


def killed(url: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tests.pace_worker", "--url", url, "--kill-at", str(KILL_AT)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def as_sent(messages: list[Any]) -> list[tuple[str, str | None, str]]:
    return [(m.type, m.id, m.text) for m in messages]


def snapshots(graph: Any) -> int:
    """Checkpoints holding a full copy of ``messages`` (the rest hold only writes)."""
    return sum(
        type(c.checkpoint["channel_values"].get("messages")).__name__ == "_DeltaSnapshot"
        for c in graph.checkpointer.list(CONFIG)
    )


@pytest.fixture(params=["sqlite", "postgres"])
def urls(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Two empty databases: one for the killed session, one for the clean one."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/killed.sqlite", f"sqlite:///{tmp_path}/clean.sqlite"
    killed_url = request.getfixturevalue("postgres_db")
    with session(f"sqlite:///{tmp_path}/clean.sqlite"):  # migrated, as the killed one
        pass
    return killed_url, f"sqlite:///{tmp_path}/clean.sqlite"


def never_killed(url: str) -> tuple[list[Any], dict[str, Any]]:
    """The session run whole: its history once turn KILL_AT is done, and its end."""
    with session(url) as graph:
        drive(graph, KILL_AT)
        graph.invoke(turn(KILL_AT), CONFIG, durability="sync")
        at_kill = graph.get_state(CONFIG).values["messages"]
        drive(graph)
        return at_kill, graph.get_state(CONFIG).values


@pytest.mark.slow
def test_a_killed_pace_session_resumes_exactly(urls: tuple[str, str]) -> None:
    killed_url, clean_url = urls
    clean_at_kill, clean = never_killed(clean_url)

    proc = killed(killed_url)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]

    with session(killed_url) as graph:
        state = graph.get_state(CONFIG)
        assert state.next  # killed in the turn: its input committed, its reply not
        history = state.values["messages"]
        # Rebuilt from a snapshot and the writes after it, equal to what was committed.
        assert snapshots(graph) >= 1
        assert as_sent(history) == as_sent(clean_at_kill[: len(history)])
        assert history[-1].id == f"t{KILL_AT}"
        records = state.values["pace_chunks"]
        assert sum(1 for r in records.values() if r["key"]) >= KILL_AT - 5

        drive(graph)  # a new process: PACE restores its records from the checkpoint
        entries = graph.get_state(CONFIG).values["context_ledger"]
        restored = [e["data"]["restored"] for e in entries if "restored" in e["data"]]
        assert restored and restored[0] >= len(records) - 1
        final = graph.get_state(CONFIG).values

    assert as_sent(final["messages"]) == as_sent(clean["messages"])
    assert len(final["messages"]) == 2 * TURNS
    assert final["pace_chunks"].keys() == clean["pace_chunks"].keys()
    assert inspect_session(killed_url, THREAD).messages == 2 * TURNS


WARM = 20
"""Turns this process runs before another process takes the thread over."""


@pytest.mark.slow
def test_a_warm_read_cache_sees_another_process_write_then_die(urls: tuple[str, str]) -> None:
    # This process holds the thread's history in its DeltaReadCache; another process
    # continues the thread (snapshots and all) and is killed mid-turn; this process
    # then reads on: what it sees is what the database holds, not what it kept.
    killed_url, clean_url = urls
    clean_at_kill, clean = never_killed(clean_url)

    with session(killed_url) as graph:
        cache = graph.checkpointer
        assert isinstance(cache, DeltaReadCache)  # create_context_agent's default for PACE
        drive(graph, WARM)
        # Every read came from memory but the first (the saver's whole history).
        assert (cache.hits, cache.misses) == (WARM - 2, 1)
        assert as_sent(graph.get_state(CONFIG).values["messages"]) == as_sent(
            clean_at_kill[: 2 * WARM]
        )

        proc = killed(killed_url)  # turns WARM..KILL_AT, then SIGKILL in turn KILL_AT
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]

        state = graph.get_state(CONFIG)
        history = state.values["messages"]
        assert state.next
        assert history[-1].id == f"t{KILL_AT}"
        assert as_sent(history) == as_sent(clean_at_kill[: len(history)])
        drive(graph)
        final = graph.get_state(CONFIG).values
    assert as_sent(final["messages"]) == as_sent(clean["messages"])
    assert final["pace_chunks"].keys() == clean["pace_chunks"].keys()
