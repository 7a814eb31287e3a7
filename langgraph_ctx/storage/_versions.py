"""What a migration is and where a database stands: the types and checks both dialects share.

The runner (:mod:`langgraph_ctx.storage.migrations`) and its two sides
(``_sqlite_migrations``, ``_pg_migrations``) import from here, never from
each other's modules, so the storage modules stay free of import cycles.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from langgraph_ctx.errors import ConfigurationError

Dialect = Literal["postgres", "sqlite"]
State = Literal["applied", "pending", "changed", "unknown"]
Recorded = dict[int, tuple[str, str, str | None]]
"""What a database recorded: {version: (name, checksum, applied_at)}."""

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


def compare(found: Sequence[Migration], recorded: Recorded) -> tuple[MigrationState, ...]:
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
    recorded: Recorded,
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
