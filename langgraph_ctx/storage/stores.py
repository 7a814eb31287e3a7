"""The archive and the event log beside a checkpointer: a session in one database.

A session is its checkpoints, the originals its strategy archived and its full
event log. :func:`stores_beside` puts the last two in the checkpointer's own
database, so that a process restart keeps all three: what recall, ``glimpse``
and ``original()`` return after it is what they returned before.
:func:`~langgraph_ctx.agent.create_context_agent` calls it for the checkpointer
it is given (a URL or a saver) unless ``archive=`` and ``events=`` are both given.

What can be reached safely, and how:

- ``SqliteSaver`` on a file: :class:`~langgraph_ctx.storage.archive.SQLiteArchive`
  and :class:`~langgraph_ctx.storage.events.SQLiteEventSink` on that file, each on
  a connection of its own. Not the saver's connection: our writes are
  ``BEGIN IMMEDIATE`` transactions, which must not mix with the saver's own; SQLite
  serializes the writers of one file (WAL, with a busy timeout).
- ``PostgresSaver`` on a pool: :class:`~langgraph_ctx.storage.postgres.PostgresArchive`
  and :class:`~langgraph_ctx.storage.postgres.PostgresEventSink` on that pool: each
  statement checks out a connection of its own.
- ``PostgresSaver`` on one connection (``PostgresSaver.from_conn_string``): the same,
  on that connection, under the saver's own ``lock``, which the saver holds around
  every use of it: psycopg serves one transaction at a time on a connection.
- ``InMemorySaver``, or SQLite's ``:memory:``: ``None``. The checkpoints die with
  the process, and the archive and event log stay in memory with them; for an
  ``InMemorySaver`` the archive is the saver's own (:func:`memory_archive_of`), so a
  second graph on the same saver reads what the first archived.
- An async saver from ``async_checkpointer_from_url``
  (:mod:`~langgraph_ctx.storage.checkpointers`): the same tables, on connections
  of their own opened from its URL (the SQLite file, or a small PostgreSQL pool;
  migrated when the saver was opened). Not the saver's: its connection serves one
  event loop, while ``glimpse`` and a sync ``invoke`` read the archive from other
  threads.
- Any other saver (an async saver made elsewhere, whose URL is not known here;
  other backends): ``None``, with a warning naming ``archive=`` and ``events=``.

For the savers above it, the package's tables are migrated into the database
first when they are not up to date (through the saver's own connection for
PostgreSQL). Stores opened
here are the caller's to close (:meth:`SessionStores.close`); a pool or a
connection they share stays the saver's.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage._base import Closing
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive, SQLiteArchive
from langgraph_ctx.storage.checkpointers import opened_from
from langgraph_ctx.storage.delta_cache import DeltaReadCache
from langgraph_ctx.storage.events import SQLiteEventSink
from langgraph_ctx.storage.migrations import LOCK_TIMEOUT, load_migrations
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink
from langgraph_ctx.storage.urls import parse_url

__all__ = ["SessionStores", "memory_archive_of", "stores_beside"]

logger = logging.getLogger("langgraph_ctx.storage")


@dataclass
class SessionStores(Closing):
    """The archive and the event log in a checkpointer's database."""

    archive: MessageArchive
    events: SQLiteEventSink | PostgresEventSink
    where: str
    """Which database, for messages: ``SQLite file '/path'``, or the saver's PostgreSQL."""

    def close(self) -> None:
        for store in (self.archive, self.events):
            close = getattr(store, "close", None)
            if close is not None:
                close()


def stores_beside(saver: BaseCheckpointSaver[Any]) -> SessionStores | None:
    """The archive and the event log in ``saver``'s database, or ``None`` where the
    session lives in memory or the database cannot be reached (see the module doc)."""
    inner = saver.saver if isinstance(saver, DeltaReadCache) else saver
    if isinstance(inner, InMemorySaver):
        return None
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(inner, SqliteSaver):
        path = _sqlite_file(inner)
        return None if path is None else _sqlite(path)
    # A PostgresSaver exists only if its module was imported: never import psycopg here.
    postgres = sys.modules.get("langgraph.checkpoint.postgres")
    if postgres is not None and isinstance(inner, postgres.PostgresSaver):
        return _postgres(inner)
    url = opened_from(inner)
    if url is not None:
        return _from_url(url)
    logger.warning(
        "the archive and the event log stay in memory: %s's database is not one this "
        "package can share (a restart loses what compression archived); pass archive= "
        "and events= (langgraph_ctx.storage.checkpointers.archive_from_url, SQLiteEventSink, "
        "PostgresEventSink) to keep them",
        type(inner).__name__,
    )
    return None


_MEMORY_ARCHIVES: weakref.WeakKeyDictionary[InMemorySaver, InMemoryArchive] = (
    weakref.WeakKeyDictionary()
)
_MEMORY_LOCK = threading.Lock()


def memory_archive_of(saver: BaseCheckpointSaver[Any]) -> InMemoryArchive | None:
    """The in-memory archive that lives as long as ``saver``, an ``InMemorySaver``
    (``None`` for any other saver). Every graph built on the same saver gets the same
    archive: a new graph on the checkpoints of the old one (a "restart" within a
    process) must find what the old one archived, as it finds its checkpoints."""
    inner = saver.saver if isinstance(saver, DeltaReadCache) else saver
    if not isinstance(inner, InMemorySaver):
        return None
    with _MEMORY_LOCK:
        archive = _MEMORY_ARCHIVES.get(inner)
        if archive is None:
            archive = _MEMORY_ARCHIVES[inner] = InMemoryArchive()
        return archive


def _from_url(url: str) -> SessionStores | None:
    """Stores of their own on the database ``url`` names (migrated when it was opened)."""
    db = parse_url(url)
    if db.kind == "memory" or db.path == ":memory:":
        return None
    if db.kind == "sqlite":
        return _sqlite(db.path)
    archive = PostgresArchive(db.url)
    try:
        return SessionStores(archive, PostgresEventSink(db.url), db.redacted)
    except BaseException:
        archive.close()
        raise


def _sqlite(path: str) -> SessionStores:
    archive = SQLiteArchive(path)
    try:
        return SessionStores(archive, SQLiteEventSink(path), f"SQLite file {path!r}")
    except BaseException:
        archive.close()
        raise


def _sqlite_file(saver: Any) -> str | None:
    """The file behind a ``SqliteSaver``'s connection (``None``: an in-memory database)."""
    try:
        with saver.lock:
            rows = saver.conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.Error as exc:  # closed, or made in another thread
        raise ConfigurationError(
            "checkpointer",
            f"cannot read which file this SqliteSaver's connection is on ({exc}); "
            "pass archive= and events=, or the checkpointer as a 'sqlite:///path' URL",
        ) from exc
    return next((str(file) for _, name, file in rows if name == "main" and file), None)


def _postgres(saver: Any) -> SessionStores:
    from psycopg_pool import ConnectionPool

    from langgraph_ctx.storage._pg_migrations import migrate_on, up_to_date

    conn = saver.conn
    lock = None if isinstance(conn, ConnectionPool) else saver.lock
    found = load_migrations("postgres")
    with _checked_out(conn, lock) as c:
        if not up_to_date(c, found):
            where = f"the PostgresSaver's database {c.info.dbname!r}"
            migrate_on(c, found, where=where, shown=where, timeout=LOCK_TIMEOUT)
        where = f"PostgreSQL database {c.info.dbname!r}"
    return SessionStores(
        PostgresArchive(conn, lock=lock), PostgresEventSink(conn, lock=lock), where
    )


@contextmanager
def _checked_out(conn: Any, lock: Any) -> Iterator[Any]:
    """One connection of the saver's: from its pool, or its own under its lock."""
    if lock is None:
        with conn.connection() as c:
            yield c
    else:
        with lock:
            yield conn
