"""The migration runner's PostgreSQL side (see :mod:`langgraph_ctx.storage.migrations`).

One connection does the whole run while holding the migrations advisory lock:
our migrations, each in its own transaction, then LangGraph's ``setup()`` on
the same autocommit connection (it runs ``CREATE INDEX CONCURRENTLY``, which
cannot run inside a transaction). A process that finds the lock taken waits,
then finds everything applied and does nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph_ctx.errors import ContextRunError
from langgraph_ctx.storage import _versions as versions
from langgraph_ctx.storage import pgconn
from langgraph_ctx.storage._passages import STEPS
from langgraph_ctx.storage.urls import DatabaseURL

if TYPE_CHECKING:
    import psycopg


def migrate_postgres(
    db: DatabaseURL, found: Sequence[versions.Migration], *, timeout: float
) -> versions.MigrationStatus:
    with pgconn.connect(db.url) as conn:
        return migrate_on(
            conn, found, where=pgconn.describe(db.url), shown=db.redacted, timeout=timeout
        )


def migrate_on(
    conn: psycopg.Connection[Any],
    found: Sequence[versions.Migration],
    *,
    where: str,
    shown: str,
    timeout: float,
) -> versions.MigrationStatus:
    """:func:`migrate_postgres` on a connection already open (autocommit, dict rows, as
    LangGraph's savers need), e.g. a saver's own: ``where`` names the database in errors."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    klass, name = pgconn.MIGRATIONS_LOCK
    if not pgconn.lock(conn, klass, name, timeout=timeout):
        raise ContextRunError(
            f"another process has been migrating {where} for "
            f"{timeout:.0f} s (advisory lock {klass}/{name!r}); is it stuck?"
        )
    try:
        # prepare=False: a file holds several statements, which a connection that
        # prepares statements (PostgresSaver.from_conn_string's) cannot prepare.
        conn.execute(versions.VERSIONS_DDL["postgres"], prepare=False)
        recorded = _recorded(conn)
        versions.refuse_changes(where, found, recorded)
        applied: list[int] = []
        for m in found:
            if m.version in recorded:
                continue
            with conn.transaction():
                conn.execute(m.sql.encode("utf-8"), prepare=False)
                step = STEPS["postgres"].get(m.label)
                if step is not None:  # what SQL cannot do, in the same transaction
                    step(conn)
                conn.execute(
                    "INSERT INTO lgctx_schema_versions (version, name, checksum)"
                    " VALUES (%s, %s, %s)",
                    (m.version, m.name, m.checksum),
                )
            applied.append(m.version)
        PostgresSaver(conn).setup()
        return versions.MigrationStatus(
            shown,
            versions.compare(found, _recorded(conn)),
            _langgraph(conn),
            tuple(applied),
        )
    finally:
        # If the connection is gone, the server released the lock with it.
        with contextlib.suppress(psycopg.Error):
            pgconn.unlock(conn, klass, name)


def up_to_date(conn: psycopg.Connection[Any], found: Sequence[versions.Migration]) -> bool:
    """Whether every migration in ``found`` is recorded as applied (one query, no lock)."""
    recorded = _recorded(conn)
    return all(m.version in recorded for m in found)


def postgres_status(
    db: DatabaseURL, found: Sequence[versions.Migration]
) -> versions.MigrationStatus:
    with pgconn.connect(db.url) as conn:
        return versions.MigrationStatus(
            db.redacted, versions.compare(found, _recorded(conn)), _langgraph(conn)
        )


def _recorded(conn: psycopg.Connection[Any]) -> versions.Recorded:
    if not _exists(conn, "lgctx_schema_versions"):
        return {}
    rows = conn.execute("SELECT version, name, checksum, applied_at FROM lgctx_schema_versions")
    return {
        int(r["version"]): (str(r["name"]), str(r["checksum"]), versions.iso(r["applied_at"]))
        for r in rows.fetchall()
    }


def _langgraph(conn: psycopg.Connection[Any]) -> str:
    from langgraph.checkpoint.postgres import PostgresSaver

    known = len(PostgresSaver.MIGRATIONS) - 1
    if not _exists(conn, "checkpoint_migrations"):
        return f"checkpoint tables not set up (this LangGraph knows v{known})"
    row = conn.execute("SELECT max(v) AS v FROM checkpoint_migrations").fetchone()
    version = row["v"] if row is not None else None
    if version is None:
        return f"checkpoint tables not set up (this LangGraph knows v{known})"
    state = "up to date" if version >= known else "pending"
    return f"checkpoint schema v{version} of v{known}: {state}"


def _exists(conn: psycopg.Connection[Any], table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL AS ok", (table,)).fetchone()
    return bool(row is not None and row["ok"])
