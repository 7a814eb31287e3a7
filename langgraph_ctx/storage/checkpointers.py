"""Stores from one URL: LangGraph checkpointers (sync and async) and the message archive.

This is the one place that opens a checkpointer from a URL: the prebuilt
agent, the demo and ``inspect`` all come through here, so every connection is
closed on exit and migrated first (unless ``setup=False``, as ``inspect``,
which only reads, passes).

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
                       (:mod:`langgraph_ctx.storage.pgconn` says why each one).
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
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage import pgconn
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive, SQLiteArchive
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.postgres import PostgresArchive
from langgraph_ctx.storage.retaining import with_retention
from langgraph_ctx.storage.retention import KeepCheckpoints, check_keep, resolve_keep
from langgraph_ctx.storage.urls import DatabaseURL, parse_url

__all__ = [
    "archive_from_url",
    "async_checkpointer_from_url",
    "checkpointer_from_url",
    "opened_from",
]

_URLS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""The URL each async saver opened here came from (see :func:`opened_from`)."""


def opened_from(saver: object) -> str | None:
    """The URL :func:`async_checkpointer_from_url` opened ``saver`` from, else ``None``.

    An async saver's connection serves one event loop, while the archive is also
    read from other threads (``glimpse``, a sync ``invoke``): what shares its
    database opens connections of its own from this URL."""
    try:
        return _URLS.get(saver)
    except TypeError:  # not weak-referenceable: not one of ours
        return None


@contextmanager
def checkpointer_from_url(
    url: str | None = None,
    *,
    setup: bool = True,
    max_connections: int = 10,
    keep_checkpoints: KeepCheckpoints = "default",
) -> Iterator[BaseCheckpointSaver[Any]]:
    """A LangGraph checkpointer for ``url``, closed on exit.

    Args:
        url: see the module docs; ``None`` for the embedded SQLite default.
        setup: apply migrations (ours and LangGraph's) first.
        max_connections: the PostgreSQL pool's size.
        keep_checkpoints: the latest checkpoints each thread keeps
            (:mod:`~langgraph_ctx.storage.retention`): a number, ``None`` or
            ``"all"`` for every one, ``"default"`` for
            :data:`~langgraph_ctx.storage.retention.DEFAULT_KEEP` on SQLite and
            all on PostgreSQL. ``memory://`` keeps all.
    """
    keep = check_keep(keep_checkpoints)
    db = _prepare(url, setup)
    keep = resolve_keep(keep, db.kind)
    if db.kind == "memory":
        yield InMemorySaver()
    elif db.kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        # check_same_thread=False: SqliteSaver serializes access with its own lock.
        conn = sqlite3.connect(db.path, check_same_thread=False)
        try:
            yield with_retention(SqliteSaver(conn), keep)
        finally:
            conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        pool = pgconn.open_pool(db.url, max_size=max_connections)
        try:
            yield with_retention(PostgresSaver(pool), keep)
        finally:
            pool.close()


@asynccontextmanager
async def async_checkpointer_from_url(
    url: str | None = None,
    *,
    setup: bool = True,
    max_connections: int = 10,
    keep_checkpoints: KeepCheckpoints = "default",
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The async twin of :func:`checkpointer_from_url`, for ``ainvoke`` and ``astream``."""
    keep = check_keep(keep_checkpoints)
    db = await asyncio.to_thread(_prepare, url, setup)
    keep = resolve_keep(keep, db.kind)
    if db.kind == "memory":
        yield InMemorySaver()
    elif db.kind == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        conn = await aiosqlite.connect(db.path)
        try:
            saver = with_retention(AsyncSqliteSaver(conn), keep)
            _URLS[saver] = db.url
            yield saver
        finally:
            await conn.close()
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        pool = await pgconn.open_async_pool(db.url, max_size=max_connections)
        try:
            async_saver = with_retention(AsyncPostgresSaver(pool), keep)
            _URLS[async_saver] = db.url
            yield async_saver
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
    elif db.kind == "postgres":
        pgconn.require_driver("database_url")
        if setup:
            migrate(db.url)
    return db


def archive_from_url(url: str | None) -> MessageArchive:
    """An archive from a URL; the caller closes it (a ``with`` block does).

    - ``None`` or ``memory://``: :class:`~langgraph_ctx.storage.archive.InMemoryArchive`.
    - ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or
      ``sqlite:///:memory:``: :class:`~langgraph_ctx.storage.archive.SQLiteArchive`.
    - ``postgresql://...``: :class:`~langgraph_ctx.storage.postgres.PostgresArchive` on a
      pool of its own, after applying migrations (needs the ``postgres`` extra).

    Anything else, or a server that cannot be reached, raises
    :class:`ConfigurationError` naming the URL, with any password redacted.
    """
    if url is None or url == "memory://":
        return InMemoryArchive()
    db = parse_url(url, field="archive_url")
    if db.kind == "sqlite":
        return SQLiteArchive(db.path)
    pgconn.connect(db.url, field="archive_url").close()  # fail here, naming the setting
    migrate(db.url)
    return PostgresArchive(db.url)
