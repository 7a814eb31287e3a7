"""Versioned SQL for the package's own tables, and the runner that applies it.

The SQL ships inside the wheel, in ``langgraph_ctx/storage/sql/``, as
``NNNN_name.postgres.sql`` and ``NNNN_name.sqlite.sql``: one file per version
and dialect, versions numbered from 1 without gaps. A migration, once
applied anywhere, is append-only: a change goes into a new file.

:func:`migrate` applies what is missing, in version order, each migration in
its own transaction together with its row in ``lgctx_schema_versions``
(version, name, SHA-256 of the file, time). So a failed migration leaves no
trace, and one applied is recorded.

- Several processes starting at once apply each migration exactly once: on
  PostgreSQL the runner holds an advisory lock for the whole run (polled, see
  :mod:`langgraph_ctx.storage._pgconn`); on SQLite each migration runs under
  ``BEGIN IMMEDIATE`` and re-checks whether another process applied it first.
- LangGraph's own ``setup()`` runs under the same lock. It has none of its
  own, and concurrent calls fail with ``UniqueViolation``.
- It refuses to run, with a :class:`ConfigurationError`, when a recorded
  checksum differs from the file's (someone edited an applied migration) or
  the database has versions this package does not know (a newer one migrated it).

Our tables are prefixed ``lgctx_`` and have no foreign keys into LangGraph's;
LangGraph's ``checkpoint_migrations`` is LangGraph's alone.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from langgraph_ctx.errors import ConfigurationError, ContextRunError
from langgraph_ctx.storage.urls import DatabaseURL, parse_url

Dialect = Literal["postgres", "sqlite"]
State = Literal["applied", "pending", "changed", "unknown"]

LOCK_TIMEOUT = 300.0
"""Seconds to wait for another process's migration run before giving up."""

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.(postgres|sqlite)\.sql$")
VERSIONS_DDL = {
    "postgres": """CREATE TABLE IF NOT EXISTS lgctx_schema_versions (
        version    INTEGER     PRIMARY KEY,
        name       TEXT        NOT NULL,
        checksum   TEXT        NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now())""",
    "sqlite": """CREATE TABLE IF NOT EXISTS lgctx_schema_versions (
        version    INTEGER PRIMARY KEY,
        name       TEXT    NOT NULL,
        checksum   TEXT    NOT NULL,
        applied_at REAL    NOT NULL)""",
}


@dataclass(frozen=True)
class Migration:
    """One SQL file."""

    version: int
    name: str
    sql: str
    checksum: str
    """SHA-256 of the text with line endings normalized (a CRLF checkout is no change)."""

    @property
    def label(self) -> str:
        return f"{self.version:04d}_{self.name}"


@dataclass(frozen=True)
class MigrationState:
    version: int
    name: str
    state: State
    """``applied``; ``pending``; ``changed`` (the file differs from what was
    applied); ``unknown`` (in the database, not in this package)."""
    applied_at: str | None = None
    """ISO 8601, UTC."""


@dataclass(frozen=True)
class MigrationStatus:
    """Where a database stands, for ``langgraph-ctx migrate --status`` and start-up checks."""

    database: str
    """The URL, password redacted."""
    migrations: tuple[MigrationState, ...]
    langgraph: str
    """The state of LangGraph's own checkpoint tables, in words."""
    applied_now: tuple[int, ...] = field(default=())
    """Versions this call applied (empty for a status check)."""

    @property
    def up_to_date(self) -> bool:
        return all(m.state == "applied" for m in self.migrations)

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "up_to_date": self.up_to_date,
            "applied_now": list(self.applied_now),
            "langgraph": self.langgraph,
            "migrations": [vars(m) for m in self.migrations],
        }


def load_migrations(dialect: Dialect, directory: Path | None = None) -> list[Migration]:
    """The migrations of ``dialect``, in version order (from the package unless ``directory``)."""
    if directory is not None:
        texts = {p.name: p.read_text(encoding="utf-8") for p in directory.iterdir()}
    else:
        root = files("langgraph_ctx.storage").joinpath("sql")
        texts = {p.name: p.read_text(encoding="utf-8") for p in root.iterdir()}
    found: list[Migration] = []
    for filename, text in texts.items():
        match = _FILE.match(filename)
        if match is None or match.group(3) != dialect:
            continue
        text = text.replace("\r\n", "\n")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        found.append(Migration(int(match.group(1)), match.group(2), text, digest))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise ConfigurationError(
            "migrations",
            f"{dialect} migrations must be numbered 1..N without gaps or repeats, "
            f"found {[m.label for m in found]}",
        )
    return found


def migrate(
    url: str | None = None, *, directory: Path | None = None, timeout: float = LOCK_TIMEOUT
) -> MigrationStatus:
    """Apply every pending migration, then LangGraph's saver setup. Idempotent.

    Raises :class:`ConfigurationError` for a bad URL, an unreachable server or
    a changed migration, before applying anything.
    """
    db = _parse(url)
    if db.kind == "postgres":
        from langgraph_ctx.storage._pg_migrations import migrate_postgres

        return migrate_postgres(db, load_migrations("postgres", directory), timeout=timeout)
    with _open_sqlite(db) as conn:
        found = load_migrations("sqlite", directory)
        applied = migrate_sqlite(conn, found)
        return _sqlite_status(db, conn, found, applied)


def migration_status(url: str | None = None, *, directory: Path | None = None) -> MigrationStatus:
    """What :func:`migrate` would do, without doing it."""
    db = _parse(url)
    if db.kind == "postgres":
        from langgraph_ctx.storage._pg_migrations import postgres_status

        return postgres_status(db, load_migrations("postgres", directory))
    found = load_migrations("sqlite", directory)
    if db.path != ":memory:" and not Path(db.path).exists():  # a status check creates nothing
        return MigrationStatus(db.redacted, compare(found, {}), "no database file yet")
    with _open_sqlite(db) as conn:
        return _sqlite_status(db, conn, found, [])


def compare(
    found: Sequence[Migration], recorded: dict[int, tuple[str, str, str | None]]
) -> tuple[MigrationState, ...]:
    """Each migration's state, from ``recorded`` = {version: (name, checksum, applied_at)}."""
    states = []
    for m in found:
        row = recorded.get(m.version)
        if row is None:
            states.append(MigrationState(m.version, m.name, "pending"))
        else:
            same = row[0] == m.name and row[1] == m.checksum
            state: State = "applied" if same else "changed"
            states.append(MigrationState(m.version, m.name, state, row[2]))
    known = {m.version for m in found}
    for version in sorted(set(recorded) - known):
        name, _, applied_at = recorded[version]
        states.append(MigrationState(version, name, "unknown", applied_at))
    return tuple(states)


def refuse_changes(
    database: str,
    found: Sequence[Migration],
    recorded: dict[int, tuple[str, str, str | None]],
) -> None:
    """Raise :class:`ConfigurationError` if an applied migration's file changed."""
    by_version = {m.version: m for m in found}
    for state in compare(found, recorded):
        if state.state == "changed":
            m, (name, checksum, _) = by_version[state.version], recorded[state.version]
            raise ConfigurationError(
                "migrations",
                f"migration {m.label} was applied to {database} as {state.version:04d}_{name} "
                f"with checksum {checksum[:12]}, but its file now has {m.checksum[:12]}; "
                "applied migrations are append-only: restore the file and put the change "
                "in a new migration",
            )
        if state.state == "unknown":
            raise ConfigurationError(
                "migrations",
                f"{database} has migration {state.version:04d}_{state.name}, which this "
                "langgraph-ctx does not know: a newer version migrated it; upgrade langgraph-ctx",
            )


def iso(value: Any) -> str | None:
    """A recorded ``applied_at`` (datetime or Unix seconds) as ISO 8601 UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat(timespec="seconds")
    return datetime.fromtimestamp(float(value), timezone.utc).isoformat(timespec="seconds")


# -- SQLite ---------------------------------------------------------------


def migrate_sqlite(conn: sqlite3.Connection, found: Sequence[Migration]) -> list[int]:
    """Apply pending ``found`` on ``conn`` (autocommit mode); the versions applied."""
    conn.execute(VERSIONS_DDL["sqlite"])
    refuse_changes("the SQLite database", found, _sqlite_recorded(conn))
    applied: list[int] = []
    for m in found:
        conn.execute("BEGIN IMMEDIATE")  # the write lock: one process at a time from here
        try:
            row = conn.execute(
                "SELECT 1 FROM lgctx_schema_versions WHERE version = ?", (m.version,)
            ).fetchone()
            if row is None:
                for statement in _statements(m.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO lgctx_schema_versions (version, name, checksum, applied_at)"
                    " VALUES (?, ?, ?, ?)",
                    (m.version, m.name, m.checksum, time.time()),
                )
                applied.append(m.version)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    from langgraph.checkpoint.sqlite import SqliteSaver

    _wal(conn)
    SqliteSaver(conn).setup()
    return applied


def _wal(conn: sqlite3.Connection, timeout: float = 30.0) -> None:
    # SqliteSaver.setup() switches the file to WAL, and that switch fails at once
    # with "database is locked" (no busy wait) while another connection is mid
    # write. Make the switch ourselves, retrying; once in WAL, setup's own
    # request is a no-op.
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_recorded(conn: sqlite3.Connection) -> dict[int, tuple[str, str, str | None]]:
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lgctx_schema_versions'"
    ).fetchone():
        return {}
    rows = conn.execute("SELECT version, name, checksum, applied_at FROM lgctx_schema_versions")
    return {int(v): (str(n), str(c), iso(at)) for v, n, c, at in rows}


def _sqlite_status(
    db: DatabaseURL, conn: sqlite3.Connection, found: Sequence[Migration], applied: list[int]
) -> MigrationStatus:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    langgraph = (
        "checkpoint tables present"
        if {"checkpoints", "writes"} <= tables
        else "checkpoint tables absent (SqliteSaver creates them on first use)"
    )
    return MigrationStatus(
        db.redacted, compare(found, _sqlite_recorded(conn)), langgraph, tuple(applied)
    )


class _open_sqlite:
    """A short-lived autocommit connection that waits for other writers, closed on exit."""

    def __init__(self, db: DatabaseURL) -> None:
        if db.path != ":memory:":
            Path(db.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(db.path, isolation_level=None, timeout=30.0)

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def _statements(sql: str) -> Iterator[str]:
    """Split a script into statements: ``executescript`` would commit our transaction."""
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    rest = "\n".join(ln for ln in buffer.splitlines() if not ln.strip().startswith("--"))
    if rest.strip():
        raise ContextRunError(f"migration ends with an incomplete statement: {rest.strip()!r}")


def _parse(url: str | None) -> DatabaseURL:
    db = parse_url(url)
    if db.kind == "memory":
        raise ConfigurationError(
            "database_url", "memory:// keeps nothing between processes: there is nothing to migrate"
        )
    return db
