"""The backends the storage conformance suite runs, each as one factory.

As in LangGraph's ``langgraph-checkpoint-conformance`` (a saver is registered as a
factory that yields a fresh one and cleans up after), a backend here is a factory:
:func:`open_backend` opens a fresh store of one kind on fresh storage and hands back a
:class:`Backend`, which also knows how to open the same storage again (as another
process would) and where the store's coroutines must run. The test modules ask for
the role they check (archive, event sink, memory index) and run once per kind.

Kinds, per role:

- ``memory``: the in-process store (``InMemoryArchive``, ``LexicalIndex``); not
  durable, and there is no in-memory event sink (events need a database).
- ``sqlite``: a file in the test's temporary directory.
- ``postgres``: a pool the store opens from a URL (a fresh database per test).
- ``postgres-conn``: one sync connection shared under a lock, as a
  ``PostgresSaver.from_conn_string`` saver shares its own.
- ``postgres-apool``: an ``AsyncConnectionPool`` on an event loop of its own: the
  async methods run on that loop, the sync ones are called from other threads and
  hop onto it (the documented way to use a store built on an async pool).

Adding a backend is one branch in :func:`_open` and its name in the lists below.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import psycopg
import pytest

from langgraph_ctx.retrieval.index import LexicalIndex
from langgraph_ctx.storage import pgconn
from langgraph_ctx.storage.archive import InMemoryArchive, SQLiteArchive
from langgraph_ctx.storage.events import SQLiteEventSink
from langgraph_ctx.storage.memory_index import PostgresMemoryIndex, SQLiteMemoryIndex
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink

Role = Literal["archive", "events", "memory_index"]
S = TypeVar("S")
T = TypeVar("T")

POSTGRES = ["postgres", "postgres-conn", "postgres-apool"]
DURABLE = ["sqlite", *POSTGRES]
KINDS: dict[Role, list[str]] = {
    "archive": ["memory", *DURABLE],
    "events": DURABLE,  # no in-memory event sink exists: the ledger in state is not one
    "memory_index": ["memory", *DURABLE],
}

_SQLITE: dict[Role, Callable[[str], Any]] = {
    "archive": SQLiteArchive,
    "events": SQLiteEventSink,
    "memory_index": SQLiteMemoryIndex,
}
_PG: dict[Role, Callable[..., Any]] = {
    "archive": PostgresArchive,
    "events": PostgresEventSink,
    "memory_index": PostgresMemoryIndex,
}
_TABLES: dict[Role, str] = {
    "archive": "lgctx_archive",
    "events": "lgctx_events",
    "memory_index": "lgctx_memory_index",
}


@dataclass
class Backend(Generic[S]):
    """One store under test, and what a test needs to know about where it lives."""

    kind: str
    store: S
    durable: bool
    reopen: Callable[[], AbstractContextManager[S]]
    """Another store on the same storage, as a restarted process would open it."""
    rows: Callable[[], int]
    """How many rows the role's table holds (every thread): duplicates show here."""
    run: Callable[[Coroutine[Any, Any, Any]], Any] = field(default=asyncio.run)
    """Runs a coroutine of the store's async methods on the loop they belong to."""
    url: str = ""
    """The database as ``langgraph-ctx migrate`` names it (durable backends)."""


def open_backend(
    role: Role, kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AbstractContextManager[Backend[Any]]:
    return _open(role, kind, request, tmp_path)


@contextmanager
def _open(
    role: Role, kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Backend[Any]]:
    if kind == "memory":
        store: Any = InMemoryArchive() if role == "archive" else LexicalIndex()
        yield Backend(kind, store, False, reopen=_no_reopen, rows=_no_rows)
    elif kind == "sqlite":
        path = str(tmp_path / f"{role}.sqlite")
        make = _SQLITE[role]

        @contextmanager
        def reopen() -> Iterator[Any]:
            with make(path) as again:
                yield again

        def rows() -> int:
            with closing(sqlite3.connect(path)) as conn:
                (n,) = conn.execute(f"SELECT count(*) FROM {_TABLES[role]}").fetchone()
            return int(n)

        with reopen() as store:
            yield Backend(kind, store, True, reopen=reopen, rows=rows, url=f"sqlite:///{path}")
    else:
        url = str(request.getfixturevalue("postgres_db"))
        migrate(url)
        with _postgres(role, kind, url) as backend:
            yield backend


def _no_reopen() -> AbstractContextManager[Any]:
    raise AssertionError("an in-memory store has no storage to reopen")


def _no_rows() -> int:
    raise AssertionError("an in-memory store has no table to count")


@contextmanager
def _postgres(role: Role, kind: str, url: str) -> Iterator[Backend[Any]]:
    make = _PG[role]

    def rows() -> int:
        with psycopg.connect(url) as conn:
            row = conn.execute(f"SELECT count(*) FROM {_TABLES[role]}").fetchone()  # type: ignore[arg-type]
        return int(row[0]) if row else 0

    @contextmanager
    def own_pool() -> Iterator[Any]:
        with make(url, max_size=4) as store:
            yield store

    @contextmanager
    def one_connection() -> Iterator[Any]:
        with pgconn.connect(url) as conn:
            yield make(conn, lock=threading.Lock())

    if kind == "postgres":
        with own_pool() as store:
            yield Backend(kind, store, True, reopen=own_pool, rows=rows, url=url)
    elif kind == "postgres-conn":
        with one_connection() as store:
            yield Backend(kind, store, True, reopen=one_connection, rows=rows, url=url)
    elif kind == "postgres-apool":
        with _LoopThread() as loop:

            @contextmanager
            def async_pool() -> Iterator[Any]:
                pool, store = loop.call(_on_async_pool(make, url))
                try:
                    yield store
                finally:
                    loop.call(pool.close())

            with async_pool() as store:
                yield Backend(
                    kind, store, True, reopen=async_pool, rows=rows, run=loop.call, url=url
                )
    else:
        raise AssertionError(f"unknown backend kind {kind!r}")


async def _on_async_pool(make: Callable[..., Any], url: str) -> tuple[Any, Any]:
    # Built on the loop that serves it: the store remembers it for its sync methods.
    pool = await pgconn.open_async_pool(url, max_size=4)
    return pool, make(pool)


class _LoopThread:
    """An event loop running in a thread of its own, for stores on an async pool."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def call(self, coro: Awaitable[T]) -> T:
        async def wrapped() -> T:
            return await coro

        return asyncio.run_coroutine_threadsafe(wrapped(), self.loop).result()

    def __enter__(self) -> _LoopThread:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()
