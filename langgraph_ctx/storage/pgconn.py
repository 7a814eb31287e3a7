"""PostgreSQL plumbing: a start-up probe that fails clearly, pools that survive restarts, locks.

psycopg is the optional ``postgres`` extra, so nothing here imports it until a
function runs: the core imports without it.

Every connection gets the settings LangGraph's savers need, each one for a
failure seen on these machines:

- ``autocommit=True``: the savers never commit. Without it, checkpoints sit in
  an open transaction and are lost on rollback; ``setup()`` also runs
  ``CREATE INDEX CONCURRENTLY``, which refuses to run inside a transaction.
- ``prepare_threshold=None``: no server-side prepared statements, which
  PgBouncer in transaction mode cannot route to the right backend.
- ``row_factory=dict_row``: how the savers read rows.

Pools check each connection as it is checked out
(``check=ConnectionPool.check_connection``): after a server restart the dead
connections are replaced, and the next step succeeds instead of failing.

Advisory locks are taken by polling ``pg_try_advisory_lock`` rather than by
blocking in ``pg_advisory_lock``: a session blocked in that call keeps a
snapshot open, and ``CREATE INDEX CONCURRENTLY`` in the lock holder's
``setup()`` waits for every older snapshot, so a blocking waiter would
deadlock with the holder.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langgraph_ctx.errors import ConfigurationError, ContextRunError
from langgraph_ctx.storage._redact import redact_url, scrub

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import DictRow
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for the server at start-up before calling it unreachable."""

MIGRATIONS_LOCK = (0x6C676D31, "langgraph_ctx.migrations")
"""Advisory lock key (class, name) held while migrating; the class is ``'lgm1'``."""
THREADS_LOCK_CLASS = 0x6C677431
"""Advisory lock class (``'lgt1'``) of per-thread locks, keyed by ``hashtext(thread_id)``."""


DRIVER_MODULES = ("psycopg", "psycopg_pool", "langgraph.checkpoint.postgres")
"""What the ``postgres`` extra installs, and every PostgreSQL path here imports."""


def require_driver(field: str = "database_url") -> None:
    """Refuse a ``postgresql://`` URL, saying what to install, when the extra is missing.

    Without it the first import deep inside a saver or a pool fails with a bare
    ``ModuleNotFoundError`` that says nothing of the extra.
    """
    missing = [name for name in DRIVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigurationError(
            field,
            f"a postgresql:// URL needs the 'postgres' extra ({', '.join(missing)} not "
            'installed): pip install ".[postgres]" in a clone of langgraph-ctx (it is not '
            "on a package index), or langgraph-checkpoint-postgres 'psycopg[binary,pool]'",
        )


def connection_kwargs() -> dict[str, Any]:
    """The connection settings LangGraph's Postgres savers require (see the module doc)."""
    from psycopg.rows import dict_row

    return {"autocommit": True, "prepare_threshold": None, "row_factory": dict_row}


def describe(url: str) -> str:
    """``database 'app' on host 'db:5432' as user 'bob'``, from the URL alone."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info: Mapping[str, Any] = conninfo_to_dict(url)
    except Exception:  # malformed: the redacted URL is all we can say
        return f"database at {redact_url(url)!r}"
    host = str(info.get("host") or "the default local socket")
    if info.get("port"):
        host = f"{host}:{info['port']}"
    dbname = info.get("dbname") or info.get("user") or "(default)"
    user = f" as user {info['user']!r}" if info.get("user") else ""
    return f"database {dbname!r} on host {host!r}{user}"


def connect_error(url: str, exc: BaseException, field: str) -> ConfigurationError:
    """A :class:`ConfigurationError` for a failed connection, naming host and database."""
    # libpq does not echo passwords, but a parse error may echo part of the URL.
    reason = scrub(" ".join(str(exc).split()), url)
    return ConfigurationError(
        field, f"cannot connect to {describe(url)} ({redact_url(url)}): {reason}"
    )


@contextmanager
def _clear_errors(url: str, field: str) -> Iterator[None]:
    import psycopg

    try:
        yield
    except psycopg.Error as exc:  # a pool's PoolTimeout is one too
        raise connect_error(url, exc, field) from None


def connect(url: str, *, field: str = "database_url") -> psycopg.Connection[DictRow]:
    """One connection with the saver settings, or a clear :class:`ConfigurationError`."""
    require_driver(field)
    import psycopg

    with _clear_errors(url, field):
        return psycopg.Connection.connect(url, **connect_kwargs())


async def aconnect(url: str, *, field: str = "database_url") -> psycopg.AsyncConnection[DictRow]:
    """The async twin of :func:`connect`."""
    require_driver(field)
    import psycopg

    with _clear_errors(url, field):
        return await psycopg.AsyncConnection.connect(url, **connect_kwargs())


def connect_kwargs() -> dict[str, Any]:
    """:func:`connection_kwargs` plus the start-up timeout, for a direct connection."""
    return {"connect_timeout": int(CONNECT_TIMEOUT), **connection_kwargs()}


def pool_kwargs(url: str, *, max_size: int, connection_class: type[Any]) -> dict[str, Any]:
    """Settings of the pools: checked on checkout, opened by the caller (see the module doc)."""
    return {
        "conninfo": url,
        "connection_class": connection_class,
        "kwargs": connection_kwargs(),
        "min_size": 1,
        "max_size": max_size,
        "name": "langgraph-ctx",
        "open": False,
    }


def open_pool(
    url: str, *, max_size: int = 10, field: str = "database_url"
) -> ConnectionPool[psycopg.Connection[DictRow]]:
    """An open pool, after a probe connection proved the URL works."""
    import psycopg
    from psycopg.rows import DictRow
    from psycopg_pool import ConnectionPool

    connect(url, field=field).close()
    pool: ConnectionPool[psycopg.Connection[DictRow]] = ConnectionPool(
        check=ConnectionPool.check_connection,
        **pool_kwargs(url, max_size=max_size, connection_class=psycopg.Connection[DictRow]),
    )
    with _clear_errors(url, field):  # a pool that does not fill in time closes itself
        pool.open(wait=True, timeout=CONNECT_TIMEOUT)
    return pool


async def open_async_pool(
    url: str, *, max_size: int = 10, field: str = "database_url"
) -> AsyncConnectionPool[psycopg.AsyncConnection[DictRow]]:
    """The async twin of :func:`open_pool`."""
    import psycopg
    from psycopg.rows import DictRow
    from psycopg_pool import AsyncConnectionPool

    await (await aconnect(url, field=field)).close()
    pool: AsyncConnectionPool[psycopg.AsyncConnection[DictRow]] = AsyncConnectionPool(
        check=AsyncConnectionPool.check_connection,
        **pool_kwargs(url, max_size=max_size, connection_class=psycopg.AsyncConnection[DictRow]),
    )
    with _clear_errors(url, field):
        await pool.open(wait=True, timeout=CONNECT_TIMEOUT)
    return pool


def try_lock(conn: psycopg.Connection[Any], klass: int, name: str) -> bool:
    """Take the session-level advisory lock ``(klass, hashtext(name))`` if it is free."""
    row = conn.execute(
        "SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS ok", (klass, name)
    ).fetchone()
    return bool(_first(row))


def lock(conn: psycopg.Connection[Any], klass: int, name: str, *, timeout: float | None) -> bool:
    """Poll :func:`try_lock` until it succeeds (True) or ``timeout`` seconds pass (False)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.01
    while not try_lock(conn, klass, name):
        if deadline is not None and time.monotonic() >= deadline:
            return False
        pause = delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic()))
        time.sleep(pause)
        delay = min(delay * 2, 0.1)
    return True


def unlock(conn: psycopg.Connection[Any], klass: int, name: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (klass, name))


def _first(row: Any) -> Any:
    if row is None:
        raise ContextRunError("PostgreSQL returned no row")
    return next(iter(row.values())) if isinstance(row, Mapping) else row[0]
