"""Background jobs tied to a history snapshot: the next summary, built while the agent waits.

Tiered compression prepares its next summary here, ARC its next reflection and
PACE its step summaries: each job is keyed by the messages it read
(:func:`span_key`), so a result is applied only to the history it describes.

In the yellow zone the span the next compression will remove is already
known. Summarizing it then, in the background, while the node waits on its
model or its tools, lets the call that crosses the red line swap in a ready
summary instead of waiting for the summarizer.

A :class:`Prepared` lives in memory only (the session's scratch): nothing of
it is persisted until the compression that uses it is applied, through the
same archive-then-rewrite step as a synchronous one. A process killed in
between loses a summary it can rebuild, never a message.

It is keyed by what it summarized (id and content key of every message, and of
the summaries before them): if any of that changed since, it is stale and is
never applied.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from langchain_core.messages import BaseMessage

from langgraph_ctx._workers import DaemonPool
from langgraph_ctx.tokens import message_key

WORKERS = 2
"""Threads of the package's preparation pool: summaries are made one or two at a
time per process, however many sessions ask; the others wait their turn (and
meanwhile the synchronous path still works)."""

Outcome: TypeAlias = tuple[str, list[str], float, int]
"""A summary's text, the reasons its summarizer fell back (if it did), and its
entity retention and token count: measured in the background too, as they cost
more than applying the summary."""
SpanKey: TypeAlias = tuple[tuple[str, int], ...]
T = TypeVar("T")

_POOL = DaemonPool(WORKERS, name="lgctx-prep")


def pool() -> DaemonPool:
    """The package's own bounded pool: never the caller's default executor, which
    a prepared summary (seconds of CPU for a long span) must not crowd out. Daemon
    threads: a summarizer that hangs without a timeout (a summary of our own is
    never needed to exit) must not keep the process alive, as a
    ``ThreadPoolExecutor``, joined at exit, did."""
    return _POOL


def span_key(messages: Sequence[BaseMessage]) -> SpanKey:
    return tuple((str(m.id), message_key(m)) for m in messages)


@dataclass(slots=True)
class Prepared:
    """One summary being made, or made, ahead of the compression that needs it."""

    summaries: SpanKey
    """The summary layers before the span when it was taken."""
    span: SpanKey
    """The messages it summarizes, in order (after the summaries in the history)."""
    meta: bool
    """Whether the summary consolidates the earlier layers with the span."""
    max_tokens: int
    tokens: int
    """The span's tokens (raw, as the session cache counts)."""
    planned_at: int
    """The messages' tokens (raw) when it was last planned."""
    future: concurrent.futures.Future[Outcome]
    task: asyncio.Task[Any] | None = field(default=None, repr=False)
    """Kept so the event loop does not drop a running async summary."""

    def outcome(self) -> Outcome | None:
        """The summary if it is ready and succeeded; ``None`` otherwise (never waits)."""
        if not self.future.done() or self.future.cancelled():
            return None
        if self.future.exception() is not None:
            return None
        return self.future.result()

    def waitable(self) -> bool:
        """Whether waiting for it can end: a thread of the pool always finishes; a
        task only on the running loop it was made on (another loop may be gone)."""
        if self.future.done() or self.task is None:
            return True
        try:
            return asyncio.get_running_loop() is self.task.get_loop()
        except RuntimeError:
            return False

    def wait(self) -> Outcome | None:
        """Wait for it (sync): the rest of a summary already under way costs less
        than a new one. ``None`` if it failed, or is a task this thread cannot wait for."""
        if self.task is not None and not self.future.done():
            return None  # the loop that would finish it is this thread's, or gone
        try:
            return self.future.result()
        except (Exception, asyncio.CancelledError):
            return None

    async def await_(self) -> Outcome | None:
        """Async :meth:`wait`."""
        try:
            return await asyncio.wrap_future(self.future)
        except (Exception, asyncio.CancelledError):
            return None

    def fits(self, summaries: Sequence[BaseMessage], rest: Sequence[BaseMessage]) -> bool:
        """Whether it still describes this history: the same summary layers, then
        its span, unchanged, at the start of ``rest``."""
        n = len(self.span)
        return (
            len(rest) >= n
            and span_key(summaries) == self.summaries
            and span_key(rest[:n]) == self.span
        )

    def discard(self) -> None:
        self.future.cancel()  # only stops one still queued; a running one finishes unused
        if self.task is not None:
            self.task.cancel()


def start(
    summaries: Sequence[BaseMessage],
    span: Sequence[BaseMessage],
    *,
    meta: bool,
    max_tokens: int,
    tokens: int,
    planned_at: int,
    run: Callable[[], Outcome],
    arun: Callable[[], Awaitable[Outcome]] | None,
) -> Prepared:
    """Start making a summary in the background.

    ``arun`` (a summarizer doing genuine async I/O: a model) runs as a task on
    the running event loop, if there is one; otherwise, and for CPU-bound
    summarizers, ``run`` goes to the package's pool.
    """
    future, task = in_background(run, arun)
    return Prepared(
        span_key(summaries), span_key(span), meta, max_tokens, tokens, planned_at, future, task
    )


def in_background(
    run: Callable[[], T], arun: Callable[[], Awaitable[T]] | None
) -> tuple[concurrent.futures.Future[T], asyncio.Task[Any] | None]:
    """Start ``arun`` as a task on the running loop (genuine async I/O), or else
    ``run`` in the package's pool; a future any thread can wait on, and the task
    (keep it: the loop holds only a weak reference)."""
    loop = None
    if arun is not None:
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
    if loop is None or arun is None:
        return pool().submit(run), None
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    future.set_running_or_notify_cancel()
    return future, loop.create_task(settle(future, arun))


async def settle(future: concurrent.futures.Future[T], arun: Callable[[], Awaitable[T]]) -> None:
    """Run ``arun`` and put its outcome in ``future``, which any thread can wait on."""
    try:
        future.set_result(await arun())
    except BaseException as exc:  # cancelled with its loop, or the summarizer failed
        if not future.done():
            future.set_exception(exc)
        if not isinstance(exc, Exception):
            raise
