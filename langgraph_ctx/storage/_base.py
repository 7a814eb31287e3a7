"""What the package's stores (archives, event sinks, thread locks) share.

- :class:`Closing`: ``with`` closes them.
- :class:`SQLiteTable`: one SQLite connection with the package's tables.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from typing_extensions import Self

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage._sqlite_migrations import migrate_sqlite
from langgraph_ctx.storage._versions import load_migrations


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


def _file_path(owner: str, path: object) -> str:
    """A file path, refusing what would silently become the wrong file.

    ``str()`` of anything is a valid file name: ``None`` made a file called
    ``None``, and a URL (``sqlite:///x.db``) a folder called ``sqlite:``.
    """
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise ConfigurationError(f"{owner}.path", f"expected a file path, got {path!r}")
    if "://" in str(path):
        raise ConfigurationError(
            f"{owner}.path",
            f"expected a file path, got the URL {str(path)!r}: pass the path alone "
            "(or build it from a URL with langgraph_ctx.storage.checkpointers.archive_from_url)",
        )
    return str(path)


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
        self.path = _file_path(type(self).__name__, path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA busy_timeout = 30000")
        migrate_sqlite(self._conn, load_migrations("sqlite"))

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction under the lock: committed whole or rolled back.

        ``BEGIN IMMEDIATE`` takes the database's write lock up front, so two
        processes never interleave a read-then-write (positions, sequence numbers).
        """
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            finally:
                cur.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
