"""What the package's stores (archives, event sinks, thread locks) share.

- :class:`Closing`: ``with`` closes them.
- :func:`in_thread`: an async method that runs its sync twin in a worker
  thread, for stores whose calls are short and local (SQLite, memory).
- :class:`SQLiteTable`: one SQLite connection with the package's tables.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, TypeVar

from typing_extensions import ParamSpec, Self

from langgraph_ctx.storage._sqlite_migrations import migrate_sqlite
from langgraph_ctx.storage._versions import load_migrations

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


def in_thread(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of ``method``: the same call, in a worker thread.

    ``aput = in_thread(put)`` in a class body: the event loop never waits on a
    lock or on disk, and the logic is written once.
    """

    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    twin.__name__ = f"a{method.__name__}"
    twin.__qualname__ = twin.__qualname__.replace("twin", twin.__name__)
    twin.__doc__ = f"Async :meth:`{method.__name__}` (in a worker thread)."
    return twin


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
