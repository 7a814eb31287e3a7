"""The base of the package's stores (archives, event sinks): ``with`` closes them."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from types import TracebackType

from typing_extensions import Self


class Closing:
    """``close()`` on leaving a ``with`` block. Subclasses define ``close``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class SQLiteTable(Closing):
    """One SQLite connection behind a lock, with the package's tables migrated in.

    Shared by :class:`~langgraph_ctx.storage.archive.SQLiteArchive` and
    :class:`~langgraph_ctx.storage.events.SQLiteEventSink`: the connection serves all
    threads (``check_same_thread=False``, guarded by ``_lock``), waits up to 30 s
    for another process's write lock, and is in autocommit mode, so writers
    issue ``BEGIN IMMEDIATE``/``COMMIT`` themselves. Opening applies the shipped
    migrations (idempotent), which also switch the file to WAL so readers never
    block the writer; a file a store created and one ``langgraph-ctx migrate``
    created are the same.
    """

    def __init__(self, path: str | Path = ":memory:") -> None:
        from langgraph_ctx.storage.migrations import load_migrations, migrate_sqlite

        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA busy_timeout = 30000")
        migrate_sqlite(self._conn, load_migrations("sqlite"))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
