"""Persistence by default: ``create_context_agent(..., checkpointer=URL or saver)`` keeps
the archive and the event log in the checkpointer's database, so a process restart
changes nothing recall, ``glimpse`` or ``original()`` return, and ``inspect`` shows
the whole session.

The restart tests run real processes (``tests/persist_worker.py``): one runs a
session to turn 12 (compression has archived the early turns by then), probes
the archive from its last checkpoint and exits; a second probes the same
checkpoint, then runs on. Their probes must be equal.
"""

from __future__ import annotations

import gc
import json
import logging
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_ctx import Budget
from langgraph_ctx.agent import (
    SubAgents,
    SubAgentSpec,
    build_context_agent,
    create_context_agent,
)
from langgraph_ctx.cli.inspect import format_inspection, inspect_session
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.storage.checkpointers import (
    archive_from_url,
    async_checkpointer_from_url,
    checkpointer_from_url,
)
from langgraph_ctx.storage.events import SQLiteEventSink
from langgraph_ctx.storage.pgconn import open_pool
from langgraph_ctx.storage.postgres import PostgresEventSink
from langgraph_ctx.testing import ScriptedChatModel
from tests.persist_worker import strategy_of, turn

ROOT = Path(__file__).resolve().parents[1]
CONFIG: Any = {"configurable": {"thread_id": "t"}}


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/session.sqlite"
    db: str = request.getfixturevalue("postgres_db")
    return db


def worker(url: str, strategy: str, *args: str) -> dict[str, Any]:
    """Run ``tests/persist_worker.py`` in a process of its own; its JSON."""
    command = [sys.executable, "-m", "tests.persist_worker", "--url", url]
    done = subprocess.run(
        [*command, "--strategy", strategy, "--thread", "t", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def archived_ids(url: str, thread: str) -> list[str]:
    with archive_from_url(url) as archive:  # type: ignore[attr-defined]
        return [str(m.id) for m in archive.list(thread)]


def events_of(url: str, thread: str) -> list[Any]:
    sink = (
        SQLiteEventSink(url.removeprefix("sqlite:///"))
        if url.startswith("sqlite")
        else PostgresEventSink(url)
    )
    with sink:
        return sink.list(thread)


def drive(agent: Any, turns: int, thread: str = "t") -> None:
    for i in range(turns):
        agent.invoke({"messages": [turn(i)]}, {"configurable": {"thread_id": thread}})


def small_agent(checkpointer: Any, strategy: str = "tiered", **options: Any) -> Any:
    model = ScriptedChatModel(default="Noted.", report_usage=False)
    return create_context_agent(
        model,
        checkpointer=checkpointer,
        strategy=strategy,
        think=False,
        budget=Budget.for_window(6_000),
        **options,
    )


# -- a restart changes nothing ---------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "strategy"),
    [
        ("sqlite", "tiered"),
        ("sqlite", "adacom"),
        ("sqlite", "arc"),
        ("sqlite", "bacm"),
        ("postgres", "tiered"),
        ("postgres", "bacm"),
    ],
)
@pytest.mark.slow
def test_a_restart_changes_nothing_recall_glimpse_or_original_return(
    backend: str, strategy: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = (
        f"sqlite:///{tmp_path}/s.sqlite"
        if backend == "sqlite"
        else request.getfixturevalue("postgres_db")
    )
    first = worker(url, strategy, "--turns", "0:12")  # then the probe, and exit
    seen = first["probe"]
    assert {"u1", "u2"} <= set(seen["original"]), "nothing archived before the restart"
    # A new process probes the same checkpoint, then runs on: compressing again.
    second = worker(url, strategy, "--at", first["at"], "--more", "12:16")
    assert second["probe"] == seen  # recall's block, glimpses, originals, search
    assert second["later"] == first["later"] == seen["original"]  # and after more turns
    assert seen["original"]["u1"] == turn(1).text
    assert seen["glimpse"][0].startswith("[u1] Crate 1 carries code")
    assert seen["glimpse"][1] == (
        "Not found: no archived message has the id 'u-missing', and none mentions it."
    )
    assert seen["glimpse"][2].startswith("[u3] Crate 3 carries code")
    assert seen["search"] and seen["search"][0].startswith("Crate 3 carries")


# -- where the stores live -------------------------------------------------------


@pytest.mark.parametrize("strategy", ["tiered", "adacom", "arc", "bacm"])
@pytest.mark.slow
def test_each_strategy_archives_into_the_checkpointers_database(strategy: str, url: str) -> None:
    agent = small_agent(url, strategy, recall=True)
    drive(agent, 14)
    ids = archived_ids(url, "t")
    assert "u1" in ids  # what the strategy took out is in the database...
    assert strategy_of(agent).original("t", "u1").text == turn(1).text  # ...and read back
    ledger = agent.get_state(CONFIG).values["context_ledger"]
    logged = events_of(url, "t")
    assert [e["seq"] for e in logged] == list(range(len(logged)))  # every event, in order
    assert [(e["seq"], e["kind"]) for e in ledger] == [
        (e["seq"], e["kind"]) for e in logged[-len(ledger) :]
    ]


def test_a_saver_passed_in_shares_its_database(tmp_path: Path, postgres_db: str) -> None:
    path = tmp_path / "own.sqlite"
    with checkpointer_from_url(f"sqlite:///{path}") as saver:
        drive(small_agent(saver), 14, "sqlite-saver")
    assert "u1" in archived_ids(f"sqlite:///{path}", "sqlite-saver")
    # A file nobody migrated: the stores migrate it.
    raw = SqliteSaver(sqlite3.connect(tmp_path / "raw.sqlite", check_same_thread=False))
    drive(small_agent(raw), 14, "raw")
    assert "u1" in archived_ids(f"sqlite:///{tmp_path}/raw.sqlite", "raw")
    # PostgresSaver on one connection (from_conn_string): shared under the saver's lock.
    with PostgresSaver.from_conn_string(postgres_db) as one:
        one.setup()
        drive(small_agent(one), 14, "pg-connection")
    assert "u1" in archived_ids(postgres_db, "pg-connection")
    pool = open_pool(postgres_db, max_size=2)
    try:
        agent = small_agent(PostgresSaver(pool))
        drive(agent, 14, "pg-pool")
        del agent
        gc.collect()
        with pool.connection() as conn:  # the pool is the saver's: still open
            conn.execute("SELECT 1")
    finally:
        pool.close()
    assert "u1" in archived_ids(postgres_db, "pg-pool")
    assert events_of(postgres_db, "pg-pool")


@pytest.mark.slow
def test_in_memory_without_a_database_or_when_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for saver in (None, InMemorySaver(), "memory://", "sqlite:///:memory:"):
        assert isinstance(strategy_of(small_agent(saver)).archive, InMemoryArchive)
    # An archive passed in wins; the event log still goes to the database.
    url = f"sqlite:///{tmp_path}/s.sqlite"
    mine = InMemoryArchive()
    agent = small_agent(url, archive=mine)
    drive(agent, 14)
    assert strategy_of(agent).archive is mine and mine.get("t", "u1") is not None
    assert archived_ids(url, "t") == [] and events_of(url, "t")
    # A saver whose database this package cannot share: in memory, and said so.
    with caplog.at_level(logging.WARNING, logger="langgraph_ctx.storage"):
        small_agent(Elsewhere())
    assert "Elsewhere" in caplog.text and "archive=" in caplog.text


class Elsewhere(BaseCheckpointSaver[Any]):
    """A saver of another backend (Redis, say): its database is not one we can share."""


@pytest.mark.slow
def test_stores_close_with_the_graph(tmp_path: Path) -> None:
    agent = small_agent(f"sqlite:///{tmp_path}/s.sqlite")
    archive = strategy_of(agent).archive
    drive(agent, 1)
    del agent
    gc.collect()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        archive._conn.execute("SELECT 1")


# -- inspect shows every kind of session ------------------------------------------


@pytest.mark.slow
def test_inspect_reads_the_ledger_when_the_table_never_heard_of_the_thread(url: str) -> None:
    # A graph compiled by hand, no event sink, in a database that has the tables.
    model = ScriptedChatModel(default="Noted.", report_usage=False)
    builder = build_context_agent(model, think=False, budget=Budget.for_window(6_000))
    with checkpointer_from_url(url) as saver:
        graph = builder.compile(checkpointer=saver)
        drive(graph, 14, "hand-made")
        ledger = graph.get_state({"configurable": {"thread_id": "hand-made"}}).values[
            "context_ledger"
        ]
    assert any(e["kind"] == "compression" for e in ledger)
    seen = inspect_session(url, "hand-made")
    assert seen.events_source == "checkpoint ledger"
    assert sum(seen.event_counts.values()) == len(ledger)
    assert len(seen.compressions) == sum(e["kind"] == "compression" for e in ledger) >= 1
    assert "events from checkpoint ledger" in format_inspection(seen)


@pytest.mark.slow
def test_inspect_reads_the_event_table_of_a_default_session(url: str) -> None:
    agent = small_agent(url)
    drive(agent, 30)
    ledger = agent.get_state(CONFIG).values["context_ledger"]
    logged = events_of(url, "t")
    assert len(logged) > len(ledger)  # the ledger keeps the latest only
    seen = inspect_session(url, "t")
    assert seen.events_source == "event table"
    assert sum(seen.event_counts.values()) == len(logged)
    assert len(seen.compressions) == sum(e["kind"] == "compression" for e in logged) >= 1


@pytest.mark.slow
def test_inspect_merges_a_ledger_the_table_only_partly_holds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.sqlite"
    builder = build_context_agent(
        ScriptedChatModel(default="Noted."), think=False, budget=Budget.for_window(6_000)
    )
    with checkpointer_from_url(url) as saver:
        drive(builder.compile(checkpointer=saver), 14, "t")
    agent = small_agent(url)  # a sink from here on: the table has the later events only
    drive(agent, 2)
    ledger = agent.get_state(CONFIG).values["context_ledger"]
    logged = events_of(url, "t")
    assert logged and len(logged) < len(ledger)
    seen = inspect_session(url, "t")
    assert seen.events_source == "event table and checkpoint ledger"
    assert sum(seen.event_counts.values()) == len({e["seq"] for e in [*logged, *ledger]})


# -- sub-agents --------------------------------------------------------------------


@tool
def read_page(page: int) -> str:
    """One page of the manifest."""
    return f"Page {page}: " + " ".join(f"crate {page}-{k} holds part P{k:03d}." for k in range(60))


@pytest.mark.slow
def test_sub_agents_archive_where_the_parent_does(url: str) -> None:
    calls = [
        AIMessage("", tool_calls=[{"name": "read_page", "args": {"page": p}, "id": f"r{p}"}])
        for p in range(8)
    ]
    child = SubAgentSpec(
        name="reader",
        description="reads manifest pages",
        system_prompt="You read pages.",
        kind="tool",
        tools=[read_page],
        model=ScriptedChatModel(responses=[*calls, AIMessage("All pages read.")]),
        budget=Budget.for_window(3_000),
        max_steps=20,
    )
    subs = SubAgents([child])
    delegate = {"name": "delegate", "id": "d1", "args": {"agent": "reader", "task": "Read."}}
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[delegate]), "Done."])
    agent = create_context_agent(
        model, [subs.tool()], checkpointer=url, always_include=["delegate"], think=False
    )
    assert subs.archive is strategy_of(agent).archive  # the parent's, in its database
    agent.invoke({"messages": [HumanMessage("Read the manifest.")]}, CONFIG)
    with archive_from_url(url) as archive:  # type: ignore[attr-defined]
        assert archive.list("t") == []  # the parent compressed nothing...
        namespaces = _namespaces(url)
        assert namespaces and all(ns for ns in namespaces)  # ...the child did, in its own
        kept = archive.list("t", namespace=namespaces[0])
    assert any(m.type == "tool" and m.text.startswith("Page 0: ") for m in kept)


def _namespaces(url: str) -> list[str]:
    sql = "SELECT DISTINCT namespace FROM lgctx_archive WHERE thread_id = 't'"
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return [str(ns) for (ns,) in conn.execute(sql)]
    import psycopg

    with psycopg.connect(url) as conn:
        return [str(ns) for (ns,) in conn.execute(sql)]


@pytest.mark.slow
async def test_an_async_saver_from_a_url_keeps_the_archive_in_its_database(url: str) -> None:
    async with async_checkpointer_from_url(url) as saver:
        agent = small_agent(saver, recall=True)
        for i in range(14):
            await agent.ainvoke({"messages": [turn(i)]}, CONFIG)
        assert strategy_of(agent).original("t", "u1").text == turn(1).text
    assert "u1" in archived_ids(url, "t") and events_of(url, "t")
