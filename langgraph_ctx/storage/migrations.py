"""Versioned SQL for the package's own tables, and the runner that applies it.

The SQL ships inside the wheel, in ``langgraph_ctx/storage/sql/``, as
``NNNN_name.postgres.sql`` and ``NNNN_name.sqlite.sql``: one file per version
and dialect, versions numbered from 1 without gaps. A migration, once
applied anywhere, is append-only: a change goes into a new file. Why the
chain was not squashed before 0.1.0, and why two statements repeat across
files, is written down in ``storage/sql/README.md``.

:func:`migrate` applies what is missing, in version order, each migration in
its own transaction together with its row in ``lgctx_schema_versions``
(version, name, SHA-256 of the file, time). So a failed migration leaves no
trace, and one applied is recorded.

- Several processes starting at once apply each migration exactly once: on
  PostgreSQL the runner holds an advisory lock for the whole run (polled, see
  :mod:`langgraph_ctx.storage.pgconn`); on SQLite each migration runs under
  ``BEGIN IMMEDIATE`` and re-checks whether another process applied it first.
- LangGraph's own ``setup()`` runs under the same lock. It has none of its
  own, and concurrent calls fail with ``UniqueViolation``.
- It refuses to run, with a :class:`ConfigurationError`, when a recorded
  checksum differs from the file's (someone edited an applied migration) or
  the database has versions this package does not know (a newer one migrated it).

The types and the checks live in ``_versions``, each dialect's runner in
``_sqlite_migrations`` and ``_pg_migrations``; this module picks one by URL.

Our tables are prefixed ``lgctx_`` and have no foreign keys into LangGraph's;
LangGraph's ``checkpoint_migrations`` is LangGraph's alone.
"""

from __future__ import annotations

from pathlib import Path

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage._pg_migrations import migrate_postgres, postgres_status
from langgraph_ctx.storage._sqlite_migrations import migrate_sqlite, open_sqlite, sqlite_status
from langgraph_ctx.storage._versions import (
    Migration,
    MigrationState,
    MigrationStatus,
    compare,
    load_migrations,
)
from langgraph_ctx.storage.urls import DatabaseURL, parse_url

__all__ = [
    "LOCK_TIMEOUT",
    "Migration",
    "MigrationState",
    "MigrationStatus",
    "load_migrations",
    "migrate",
    "migration_status",
]

LOCK_TIMEOUT = 300.0
"""Seconds to wait for another process's migration run before giving up."""


def migrate(
    url: str | None = None, *, directory: Path | None = None, timeout: float = LOCK_TIMEOUT
) -> MigrationStatus:
    """Apply every pending migration, then LangGraph's saver setup. Idempotent.

    Raises :class:`ConfigurationError` for a bad URL, an unreachable server or
    a changed migration, before applying anything.
    """
    db = _parse(url)
    if db.kind == "postgres":
        return migrate_postgres(db, load_migrations("postgres", directory), timeout=timeout)
    with open_sqlite(db) as conn:
        found = load_migrations("sqlite", directory)
        applied = migrate_sqlite(conn, found)
        return sqlite_status(db, conn, found, applied)


def migration_status(url: str | None = None, *, directory: Path | None = None) -> MigrationStatus:
    """What :func:`migrate` would do, without doing it."""
    db = _parse(url)
    if db.kind == "postgres":
        return postgres_status(db, load_migrations("postgres", directory))
    found = load_migrations("sqlite", directory)
    if db.path != ":memory:" and not Path(db.path).exists():  # a status check creates nothing
        return MigrationStatus(db.redacted, compare(found, {}), "no database file yet")
    with open_sqlite(db) as conn:
        return sqlite_status(db, conn, found, [])


def _parse(url: str | None) -> DatabaseURL:
    db = parse_url(url)
    if db.kind == "memory":
        raise ConfigurationError(
            "database_url", "memory:// keeps nothing between processes: there is nothing to migrate"
        )
    return db
