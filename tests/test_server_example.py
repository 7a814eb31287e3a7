"""examples/server on a real LangGraph Server: ``langgraph dev`` driven by ``langgraph-sdk``.

The server runs the example's graph with its own checkpointer and store; the
archive and the event log go to this suite's PostgreSQL. One server for the
module: a 64-turn session through threads, runs and the ``custom`` stream, then
two runs at once on one thread under each ``multitask_strategy``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from langgraph_ctx.markers import is_summary
from langgraph_ctx.storage import PostgresArchive, PostgresEventSink
from tests.postgres_fixture import fresh_database

# Starts `langgraph dev` in a subprocess: left out of the fast run (see pyproject).
pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[1]
TURNS = 64
USER = {"configurable": {"user_id": "alice"}}
MEMORY = "Alice wants every shipment update by rail freight, never by air."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"langgraph dev exited ({server.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(f"langgraph dev did not answer on {url}:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def postgres_db(postgres_url: str) -> Iterator[str]:
    """One database for the module's server (the suite's own fixture is per test)."""
    with fresh_database(postgres_url) as url:
        yield url


@pytest.fixture(scope="module")
def server(postgres_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``langgraph dev --no-browser --no-reload`` on a free loopback port, stopped after."""
    app = tmp_path_factory.mktemp("server") / "app"
    shutil.copytree(ROOT / "examples" / "server", app)  # its .langgraph_api stays there
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "LANGGRAPH_CTX_DATABASE_URL": postgres_db,
        "LANGGRAPH_CTX_HOME": str(app / "home"),
        # Offline: no CLI analytics, no LangSmith tracing.
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }
    env.pop("LANGGRAPH_CTX_MODEL", None)  # the scripted model, always
    command = [str(Path(sys.executable).with_name("langgraph")), "dev", "--no-browser"]
    command += ["--no-reload", "--host", "127.0.0.1", "--port", str(port)]
    log = app / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=app, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[SyncLangGraphClient]:
    with get_sync_client(url=server) as sdk:
        yield sdk


def _say(text: str, message_id: str) -> dict[str, Any]:
    return {"messages": [{"type": "human", "content": text, "id": message_id}]}


def _turn(client: SyncLangGraphClient, thread: str, text: str, mid: str) -> list[dict[str, Any]]:
    """One run, streamed: the pipeline's ledger events from the ``custom`` stream."""
    events = []
    for part in client.runs.stream(
        thread, "agent", input=_say(text, mid), config=USER, stream_mode="custom"
    ):
        if part.event == "error":
            pytest.fail(f"run failed: {part.data}")
        if part.event == "custom" and "langgraph_ctx" in part.data:
            events.append(part.data["langgraph_ctx"])
    return events


def _texts(state: dict[str, Any]) -> dict[str, str]:
    return {m["id"]: m["content"] for m in state["values"]["messages"]}


def test_a_long_session_compresses_recalls_delegates_and_loses_nothing(
    client: SyncLangGraphClient, postgres_db: str
) -> None:
    thread = client.threads.create()["thread_id"]
    sent: dict[str, str] = {}
    events: list[dict[str, Any]] = []
    for i in range(TURNS):
        if i == 1:  # the agent's remember tool: a memory in the server's store
            text = f"remember: {MEMORY}"
        elif i % 16 == 5:
            text = "delegate: find where SHP-0042 is now"
        else:
            text = f"Turn {i}: shipment SHP-{i:04d} left Rotterdam with {i * 3} pallets by rail."
        sent[f"u{i}"] = text
        events += _turn(client, thread, text, f"u{i}")

    kinds = [e["kind"] for e in events]
    utilization = [e["data"]["utilization"] for e in events if e["kind"] == "utilization"]
    assert len(utilization) >= TURNS  # one per model call, streamed as it happened
    assert kinds.count("compression") >= 2
    assert max(utilization) < 1.0
    # The memory is in the server's store (the bank has none of its own), and recall
    # brought it back on later turns.
    found = client.store.search_items(["lgctx_memory", "alice"], limit=100)["items"]
    key = next(item["key"] for item in found if item["value"]["text"] == MEMORY)
    assert any(key in e["data"].get("keys", ()) for e in events if e["kind"] == "recall")

    state = client.threads.get_state(thread)
    active = _texts(state)
    assert any(is_summary_dict(m) for m in state["values"]["messages"])
    results = [m for m in state["values"]["messages"] if m["type"] == "tool"]
    assert any("Rotterdam by rail" in m["content"] for m in results)  # the sub-agent's finding
    # Nothing lost: every message sent is in the history or, word for word, in the archive.
    archive = PostgresArchive(postgres_db)
    try:
        archived = {m.id: m.text for m in archive.list(thread)}
    finally:
        archive.close()
    assert set(archived) & set(sent)  # compression archived some of them...
    for mid, text in sent.items():
        assert active.get(mid, archived.get(mid)) == text, mid  # ...and every one is somewhere
    # The event log (PostgreSQL) has every compression the stream showed.
    sink = PostgresEventSink(postgres_db)
    try:
        logged = [e["kind"] for e in sink.list(thread)]
    finally:
        sink.close()
    assert logged.count("compression") == kinds.count("compression")
    # Compression summaries were kept as memories in the server's store too.
    found = client.store.search_items(["lgctx_memory", "alice"], limit=100)["items"]
    assert any(item["value"]["source"] == "compression" for item in found)


def is_summary_dict(message: dict[str, Any]) -> bool:
    from langchain_core.messages import SystemMessage

    if message["type"] != "system":
        return False
    kwargs = message.get("additional_kwargs") or {}
    return is_summary(SystemMessage(message["content"], additional_kwargs=kwargs))


def _wait_running(client: SyncLangGraphClient, thread: str, run: str) -> None:
    deadline = time.monotonic() + 30
    while client.runs.get(thread, run)["status"] == "pending":
        assert time.monotonic() < deadline, "the first run never started"
        time.sleep(0.05)


def _linear(history: list[dict[str, Any]]) -> bool:
    """Newest first: each checkpoint's parent is the next one, down to the first."""
    ids = [h["checkpoint"]["checkpoint_id"] for h in history]
    parents = [(h.get("parent_checkpoint") or {}).get("checkpoint_id") for h in history]
    return parents[:-1] == ids[1:] and parents[-1] is None


def _rollback_straggler(history: list[dict[str, Any]], rolled_back: str) -> bool:
    """The dev server's own race, not ours: ``rollback`` deletes the first run's
    checkpoints while that run (a sync node in a worker thread, which cancelling
    cannot stop) still has some to write; written after the delete, they are the
    thread's latest, so the second run continues from them. Its signature, and
    nothing else, is accepted: checkpoints of the rolled-back run are still in
    the history, and the history is one chain but for the oldest of them, whose
    parent may be gone. The graph is compiled without a checkpointer (the server
    brings its own), so none of these checkpoints is written or deleted by
    langgraph-ctx."""
    ids = [h["checkpoint"]["checkpoint_id"] for h in history]
    parents = [(h.get("parent_checkpoint") or {}).get("checkpoint_id") for h in history]
    stragglers = [i for i, h in enumerate(history) if h["metadata"].get("run_id") == rolled_back]
    if not stragglers:
        return False
    oldest = stragglers[-1]  # newest first
    before = history[oldest + 1 :]  # the thread as it was before the first run
    return parents[:oldest] == ids[1 : oldest + 1] and (not before or _linear(before))


@pytest.mark.parametrize("strategy", ["reject", "interrupt", "rollback", "enqueue"])
def test_two_runs_at_once_never_fork_the_history(
    client: SyncLangGraphClient, strategy: str
) -> None:
    thread = client.threads.create()["thread_id"]
    _turn(client, thread, "Track SHP-0100 for me.", "start")
    first = client.runs.create(thread, "agent", input=_say("slow: first", "first"), config=USER)
    _wait_running(client, thread, first["run_id"])
    second = None
    try:
        second = client.runs.create(
            thread,
            "agent",
            input=_say("second", "second"),
            config=USER,
            multitask_strategy=strategy,  # type: ignore[arg-type]
        )
    except httpx.HTTPStatusError as exc:
        assert strategy == "reject" and exc.response.status_code == 409
    for run in filter(None, [first, second]):
        client.runs.join(thread, run["run_id"])
    statuses = {r["run_id"]: r["status"] for r in client.runs.list(thread)}

    history = client.threads.get_history(thread, limit=200)
    straggler = strategy == "rollback" and _rollback_straggler(history, first["run_id"])
    assert straggler or _linear(history)
    ids = [m["id"] for m in client.threads.get_state(thread)["values"]["messages"]]
    assert len(ids) == len(set(ids))  # no message twice
    expected = {
        "reject": ["start", "first"],
        "interrupt": ["start", "second"],
        "rollback": ["start", "second"],
        "enqueue": ["start", "first", "second"],
    }[strategy]
    humans = [i for i in ids if i in ("start", "first", "second")]
    if strategy == "interrupt":  # the first run may have checkpointed its input before it stopped
        assert humans in (expected, ["start", "first", "second"])
        assert statuses[first["run_id"]] == "interrupted"
    elif straggler:  # the straggler carries the first input; the second run follows it
        assert humans in (expected, ["start", "first", "second"])
    else:
        assert humans == expected
    if strategy == "rollback":
        assert first["run_id"] not in statuses  # rolled back: run and checkpoints deleted
    if strategy == "reject":
        assert second is None and statuses[first["run_id"]] == "success"
