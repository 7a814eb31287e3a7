"""What the package's PostgreSQL tables share: a pool (or one connection), sync or async.

:class:`PgTable` gives each table four primitives, ``_read``/``_aread`` and
``_write``/``_awrite``, whichever kind of connection it was given (see
:mod:`langgraph_ctx.storage.postgres`), and turns a database error into a
:class:`~langgraph_ctx.errors.ContextRunError` that says which table failed.
psycopg is imported only when one is built.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import threading
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, TypeAlias

from langgraph_ctx.errors import ConfigurationError, ContextRunError
from langgraph_ctx.storage import pgconn
from langgraph_ctx.storage._base import Closing
from langgraph_ctx.storage.urls import parse_url

__all__ = ["Params", "PgTable", "jsonb"]

_dumps = partial(json.dumps, default=str)
Params: TypeAlias = Sequence[Any] | Mapping[str, Any]


class PgTable(Closing):
    """A pool (sync or async) plus the four primitives every table here needs."""

    what = "table"

    def __init__(self, conn: Any, *, max_size: int = 4, lock: threading.Lock | None = None) -> None:
        """``conn``: a ``ConnectionPool``, an ``AsyncConnectionPool``, a URL, or one sync
        ``Connection`` (a ``PostgresStore.from_conn_string`` store's ``conn``). ``lock``:
        for a connection, the lock its owner holds around each use of it (a
        ``PostgresSaver``'s ``lock``), so that a statement of ours never runs inside
        the owner's pipeline or transaction."""
        import psycopg
        from psycopg_pool import AsyncConnectionPool, ConnectionPool

        self._owned = isinstance(conn, str)
        if isinstance(conn, str):
            url, field = self._postgres_url(conn), type(self).__name__
            conn = pgconn.open_pool(url, max_size=max_size, field=field)
        self._pool: ConnectionPool[Any] | None = None
        self._apool: AsyncConnectionPool[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: psycopg.Connection[Any] | None = None
        if isinstance(conn, ConnectionPool):
            self._pool = conn
        elif isinstance(conn, psycopg.Connection):
            # Shared with its owner: one statement at a time, each in its own transaction.
            self._conn, self._conn_lock = conn, lock or threading.Lock()
        elif isinstance(conn, AsyncConnectionPool):
            self._apool = conn
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None  # sync calls need it; async ones do not
        else:
            raise ConfigurationError(
                type(self).__name__,
                f"expected a psycopg pool, connection or URL, got {type(conn).__name__}",
            )

    def _postgres_url(self, url: str) -> str:
        # Parsed like every other URL: a key=value string or a bad port is refused
        # here, with the password hidden, before libpq could echo any of it.
        db = parse_url(url, field=type(self).__name__)
        if db.kind != "postgres":
            raise ConfigurationError(
                type(self).__name__, f"needs a postgresql:// URL, got {db.redacted!r}"
            )
        return db.url

    # -- primitives --------------------------------------------------------

    def _write(self, sql: str, params: Params) -> None:
        self._sync(self._awrite, sql, params, fn=lambda conn: conn.execute(sql, params))

    async def _awrite(self, sql: str, params: Params) -> None:
        if self._apool is None:
            await asyncio.to_thread(self._write, sql, params)
            return
        try:
            async with self._apool.connection() as conn:
                await conn.execute(sql, params)
        except _errors() as exc:
            raise self._failed(exc) from exc

    def _read(self, sql: str, params: Params) -> builtins.list[dict[str, Any]]:
        result: builtins.list[dict[str, Any]] = self._sync(
            self._aread, sql, params, fn=lambda conn: _read(conn, sql, params)
        )
        return result

    async def _aread(self, sql: str, params: Params) -> builtins.list[dict[str, Any]]:
        if self._apool is None:
            return await asyncio.to_thread(self._read, sql, params)
        from psycopg.rows import dict_row

        try:
            async with (
                self._apool.connection() as conn,
                conn.cursor(row_factory=dict_row) as cur,
            ):
                await cur.execute(sql, params)
                rows: builtins.list[dict[str, Any]] = await cur.fetchall()
                return rows
        except _errors() as exc:
            raise self._failed(exc) from exc

    def _sync(self, afn: Any, *args: Any, fn: Any) -> Any:
        if self._conn is not None:
            try:
                with self._conn_lock, self._conn.transaction():
                    return fn(self._conn)
            except _errors() as exc:
                raise self._failed(exc) from exc
        if self._pool is not None:
            try:
                with self._pool.connection() as conn:
                    return fn(conn)
            except _errors() as exc:
                raise self._failed(exc) from exc
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if self._loop is None or running is self._loop:
            raise ContextRunError(
                f"{type(self).__name__} has an async pool: call its async methods "
                "(aput, alist, awrite, ...) from the event loop, or pass a sync pool"
            )
        return asyncio.run_coroutine_threadsafe(afn(*args), self._loop).result()

    def _failed(self, exc: BaseException) -> ContextRunError:
        import psycopg.errors as pg

        missing = (pg.UndefinedTable, pg.UndefinedFunction, pg.UndefinedColumn)
        hint = (
            " (is the database migrated? run `langgraph-ctx migrate`)"
            if isinstance(exc, missing)
            else ""
        )
        return ContextRunError(
            f"{self.what} in PostgreSQL failed: {type(exc).__name__}: {exc}{hint}"
        )

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the pool if this object opened it (never a pool you passed in)."""
        if self._owned and self._pool is not None:
            self._pool.close()


def _read(conn: Any, sql: str, params: Params) -> builtins.list[dict[str, Any]]:
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, params)
        rows: builtins.list[dict[str, Any]] = cur.fetchall()
        return rows


def _errors() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.Error,)


def jsonb(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value, dumps=_dumps)
