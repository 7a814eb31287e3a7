"""Checkpointers from one URL, sync and async.

::

    with checkpointer_from_url("postgresql://app:secret@db:5432/agents") as saver:
        graph = pipeline.attach(builder).compile(checkpointer=saver)

    async with async_checkpointer_from_url(url) as saver:   # for ainvoke / astream
        ...

=====================  =====================================================
``memory://``          ``InMemorySaver``: tests, throw-away sessions.
``sqlite:///path``     ``SqliteSaver`` / ``AsyncSqliteSaver`` on that file.
``None``               the same, on :func:`~langgraph_ctx.storage.urls.default_url`
                       (``$LANGGRAPH_CTX_HOME`` or the user's data directory).
``postgresql://...``   ``PostgresSaver`` / ``AsyncPostgresSaver`` on a psycopg
                       pool with the settings they need
                       (:mod:`langgraph_ctx.storage._pgconn` says why each one).
=====================  =====================================================

Sub-agent subgraphs compiled without a checkpointer of their own use their
parent's, so one saver covers a whole graph.

A bad URL, an unreachable server or wrong credentials raise
:class:`~langgraph_ctx.errors.ConfigurationError` on entry, naming the host and
database with the password redacted: a misconfigured deployment fails at
start-up, not on its first user's first message.

``setup=True`` (the default) applies the package's migrations and LangGraph's
own setup under a lock (:func:`~langgraph_ctx.storage.migrations.migrate`), so many
processes may start at once. Pass ``setup=False`` where a deploy step runs
``langgraph-ctx migrate`` and the application's role has no DDL rights.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.urls import DatabaseURL, parse_url


@contextmanager
def checkpointer_from_url(
    url: str | None = None, *, setup: bool = True, max_connections: int = 10
) -> Iterator[BaseCheckpointSaver[Any]]:
    """A LangGraph checkpointer for ``url``, closed on exit.

    Args:
        url: see the module docs; ``None`` for the embedded SQLite default.
        setup: apply migrations (ours and LangGraph's) first.
        max_connections: the PostgreSQL pool's size.
    """
    db = _prepare(url, setup)
    if db.kind == "memory":
        yield InMemorySaver()
    elif db.kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        # check_same_thread=False: SqliteSaver serializes access with its own lock.
        conn = sqlite3.connect(db.path, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        from langgraph_ctx.storage._pgconn import open_pool

        pool = open_pool(db.url, max_size=max_connections)
        try:
            yield PostgresSaver(pool)
        finally:
            pool.close()


@asynccontextmanager
async def async_checkpointer_from_url(
    url: str | None = None, *, setup: bool = True, max_connections: int = 10
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The async twin of :func:`checkpointer_from_url`, for ``ainvoke`` and ``astream``."""
    db = await asyncio.to_thread(_prepare, url, setup)
    if db.kind == "memory":
        yield InMemorySaver()
    elif db.kind == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        conn = await aiosqlite.connect(db.path)
        try:
            yield AsyncSqliteSaver(conn)
        finally:
            await conn.close()
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        from langgraph_ctx.storage._pgconn import open_async_pool

        pool = await open_async_pool(db.url, max_size=max_connections)
        try:
            yield AsyncPostgresSaver(pool)
        finally:
            await pool.close()


def _prepare(url: str | None, setup: bool) -> DatabaseURL:
    """Parse, then migrate (which also proves the server reachable) or just check."""
    db = parse_url(url)
    if db.kind == "sqlite" and db.path != ":memory:":
        if setup:
            migrate(db.url)
        elif not Path(db.path).exists():
            raise ConfigurationError(
                "database_url", f"no SQLite database at {db.path!r} (and setup=False)"
            )
    elif db.kind == "postgres" and setup:
        migrate(db.url)
    return db
