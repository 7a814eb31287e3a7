"""One run per thread at a time, across processes.

LangGraph does not stop two processes from driving one thread at once. Each
loads the latest checkpoint, runs, and writes its own successor: the history
forks, and one run's user turn silently disappears. :class:`ThreadLock` is
held around a whole run, so the second run starts from the first one's last
checkpoint, or fails with :class:`~langgraph_ctx.errors.ThreadBusyError`::

    with ThreadLock(url, thread_id):
        graph.invoke({"messages": [turn]}, config)

    run_exclusive(graph, {"messages": [turn]}, config, url=url)   # the same

Why a context manager, not a middleware or a checkpointer wrapper: the lock
must span the whole run (a per-node lock still lets both runs start from the
same checkpoint), and only the caller knows where a run ends: an ``invoke``
returns, a stream is consumed over minutes, an interrupt resumes a day later.

Backends, chosen by the same URL as the checkpointer:

- ``postgresql://``: a session-level advisory lock, key (``'lgt1'``,
  ``hashtext(thread_id)``), on a connection of its own. A process that dies
  loses its connection and the server releases the lock, so a crash never
  blocks a thread. A server restart releases it too, unnoticed by the holder;
  the run itself then fails on the restart or carries on alone. Two thread
  ids with the same 32-bit hash merely wait for each other.
- ``sqlite:///``: ``flock`` on a per-thread file in ``<db>.locks/`` (POSIX).
- ``memory://``: a lock in this process (that is all such a thread can reach).

``timeout``: seconds to wait for a busy thread (default 30), ``0`` to fail at
once, ``None`` to wait for as long as it takes.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from typing_extensions import Self

from langgraph_ctx.errors import ConfigurationError, ThreadBusyError
from langgraph_ctx.storage import pgconn
from langgraph_ctx.storage._base import Closing
from langgraph_ctx.storage.urls import DatabaseURL, parse_url

DEFAULT_TIMEOUT = 30.0


class _Backend(Protocol):
    def acquire(self, timeout: float | None) -> bool: ...

    def release(self) -> None: ...


class ThreadLock(Closing):
    """Holds ``thread_id`` exclusively while entered (sync ``with`` or ``async with``)."""

    def __init__(
        self, url: str | None, thread_id: str, *, timeout: float | None = DEFAULT_TIMEOUT
    ) -> None:
        if not thread_id:
            raise ConfigurationError("thread_id", "a thread lock needs a non-empty thread id")
        if timeout is not None and timeout < 0:
            raise ConfigurationError("timeout", f"must be >= 0 or None, got {timeout}")
        self.db = parse_url(url)
        self.thread_id = str(thread_id)
        self.timeout = timeout
        self._backend: _Backend | None = None

    def acquire(self) -> None:
        """Take the lock, waiting up to ``timeout``; raises :class:`ThreadBusyError`."""
        if self._backend is not None:
            raise ConfigurationError("ThreadLock", "already held; it is not re-entrant")
        backend = _backend(self.db, self.thread_id)
        start = time.monotonic()
        try:
            acquired = backend.acquire(self.timeout)
        except BaseException:
            backend.release()
            raise
        if not acquired:
            backend.release()
            raise ThreadBusyError(self.thread_id, time.monotonic() - start)
        self._backend = backend

    def release(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.release()

    @property
    def held(self) -> bool:
        return self._backend is not None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    close = release  # what Closing's __exit__ calls

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.acquire)  # waiting must not block the event loop
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.release)


def run_exclusive(
    graph: Any,
    input: Any,
    config: Mapping[str, Any],
    *,
    url: str | None,
    timeout: float | None = DEFAULT_TIMEOUT,
    **kwargs: Any,
) -> Any:
    """``graph.invoke(input, config, **kwargs)`` while holding the config's thread."""
    with ThreadLock(url, _thread_of(config), timeout=timeout):
        return graph.invoke(input, config, **kwargs)


async def arun_exclusive(
    graph: Any,
    input: Any,
    config: Mapping[str, Any],
    *,
    url: str | None,
    timeout: float | None = DEFAULT_TIMEOUT,
    **kwargs: Any,
) -> Any:
    """``await graph.ainvoke(input, config, **kwargs)`` while holding the config's thread."""
    async with ThreadLock(url, _thread_of(config), timeout=timeout):
        return await graph.ainvoke(input, config, **kwargs)


def _thread_of(config: Mapping[str, Any]) -> str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None or thread == "":
        raise ConfigurationError("config", "needs configurable.thread_id to lock a thread")
    return str(thread)


def _backend(db: DatabaseURL, thread_id: str) -> _Backend:
    if db.kind == "postgres":
        return _AdvisoryLock(db.url, thread_id)
    if db.kind == "sqlite" and db.path != ":memory:":
        return _FileLock(Path(db.path), thread_id)
    return _LocalLock(thread_id)


class _AdvisoryLock:
    def __init__(self, url: str, thread_id: str) -> None:
        self._thread = thread_id
        self._conn = pgconn.connect(url)

    def acquire(self, timeout: float | None) -> bool:
        return pgconn.lock(self._conn, pgconn.THREADS_LOCK_CLASS, self._thread, timeout=timeout)

    def release(self) -> None:
        # Closing the session releases its advisory locks: no unlock round trip needed.
        self._conn.close()


class _FileLock:
    def __init__(self, db: Path, thread_id: str) -> None:
        folder = db.with_name(db.name + ".locks")
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:32]
        self._file = open(folder / f"{digest}.lock", "a+b")  # noqa: SIM115 - held until release

    def acquire(self, timeout: float | None) -> bool:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            raise ConfigurationError(
                "ThreadLock", "SQLite thread locks need POSIX flock; use PostgreSQL here"
            ) from None
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.01
        while True:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def release(self) -> None:
        self._file.close()  # closing drops the flock


_local_guard = threading.Lock()
_local_locks: dict[str, threading.Lock] = {}


class _LocalLock:
    def __init__(self, thread_id: str) -> None:
        with _local_guard:
            self._lock = _local_locks.setdefault(thread_id, threading.Lock())
        self._held = False

    def acquire(self, timeout: float | None) -> bool:
        self._held = self._lock.acquire(timeout=-1 if timeout is None else timeout)
        return self._held

    def release(self) -> None:
        if self._held:
            self._held = False
            self._lock.release()
