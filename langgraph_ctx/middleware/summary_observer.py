"""Summary observer: compression summaries become long-term observations.

Compression (paper, section 9.3) takes details out of the active context; this
middleware stores each new summary as an ``observation`` in the run's memory
scope, so that :class:`~langgraph_ctx.middleware.recall.MemoryRecall` can bring
them back in a later turn or session when they become relevant again. It uses
the same scope rule as recall: one user's summaries never reach another's.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import is_summary, summary_body
from langgraph_ctx.middleware.recall import elapsed_ms, record_failure, run_with_timeout
from langgraph_ctx.pipeline import AsyncNext, CallContext, Middleware, Next, View, graph_namespace
from langgraph_ctx.retrieval.memory import MemoryBank


class SummaryObserver(Middleware):
    """Stores each new compression summary as an observation in the run's scope.

    Runs just before compression (priority 29) and looks at what compression
    persisted on the way back out, after the node succeeded: a summary that
    never reached the checkpoint is not remembered either. Keys derive from
    thread, graph namespace and summary id, so a re-run step writes nothing twice.
    """

    name = "summary_observer"
    priority = 29
    default_nodes = ("call_llm", "think")

    def __init__(self, bank: MemoryBank, *, timeout: float = 2.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not timeout > 0:
            raise ConfigurationError("SummaryObserver.timeout", f"must be > 0, got {timeout}")
        self.bank = bank
        self.timeout = timeout

    def __call__(self, view: View, config: RunnableConfig, ctx: CallContext, next: Next) -> Any:
        mark = len(ctx.persistent)
        result = next(view)
        work = self._work(view, config, ctx, mark)
        if work:
            start = time.perf_counter()
            try:
                run_with_timeout(lambda: [self.bank.remember(**w) for w in work], self.timeout)
            except Exception as exc:
                record_failure(ctx, "observe", exc, start, self.timeout)
            else:
                ctx.record(
                    "observe", {"keys": [w["key"] for w in work], "latency_ms": elapsed_ms(start)}
                )
        return result

    async def acall(
        self, view: View, config: RunnableConfig, ctx: CallContext, next: AsyncNext
    ) -> Any:
        mark = len(ctx.persistent)
        result = await next(view)
        work = self._work(view, config, ctx, mark)
        if work:
            start = time.perf_counter()

            async def write() -> None:
                for w in work:
                    await self.bank.aremember(**w)

            try:
                await asyncio.wait_for(write(), self.timeout)
            except Exception as exc:
                record_failure(ctx, "observe", exc, start, self.timeout)
            else:
                ctx.record(
                    "observe", {"keys": [w["key"] for w in work], "latency_ms": elapsed_ms(start)}
                )
        return result

    def _work(
        self, view: View, config: RunnableConfig, ctx: CallContext, mark: int
    ) -> list[dict[str, Any]]:
        before = {m.id for m in view.get("messages") or ()}
        new = [
            m
            for update in ctx.persistent[mark:]
            for m in update.values.get("messages") or ()
            if isinstance(m, BaseMessage) and is_summary(m) and m.id not in before
        ]
        if not new:
            return []
        scope = self.bank.scope(config)
        if scope is None:
            ctx.record("observe_skipped", {"reason": "no scope in config", "summaries": len(new)})
            return []
        where = f"{ctx.thread_id}\x00{graph_namespace(config)}"
        return [
            {
                "scope": scope,
                "text": summary_body(m),
                "level": "observation",
                "source": "compression",
                "key": "summary-" + _hash(f"{where}\x00{m.id}"),
            }
            for m in new
        ]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
