"""Tiered compression: summarize old history when the budget runs short, losing nothing.

Reads pre-flight's usage report (so it must run after :class:`PreflightCheck`):

- red zone, or messages over their rebalanced allocation: compress now,
  before the call, down to ``target_utilization`` (well under the red line,
  so the next compression is dozens of turns away, not the next call);
- yellow zone: record the candidates (advisory), once per new boundary;
- if even full compression cannot fit the prompt (a giant pinned message),
  record ``budget_unreachable`` and log it. Pinned content is never dropped.

Every message leaving the active state is written to the archive first, keyed
by thread and id, so :meth:`TieredCompression.original` can return it. The
rewrite is a persistent update (``RemoveMessage(REMOVE_ALL)`` then the new
list, so summaries land in their place), and the node sees the same list.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langgraph_ctx.archive import InMemoryArchive, MessageArchive
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import KEY, SUMMARY_PREFIX, summary_info
from langgraph_ctx.pipeline import (
    AsyncNext,
    CallContext,
    Middleware,
    Next,
    View,
    graph_namespace,
)
from langgraph_ctx.summarizers import (
    ChatModelSummarizer,
    ExtractiveSummarizer,
    Summarizer,
    entity_retention,
)
from langgraph_ctx.tiers import Plan, plan_compression

logger = logging.getLogger("langgraph_ctx.compression")

_fallbacks: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "lgctx_summarizer_fallbacks", default=None
)


def _note_fallback(reason: str, exc: BaseException | None) -> None:
    sink = _fallbacks.get()
    if sink is not None:
        sink.append(reason if exc is None else f"{reason}: {type(exc).__name__}: {exc}")


class TieredCompression(Middleware):
    """Compresses old history into ``[Conversation Summary]`` messages, incrementally."""

    name = "compression"
    priority = 30
    default_nodes = ("call_llm", "think")

    def __init__(
        self,
        *,
        summarizer: Summarizer | BaseChatModel | None = None,
        archive: MessageArchive | None = None,
        target_utilization: float = 0.55,
        min_protected_turns: int = 3,
        protected_share: float = 0.5,
        expected_ratio: float = 5.0,
        summary_tokens: tuple[int, int] = (150, 2_000),
        max_summary_layers: int = 4,
        max_summary_share: float = 0.25,
        pin_task: bool = True,
        summarizer_timeout: float | None = 30.0,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            summarizer: a :class:`Summarizer`, or a chat model (usually a small
                one) wrapped in :class:`ChatModelSummarizer` with the extractive
                summarizer as fallback. Default: extractive, offline.
            archive: where removed messages go. Default: in-process.
            target_utilization: compress down to this share of the window.
            min_protected_turns: the protected window's floor, in turns.
            protected_share: cap of the protected window, as a share of the
                (rebalanced) message allocation.
            expected_ratio: the compression ratio to plan with; a summary gets
                ``span / expected_ratio`` tokens, within ``summary_tokens``.
            max_summary_layers: more summaries than this are consolidated.
            max_summary_share: so are summaries above this share of the
                message allocation.
            pin_task: keep the session's first user message verbatim.
            summarizer_timeout: for a chat-model summarizer, seconds.
        """
        super().__init__(**kwargs)
        _check_share("target_utilization", target_utilization)
        _check_share("protected_share", protected_share)
        _check_share("max_summary_share", max_summary_share)
        if min_protected_turns < 1:
            raise ConfigurationError(
                "min_protected_turns", f"must be >= 1, got {min_protected_turns}"
            )
        if expected_ratio < 1:
            raise ConfigurationError("expected_ratio", f"must be >= 1, got {expected_ratio}")
        if not 0 < summary_tokens[0] <= summary_tokens[1]:
            raise ConfigurationError(
                "summary_tokens", f"need 0 < low <= high, got {summary_tokens}"
            )
        if max_summary_layers < 1:
            raise ConfigurationError(
                "max_summary_layers", f"must be >= 1, got {max_summary_layers}"
            )
        if isinstance(summarizer, BaseChatModel):
            summarizer = ChatModelSummarizer(
                summarizer, timeout=summarizer_timeout, on_fallback=_note_fallback
            )
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self.archive: MessageArchive = archive if archive is not None else InMemoryArchive()
        self.target_utilization = target_utilization
        self.min_protected_turns = min_protected_turns
        self.protected_share = protected_share
        self.expected_ratio = expected_ratio
        self.summary_tokens = summary_tokens
        self.max_summary_layers = max_summary_layers
        self.max_summary_share = max_summary_share
        self.pin_task = pin_task

    # -- the middleware ----------------------------------------------------

    def __call__(self, view: View, config: RunnableConfig, ctx: CallContext, next: Next) -> Any:
        work = self._decide(view, ctx)
        if work is None:
            return next(view)
        plan, max_tokens = work
        sink: list[str] = []
        token = _fallbacks.set(sink)
        try:
            texts = [self.summarizer.summarize(plan.compress, max_tokens=max_tokens)]
            layers = self._layers(plan, texts[0], ctx)
            if layers is not None:
                texts.append(self.summarizer.summarize(layers, max_tokens=self.summary_tokens[1]))
        finally:
            _fallbacks.reset(token)
        self._archive_sync(plan, layers, ctx)
        return next(self._apply(view, ctx, plan, texts, layers, sink))

    async def acall(
        self, view: View, config: RunnableConfig, ctx: CallContext, next: AsyncNext
    ) -> Any:
        work = self._decide(view, ctx)
        if work is None:
            return await next(view)
        plan, max_tokens = work
        sink: list[str] = []
        token = _fallbacks.set(sink)
        try:
            texts = [await self.summarizer.asummarize(plan.compress, max_tokens=max_tokens)]
            layers = self._layers(plan, texts[0], ctx)
            if layers is not None:
                texts.append(
                    await self.summarizer.asummarize(layers, max_tokens=self.summary_tokens[1])
                )
        finally:
            _fallbacks.reset(token)
        thread, ns = _scope(ctx)
        await self.archive.aput(thread, plan.compress, reason="compressed", namespace=ns)
        if layers is not None:
            await self.archive.aput(
                thread, plan.tiers.summaries, reason="consolidated", namespace=ns
            )
        return await next(self._apply(view, ctx, plan, texts, layers, sink))

    def original(
        self, thread_id: str, message_id: str, *, namespace: str = ""
    ) -> BaseMessage | None:
        """Any message this middleware removed from a thread's active state."""
        return self.archive.get(thread_id, message_id, namespace=namespace)

    # -- the steps -----------------------------------------------------------

    def _decide(self, view: View, ctx: CallContext) -> tuple[Plan, int] | None:
        report = ctx.usage
        if report is None:
            raise ConfigurationError(
                "TieredCompression", "needs PreflightCheck to run before it on the same node"
            )
        messages: list[BaseMessage] = list(view.get("messages") or ())
        urgent = report.zone == "red" or "messages" in report.over
        if not urgent and report.zone != "yellow":
            return None
        calibration = max(report.calibration, 1e-6)
        count = ctx.session.cache.count_of
        free = report.raw_total - int(self.target_utilization * report.window / calibration)
        plan = plan_compression(
            messages,
            count,
            free_tokens=max(free, 1),
            expected_ratio=self.expected_ratio,
            min_turns=self.min_protected_turns,
            # The nominal allocation, not the rebalanced one: rebalancing grows
            # with usage, and the cap must not.
            max_protected_tokens=int(self.protected_share * ctx.budget.messages / calibration),
            pin_task=self.pin_task,
        )
        span = sum(count(m) for m in plan.compress)
        if not urgent:
            self._advise(plan, span, ctx)
            return None
        if not plan.compress:
            self._unreachable(plan, ctx, "nothing left to compress")
            return None
        low, high = self.summary_tokens
        return plan, min(high, max(low, int(span / self.expected_ratio)))

    def _advise(self, plan: Plan, span: int, ctx: CallContext) -> None:
        # Once per approach to the red line, not on every yellow call.
        if not plan.compress or ctx.session.scratch.get("compression_advised"):
            return
        ctx.session.scratch["compression_advised"] = True
        ctx.record(
            "compression_candidates",
            {"messages": len(plan.compress), "tokens": span, "through": plan.compress[-1].id},
        )

    def _layers(self, plan: Plan, new_text: str, ctx: CallContext) -> list[BaseMessage] | None:
        """Earlier summaries plus the new one, when they should be consolidated."""
        summaries = [*plan.tiers.summaries, SystemMessage(new_text)]
        tokens = sum(ctx.counter.count_text(m.text) for m in summaries)
        allowed = self.max_summary_share * ctx.budget.messages
        if len(summaries) > self.max_summary_layers or tokens > allowed:
            return summaries
        return None

    def _archive_sync(self, plan: Plan, layers: list[BaseMessage] | None, ctx: CallContext) -> None:
        thread, ns = _scope(ctx)
        self.archive.put(thread, plan.compress, reason="compressed", namespace=ns)
        if layers is not None:
            self.archive.put(thread, plan.tiers.summaries, reason="consolidated", namespace=ns)

    def _apply(
        self,
        view: View,
        ctx: CallContext,
        plan: Plan,
        texts: Sequence[str],
        layers: list[BaseMessage] | None,
        fallbacks: list[str],
    ) -> View:
        previous = plan.tiers.summaries
        seq = 1 + max((int((summary_info(m) or {}).get("seq", 0)) for m in previous), default=0)
        through = str(plan.compress[-1].id)
        summary = _summary_message(texts[0], seq, through, covers=len(plan.compress))
        summaries = [*previous, summary]
        if layers is not None:
            summaries = [
                _summary_message(texts[-1], seq + 1, through, covers=len(layers), meta=True)
            ]
        messages = plan.messages(summaries)
        ctx.persist(self.name, messages=[RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages])

        count = ctx.session.cache.count_of
        before = sum(count(m) for m in plan.compress)
        removed = before + (sum(count(m) for m in previous) if layers is not None else 0)
        added = sum(count(m) for m in summaries[-1:] if m not in previous)
        ctx.session.cache.forget([str(m.id) for m in plan.compress])
        ctx.session.scratch["compression_advised"] = False
        report = ctx.adjust_usage("messages", added - removed)
        after = ctx.counter.count_text(texts[0])
        ctx.record(
            "compression",
            {
                "seq": seq,
                "messages": len(plan.compress),
                "through": through,
                "tokens_before": before,
                "tokens_after": after,
                "ratio": round(before / max(after, 1), 2),
                "entity_retention": round(entity_retention(plan.compress, texts[0]), 4),
                "meta": layers is not None,
                "utilization_after": round(report.utilization, 4),
            },
        )
        for reason in fallbacks:
            ctx.record("summarizer_fallback", {"reason": reason})
        if report.total > report.prompt_limit:
            self._unreachable(plan, ctx, "the protected window and pinned messages alone exceed it")
        return view.replace(messages=messages)

    def _unreachable(self, plan: Plan, ctx: CallContext, why: str) -> None:
        report = ctx.usage
        assert report is not None
        pinned = sum(ctx.session.cache.count_of(m) for m in plan.tiers.pinned)
        data = {
            "total": report.total,
            "prompt_limit": report.prompt_limit,
            "pinned_tokens": pinned,
            "reason": why,
        }
        ctx.record("budget_unreachable", data)
        logger.warning(
            "context budget cannot be met on node %r (total %d > limit %d, pinned %d tokens): %s; "
            "pinned content is kept",
            ctx.node,
            report.total,
            report.prompt_limit,
            pinned,
            why,
        )


def _summary_message(
    text: str, seq: int, through: str, *, covers: int, meta: bool = False
) -> SystemMessage:
    label = "meta-summary" if meta else "summary"
    return SystemMessage(
        f"{SUMMARY_PREFIX} #{seq} ({label} of {covers} messages, through {through})\n{text}",
        id=f"lgctx-summary-{seq}",
        additional_kwargs={KEY: {"summary": {"seq": seq, "through": through, "meta": meta}}},
    )


def _scope(ctx: CallContext) -> tuple[str, str]:
    return ctx.thread_id or "default", graph_namespace(ctx.config)


def _check_share(field: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ConfigurationError(field, f"must be between 0 and 1, got {value}")
