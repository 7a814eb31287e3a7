"""Summary observer: compression summaries become long-term observations.

Compression (paper, section 9.3) takes details out of the active context; this
middleware stores each new summary as an ``observation`` in the run's memory
scope, so that :class:`~langgraph_ctx.middleware.recall.MemoryRecall` can bring
them back in a later turn or session when they become relevant again. It uses
the same scope rule as recall: one user's summaries never reach another's.
"""

from __future__ import annotations

import hashlib
import time
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage

from langgraph_ctx import ledger
from langgraph_ctx._checks import check_instance, check_timeout
from langgraph_ctx.markers import is_summary, summary_body
from langgraph_ctx.middleware.recall import elapsed_ms, record_failure
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, Middleware, View
from langgraph_ctx.pipeline.context import graph_namespace
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
    reads = ("messages",)
    writes = ("context_ledger",)

    def __init__(self, bank: MemoryBank, *, timeout: float = 2.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_instance("SummaryObserver.bank", bank, MemoryBank, "a MemoryBank")
        check_timeout("SummaryObserver.timeout", timeout, optional=False)
        self.bank = bank
        self.timeout = timeout

    def after(self, view: View, result: Any, ctx: CallContext) -> Hook[Any]:
        work = self._work(view, ctx)
        if work:
            start = time.perf_counter()
            store = IOCall(
                partial(self._remember, work), partial(self._aremember, work), timeout=self.timeout
            )
            try:
                yield store
            except Exception as exc:
                record_failure(ctx, "observe", exc, start, self.timeout)
            else:
                keys = [w["key"] for w in work]
                ctx.record("observe", ledger.Observe(keys=keys, latency_ms=elapsed_ms(start)))
        return result

    def _remember(self, work: list[dict[str, Any]]) -> None:
        for w in work:
            self.bank.remember(**w)

    async def _aremember(self, work: list[dict[str, Any]]) -> None:
        for w in work:
            await self.bank.aremember(**w)

    def _work(self, view: View, ctx: CallContext) -> list[dict[str, Any]]:
        # Any summary persisted by the rest of this call (compression runs inside
        # this layer) that was not in the history before it.
        before = {m.id for m in view.get("messages") or ()}
        new = [
            m
            for update in ctx.persistent
            for m in update.values.get("messages") or ()
            if isinstance(m, BaseMessage) and is_summary(m) and m.id not in before
        ]
        if not new:
            return []
        scope = self.bank.scope(ctx.config)
        if scope is None:
            ctx.record(
                "observe_skipped",
                ledger.ObserveSkipped(reason="no scope in config", summaries=len(new)),
            )
            return []
        where = f"{ctx.thread_id}\x00{graph_namespace(ctx.config)}"
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
