"""Checkpointers from a URL, start-up errors, the Postgres archive and event sinks,
scoping between threads, and thread locks."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph

from langgraph_ctx.errors import ConfigurationError, ContextRunError, ThreadBusyError
from langgraph_ctx.state import ContextState, LedgerEntry
from langgraph_ctx.storage.checkpointers import (
    archive_from_url,
    async_checkpointer_from_url,
    checkpointer_from_url,
)
from langgraph_ctx.storage.locks import ThreadLock, arun_exclusive, run_exclusive
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.pgconn import open_async_pool, open_pool
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink
from langgraph_ctx.storage.urls import data_home, default_url


def echo_graph(saver: Any) -> Any:
    def reply(state: ContextState) -> dict[str, Any]:
        last = state["messages"][-1]
        return {"messages": [AIMessage(f"echo: {last.text}", id=f"r-{last.id}")]}

    builder = StateGraph(ContextState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def texts(messages: list[BaseMessage]) -> list[str]:
    return [m.text for m in messages]


# -- checkpointers -------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory://"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/c.sqlite"
    else:
        yield request.getfixturevalue("postgres_db")


SAVERS = {"memory": InMemorySaver, "sqlite": SqliteSaver, "postgresql": PostgresSaver}
ASYNC_SAVERS = {
    "memory": InMemorySaver,
    "sqlite": AsyncSqliteSaver,
    "postgresql": AsyncPostgresSaver,
}


def test_checkpointer_from_url_persists_across_reopen(url: str) -> None:
    with checkpointer_from_url(url) as saver:
        assert isinstance(saver, SAVERS[url.split(":")[0]])  # SQLite: a pruning subclass
        echo_graph(saver).invoke({"messages": [HumanMessage("one", id="h1")]}, config("t"))
        if url == "memory://":
            return
    with checkpointer_from_url(url) as saver:
        graph = echo_graph(saver)
        graph.invoke({"messages": [HumanMessage("two", id="h2")]}, config("t"))
        got = texts(graph.get_state(config("t")).values["messages"])
    assert got == ["one", "echo: one", "two", "echo: two"]


async def test_async_checkpointer_from_url(url: str) -> None:
    async with async_checkpointer_from_url(url) as saver:
        assert isinstance(saver, ASYNC_SAVERS[url.split(":")[0]])
        graph = echo_graph(saver)
        await graph.ainvoke({"messages": [HumanMessage("one", id="h1")]}, config("t"))
        state = await graph.aget_state(config("t"))
    assert texts(state.values["messages"]) == ["one", "echo: one"]


def test_default_is_a_sqlite_file_under_the_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_CTX_HOME", str(tmp_path / "home"))
    assert data_home() == tmp_path / "home"
    assert default_url() == f"sqlite:///{tmp_path}/home/checkpoints.sqlite"
    with checkpointer_from_url(None) as saver:
        assert isinstance(saver, SqliteSaver)
        echo_graph(saver).invoke({"messages": [HumanMessage("x", id="h")]}, config("t"))
    assert (tmp_path / "home" / "checkpoints.sqlite").exists()
    monkeypatch.delenv("LANGGRAPH_CTX_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert data_home() == tmp_path / "xdg" / "langgraph-ctx"


def test_setup_false_requires_an_existing_sqlite_file(tmp_path: Path) -> None:
    absent = f"sqlite:///{tmp_path}/absent.sqlite"
    with (
        pytest.raises(ConfigurationError, match="no SQLite database"),
        checkpointer_from_url(absent, setup=False),
    ):
        pass


def test_a_postgres_url_without_the_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without psycopg the first import deep in a saver raised ModuleNotFoundError.
    from langgraph_ctx.storage import pgconn

    monkeypatch.setattr(pgconn, "DRIVER_MODULES", ("psycopg", "no_such_driver_module"))
    url = "postgresql://app:s3cret@127.0.0.1:1/app"
    for setup in (True, False):
        with (
            pytest.raises(ConfigurationError, match=r"pip install \".\[postgres\]\"") as info,
            checkpointer_from_url(url, setup=setup),
        ):
            pass
        assert info.value.field == "database_url" and "s3cret" not in str(info.value)
    with pytest.raises(ConfigurationError, match=r"no_such_driver_module"):
        PostgresArchive(url)


def test_a_pool_survives_its_connections_being_killed(postgres_db: str) -> None:
    # What a server restart does to a pool's connections (the full restart, stop and
    # start of the server, is in test_crash_resume.py); check= replaces them on checkout.
    with checkpointer_from_url(postgres_db) as saver:
        graph = echo_graph(saver)
        graph.invoke({"messages": [HumanMessage("before", id="h1")]}, config("t"))
        with psycopg.connect(postgres_db, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert killed is not None and killed[0] >= 1
        graph.invoke({"messages": [HumanMessage("after", id="h2")]}, config("t"))
        got = texts(graph.get_state(config("t")).values["messages"])
    assert got == ["before", "echo: before", "after", "echo: after"]


# -- start-up errors -------------------------------------------------------------


def with_path(url: str, dbname: str, user: str | None = None, password: str = "") -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        host = netloc.rsplit("@", 1)[-1]
        netloc = f"{user}:{password}@{host}" if password else f"{user}@{host}"
    return urlunsplit(parts._replace(path="/" + dbname, netloc=netloc))


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("redis://h/0", ["unsupported database URL 'redis://h/0'"]),
        (
            "postgresql://bob:hunter2@db:99999/app",
            ["malformed postgresql:// URL", "bob:***@db:99999", "port must be a number"],
        ),
        (
            "postgresql://bob:hunter2@127.0.0.1:1/ledger",
            [
                "cannot connect to database 'ledger' on host '127.0.0.1:1'",
                "user 'bob'",
                "postgresql://bob:***@127.0.0.1:1/ledger",
                "Connection refused",
            ],
        ),
    ],
)
def test_bad_urls_fail_at_start_up_without_the_password(url: str, words: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info, checkpointer_from_url(url):
        pass
    message = str(info.value)
    assert info.value.field == "database_url"
    assert "hunter2" not in message
    for word in words:
        assert word in message


def test_wrong_credentials_and_missing_database_name_host_and_database(postgres_url: str) -> None:
    # The test server trusts local connections, so an unknown role is what fails login.
    bad_user = with_path(postgres_url, "postgres", user="mallory", password="s3cr%40t")
    with pytest.raises(ConfigurationError) as info, checkpointer_from_url(bad_user):
        pass
    message = str(info.value)
    assert "s3cr" not in message and "mallory:***@" in message
    assert "database 'postgres'" in message and "user 'mallory'" in message
    assert 'role "mallory" does not exist' in message

    missing = with_path(postgres_url, "no_such_db")
    with (
        pytest.raises(ConfigurationError, match=r"database 'no_such_db' on host .*does not exist"),
        checkpointer_from_url(missing, setup=False),
    ):
        pass


async def test_async_start_up_errors_are_the_same() -> None:
    with pytest.raises(ConfigurationError, match=r"127\.0\.0\.1:1"):
        async with async_checkpointer_from_url("postgresql://u:pw@127.0.0.1:1/x"):
            pass


def test_archive_from_url_postgres(postgres_db: str) -> None:
    archive = archive_from_url(postgres_db)
    assert isinstance(archive, PostgresArchive)
    archive.put("t", [HumanMessage("kept", id="m1")], reason="compressed")
    assert texts(archive.list("t")) == ["kept"]
    archive.close()


# -- archive and events ----------------------------------------------------------


@pytest.fixture
def migrated(postgres_db: str) -> str:
    migrate(postgres_db)
    return postgres_db


def entry(seq: int, kind: str = "utilization", **data: Any) -> LedgerEntry:
    return LedgerEntry(seq=seq, kind=kind, node="call_llm", ts=1_700_000_000.25 + seq, data=data)


def rows_of(url: str, sql: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
        return row[0] if row else None


# The archive's and the event sinks' shared contract (idempotence, isolation, order)
# is checked on every backend by the conformance suite, tests/storage/conformance/.


async def test_async_pool_and_sync_pool_paths(migrated: str) -> None:
    pool = await open_async_pool(migrated, max_size=2)
    try:
        archive, events = PostgresArchive(pool), PostgresEventSink(pool)
        await archive.aput("t", [HumanMessage("async", id="m1")], reason="compressed")
        await events.awrite("t", "", [entry(0)])
        assert texts(await archive.alist("t")) == ["async"]
        assert (await archive.aget("t", "m1")) is not None
        assert [e["seq"] for e in await events.alist("t")] == [0]
        # Sync calls from another thread run on the pool's loop; on the loop they refuse.
        assert texts(await asyncio.to_thread(archive.list, "t")) == ["async"]
        with pytest.raises(ContextRunError, match="async pool"):
            archive.list("t")
    finally:
        await pool.close()
    sync_pool = open_pool(migrated, max_size=2)
    try:
        archive = PostgresArchive(sync_pool)
        await archive.aput("t", [HumanMessage("via thread", id="m2")], reason="compressed")
        assert texts(await archive.alist("t")) == ["async", "via thread"]
    finally:
        sync_pool.close()


def test_storage_errors_are_run_errors(migrated: str) -> None:
    with psycopg.connect(migrated, autocommit=True) as conn:
        conn.execute("DROP TABLE lgctx_events")
    with PostgresEventSink(migrated) as events, pytest.raises(ContextRunError, match="event log"):
        events.write("t", "", [entry(0)])


# -- thread locks ------------------------------------------------------------------


def lock_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if kind == "postgres":
        return str(request.getfixturevalue("postgres_db"))
    return "memory://" if kind == "memory" else f"sqlite:///{tmp_path}/l.sqlite"


@pytest.mark.parametrize("kind", ["postgres", "sqlite", "memory"])
def test_thread_lock_excludes_and_times_out(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = lock_url(kind, request, tmp_path)
    with ThreadLock(url, "t1") as held:
        assert held.held
        with pytest.raises(ThreadBusyError, match="'t1' is being run") as info:
            ThreadLock(url, "t1", timeout=0).acquire()
        assert info.value.thread_id == "t1"
        with ThreadLock(url, "t2", timeout=0):  # other threads are free
            pass
        start = time.monotonic()
        with pytest.raises(ThreadBusyError):
            ThreadLock(url, "t1", timeout=0.3).acquire()
        assert time.monotonic() - start >= 0.3
    with ThreadLock(url, "t1", timeout=0):  # released on exit
        pass


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_thread_lock_waits_for_the_holder(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = lock_url(kind, request, tmp_path)
    first = ThreadLock(url, "t")
    first.acquire()
    threading.Timer(0.3, first.release).start()
    start = time.monotonic()
    with ThreadLock(url, "t", timeout=10):
        assert time.monotonic() - start >= 0.25


def test_run_exclusive(postgres_db: str) -> None:
    with checkpointer_from_url(postgres_db) as saver:
        graph = echo_graph(saver)
        run_exclusive(
            graph, {"messages": [HumanMessage("a", id="h1")]}, config("t"), url=postgres_db
        )
        with ThreadLock(postgres_db, "t"), pytest.raises(ThreadBusyError):
            run_exclusive(graph, {"messages": []}, config("t"), url=postgres_db, timeout=0)
        assert len(graph.get_state(config("t")).values["messages"]) == 2
    with pytest.raises(ConfigurationError, match="thread_id"):
        run_exclusive(graph, {}, {"configurable": {}}, url="memory://")


async def test_arun_exclusive() -> None:
    graph = echo_graph(InMemorySaver())
    turn = {"messages": [HumanMessage("a", id="h1")]}
    await arun_exclusive(graph, turn, config("t"), url="memory://")
    async with ThreadLock("memory://", "t"):
        with pytest.raises(ThreadBusyError):
            await arun_exclusive(graph, turn, config("t"), url="memory://", timeout=0)
    assert len((await graph.aget_state(config("t"))).values["messages"]) == 2


def test_parallel_nodes_in_one_step_keep_all_their_events(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    from langgraph_ctx import ContextState, Pipeline, PreflightCheck, call_llm_node
    from langgraph_ctx.storage.events import SQLiteEventSink
    from langgraph_ctx.testing import ScriptedChatModel

    builder = StateGraph(ContextState)
    for name in ("left", "right"):  # both start from the same ledger in the same step
        builder.add_node(name, call_llm_node(ScriptedChatModel(default="ok")))
        builder.add_edge(START, name)
    sink = SQLiteEventSink(tmp_path / "events.sqlite")
    graph = Pipeline([PreflightCheck(nodes=["left", "right"])], events=sink).attach(builder)
    config: Any = {"configurable": {"thread_id": "par"}}
    graph.compile(checkpointer=InMemorySaver()).invoke({"messages": [HumanMessage("hi")]}, config)
    events = sink.list("par")
    assert sorted(e["node"] for e in events) == ["left", "right"]
    assert events[0]["seq"] == events[1]["seq"]  # same number, kept apart by the node
