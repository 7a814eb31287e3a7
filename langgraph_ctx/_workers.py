"""The package's own small pool for blocking calls that run under a timeout.

A sync call (a summarizer model, a store) cannot be interrupted once it hangs:
Python cannot kill a thread. So the thread it runs in must be one that

- is bounded: a client that never answers holds at most :data:`WORKERS`
  threads, however many calls time out (a thread per call piles up);
- is ours: never the event loop's default executor, which the caller's own
  ``run_in_executor`` calls share and which ``asyncio.run`` joins at exit;
- never blocks interpreter exit: the workers are daemon threads
  (``concurrent.futures.ThreadPoolExecutor`` joins its workers at exit, so a
  hung call there keeps the process alive).

A call that times out is cancelled if it has not started; one that has keeps
its worker until it returns, and later calls queue behind the free workers
(and time out there if none frees up).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, TypeVar

from typing_extensions import ParamSpec

T = TypeVar("T")
S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")

WORKERS = 4
"""Most threads the pool runs at once."""

_Job = tuple["concurrent.futures.Future[Any]", contextvars.Context, Callable[[], Any]]


class DaemonPool:
    """At most ``size`` daemon worker threads, started on demand, shared by all calls."""

    def __init__(self, size: int = WORKERS, *, name: str = "lgctx-io") -> None:
        self.size = size
        self.name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._busy = 0

    @property
    def threads(self) -> int:
        """Worker threads started so far (never more than ``size``)."""
        return self._threads

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run ``fn`` in a worker, in the caller's context (callbacks, tracing)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((future, contextvars.copy_context(), fn))
        with self._lock:
            queued = self._jobs.qsize()
            if self._threads < self.size and self._busy + queued > self._threads:
                self._threads += 1
                name = f"{self.name}-{self._threads}"
                threading.Thread(target=self._work, name=name, daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            future, context, fn = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue  # timed out while queued: never started
            with self._lock:
                self._busy += 1
            try:
                result = context.run(fn)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
            finally:
                with self._lock:
                    self._busy -= 1


POOL = DaemonPool()
"""The one pool: shared, so that hung calls from every middleware hold at most its size."""


def call_with_timeout(fn: Callable[[], T], timeout: float) -> T:
    """``fn()`` in :data:`POOL`; ``TimeoutError`` if it takes longer than ``timeout`` s."""
    future = POOL.submit(fn)
    try:
        return future.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()  # dropped if still queued; a running call keeps its worker
        raise TimeoutError(f"no answer within {timeout} s") from None


def native_async(model: Any) -> bool:
    """Whether a chat model has its own async generation. LangChain runs one that
    has none (its ``ainvoke``) in the event loop's default executor, where a hung
    call outlives any timeout: such a model's sync form goes to :data:`POOL`."""
    from langchain_core.language_models import BaseChatModel

    cls = type(model)
    return cls._agenerate is not BaseChatModel._agenerate or (
        cls._astream is not BaseChatModel._astream
    )


async def acall_with_timeout(fn: Callable[[], T], timeout: float | None) -> T:
    """Await ``fn()`` run in :data:`POOL` (a sync-only client under ``ainvoke``),
    never in the event loop's default executor."""
    future = POOL.submit(fn)
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
    except asyncio.TimeoutError:
        future.cancel()
        raise TimeoutError(f"no answer within {timeout} s") from None


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
