"""PACE's representation generator: each step's detailed and brief summaries, made in
the background and never waited for (section 3.2, and appendix B's latency claim).

A job starts when a step is complete. It runs in PACE's own bounded pool of
daemon threads (:class:`~langgraph_ctx._workers.DaemonPool`: a summarizer that
hangs holds one of its few workers, never the agent's call, never interpreter
exit), or, for a chat-model summarizer under ``ainvoke``, as a task on the
running loop (:func:`~langgraph_ctx.history.jobs.settle`, as tiered
compression prepares its summaries). A call only ever asks whether a job is
done (:meth:`SummaryJob.outcome`); one past its timeout is given up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from langgraph_ctx._workers import DaemonPool
from langgraph_ctx.compression import ChatModelSummarizer, Summarizer
from langgraph_ctx.history.jobs import settle

POOL = DaemonPool(2, name="lgctx-pace")
"""Two workers for every PACE session of the process: summaries queue behind them,
and meanwhile the steps are shown in full or as placeholders."""

Summaries = tuple[str, str]
"""(detailed, brief)."""


@dataclass(slots=True)
class SummaryJob:
    """One step's summaries being made."""

    future: concurrent.futures.Future[Summaries]
    started: float = field(default_factory=time.monotonic)
    task: asyncio.Task[Any] | None = field(default=None, repr=False)
    """Kept so that the event loop does not drop a running async job."""

    def outcome(self, timeout: float) -> Summaries | str | None:
        """The summaries if done; ``"failed"`` or ``"timeout"`` if they never will be;
        ``None`` while still under way. Never waits."""
        if self.future.done():
            if self.future.cancelled() or self.future.exception() is not None:
                return "failed"
            return self.future.result()
        if time.monotonic() - self.started > timeout:
            self.cancel()
            return "timeout"
        return None

    def cancel(self) -> None:
        self.future.cancel()  # stops one still queued; a running thread finishes unused
        if self.task is not None:
            self.task.cancel()


def start(
    summarizer: Summarizer, messages: Sequence[BaseMessage], detailed: int, brief: int
) -> SummaryJob:
    """Start summarizing ``messages`` at both budgets, off the caller's path."""
    batch = list(messages)

    def run() -> Summaries:
        return (
            summarizer.summarize(batch, max_tokens=detailed),
            summarizer.summarize(batch, max_tokens=brief),
        )

    async def arun() -> Summaries:
        return (
            await summarizer.asummarize(batch, max_tokens=detailed),
            await summarizer.asummarize(batch, max_tokens=brief),
        )

    loop = None
    if isinstance(summarizer, ChatModelSummarizer):  # genuine async I/O: a model
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
    if loop is None:  # CPU-bound (extractive), or no loop: a worker thread
        return SummaryJob(POOL.submit(run))
    future: concurrent.futures.Future[Summaries] = concurrent.futures.Future()
    future.set_running_or_notify_cancel()
    return SummaryJob(future, task=loop.create_task(settle(future, arun)))
