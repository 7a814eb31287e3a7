"""The migration runner's SQLite side (see :mod:`langgraph_ctx.storage.migrations`).

Each migration runs under ``BEGIN IMMEDIATE``, SQLite's write lock, and first
re-checks whether another process applied it meanwhile; so processes that
start at once apply each migration exactly once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from langgraph_ctx.errors import ConfigurationError, ContextRunError
from langgraph_ctx.storage._passages import STEPS
from langgraph_ctx.storage._versions import (
    VERSIONS_DDL,
    Migration,
    MigrationStatus,
    Recorded,
    compare,
    iso,
    refuse_changes,
)
from langgraph_ctx.storage.urls import DatabaseURL


def migrate_sqlite(conn: sqlite3.Connection, found: Sequence[Migration]) -> list[int]:
    """Apply pending ``found`` on ``conn`` (autocommit mode); the versions applied."""
    check_sqlite_file(conn)
    conn.execute(VERSIONS_DDL["sqlite"])
    refuse_changes("the SQLite database", found, _recorded(conn))
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
                step = STEPS["sqlite"].get(m.label)
                if step is not None:  # what SQL cannot do, in the same transaction
                    step(conn)
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


def check_sqlite_file(conn: sqlite3.Connection) -> None:
    """Refuse a file that is not a SQLite database, naming it, before anything is written.

    sqlite3 opens any file lazily and fails at the first statement with a bare
    ``DatabaseError: file is not a database``, which names no file.
    """
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        files = [str(row[2]) for row in conn.execute("PRAGMA database_list") if row[1] == "main"]
        raise ConfigurationError(
            "sqlite",
            f"{files[0] if files else 'the file'!r} is not a SQLite database ({exc}); "
            "give the path of a new file or of a database this package created",
        ) from exc


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


def _recorded(conn: sqlite3.Connection) -> Recorded:
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lgctx_schema_versions'"
    ).fetchone():
        return {}
    rows = conn.execute("SELECT version, name, checksum, applied_at FROM lgctx_schema_versions")
    return {int(v): (str(n), str(c), iso(at)) for v, n, c, at in rows}


def sqlite_status(
    db: DatabaseURL, conn: sqlite3.Connection, found: Sequence[Migration], applied: list[int]
) -> MigrationStatus:
    check_sqlite_file(conn)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    langgraph = (
        "checkpoint tables present"
        if {"checkpoints", "writes"} <= tables
        else "checkpoint tables absent (SqliteSaver creates them on first use)"
    )
    return MigrationStatus(db.redacted, compare(found, _recorded(conn)), langgraph, tuple(applied))


class open_sqlite:
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
