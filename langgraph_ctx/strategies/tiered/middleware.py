"""Tiered compression: summarize old history when the budget runs short, losing nothing.

Reads pre-flight's usage report (so it must run after :class:`PreflightCheck`):

- red zone, or messages over their rebalanced allocation: compress now,
  before the call, until the messages take ``target_utilization`` of the room
  they have under the red line (well under it, so the next compression is
  dozens of turns away, not the next call);
- yellow zone: record the candidates (advisory), once per new boundary, and
  prepare the next compression in the background (``prepare_ahead``): the
  summary of the span crossing the red line will remove, made while the node
  waits on its model or tools. The call that crosses the red line applies it if
  it is ready and still describes the history, else compresses synchronously;
  the ledger's ``compression`` event says which (``path``);
- if the turns it keeps verbatim are too large even then (a few tool-heavy
  turns can outgrow a small budget), compact their large tool results in
  place, oldest first: same message, same tool call id, an extractive digest
  as content, the original archived;
- if the target cannot be met (a large pinned message), record
  ``budget_unreachable`` and log it. Pinned content is never dropped;
- the hard ceiling: a history still over the prompt limit has its largest tool
  results reduced (compacted again, then cut with a marker, the originals
  archived), recorded as ``ceiling_enforced``; if that is not enough,
  everything before the current turn is compressed again into one small
  meta-summary (``path: ceiling``). Anything still over is pre-flight's
  last-line guard's (:meth:`PreflightCheck.fit`): it fits the prompt for the
  call, or raises :class:`~langgraph_ctx.errors.BudgetExceededError` before the
  model is called if even the pinned content cannot fit.

Every rewrite goes through the edit core (:func:`~langgraph_ctx.edits.apply.apply_edits`,
via :meth:`RewritingStrategy.edit`): the span becomes one merge operation whose
ready-made summary lands at the place of the last message it replaces, so after
the pinned messages among it and before the turns it keeps (a meta-summary
merges the earlier summaries and the span the same way); a compacted or cut tool
result is a rewrite keeping its id and its tool call. The core archives every
original first (keyed by thread and id, with a reason naming the summary that
replaced it, so :meth:`TieredCompression.original` returns it), keeps tool
exchanges whole and pinned messages untouched whoever planned the edit, persists
the new history with the node's update, adjusts the usage report and records
``context_edit`` with each operation's rationale; compression records what it
measured (``compression``, ``tool_results_compacted``, ``ceiling_enforced``). An
edit the core refuses leaves the history as it was.

This module is the glue; the parts are beside it: :mod:`.planner` (what to
compress, and to which goal), :mod:`.prepared` (the summary prepared ahead),
:mod:`.ceiling` (the hard ceiling) and :mod:`.summaries` (the summary messages).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx import ledger
from langgraph_ctx._checks import check_has, check_instance
from langgraph_ctx.compression.ceiling import compact_tool_result
from langgraph_ctx.compression.summarizers import (
    ExtractiveSummarizer,
    Summarizer,
    entity_retention,
)
from langgraph_ctx.edits.core import EditOp
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.core import CompressionPath, PreparedOutcome
from langgraph_ctx.markers import summary_info
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.base import RewritingStrategy
from langgraph_ctx.strategies.recall_room import kept_recall, recall_share, without_recall
from langgraph_ctx.strategies.tiered.ceiling import enforce_ceiling
from langgraph_ctx.strategies.tiered.planner import (
    BudgetFigures,
    TierPlan,
    TierPlanner,
    Work,
    messages_room,
)
from langgraph_ctx.strategies.tiered.prepared import prepare_ahead, take_prepared
from langgraph_ctx.strategies.tiered.settings import DEFAULT_TARGET as _DEFAULT_TARGET
from langgraph_ctx.strategies.tiered.settings import Shown, TieredSettings
from langgraph_ctx.strategies.tiered.summaries import (
    ReportingSummarizer,
    fit_text,
    next_seq,
    reporting,
    summary_message,
)

logger = logging.getLogger("langgraph_ctx.compression")


class TieredCompression(RewritingStrategy):
    """Compresses old history into ``[Conversation Summary]`` messages, incrementally."""

    name = "compression"
    # A later system message, or the think node's plan trace, goes with its turn.
    protection = "tiers"
    DEFAULT_TARGET = _DEFAULT_TARGET
    """``target_utilization`` by default: the next compression a third of the room away."""

    def __init__(
        self,
        *,
        summarizer: Summarizer | BaseChatModel | None = None,
        archive: MessageArchive | None = None,
        settings: TieredSettings | None = None,
        target_utilization: float = DEFAULT_TARGET,
        min_protected_turns: int = 3,
        protected_share: float = 0.5,
        expected_ratio: float = 5.0,
        summary_tokens: tuple[int, int] = (150, 2_000),
        max_summary_layers: int = 4,
        max_summary_share: float = 0.5,
        pin_task: bool = True,
        summarizer_timeout: float | None = 30.0,
        prepare_ahead: bool = True,
        prepare_headroom: float = 0.0,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            summarizer: a :class:`Summarizer`, or a chat model (usually a small
                one) wrapped in :class:`ChatModelSummarizer` with the extractive
                summarizer as fallback. Default: extractive, offline.
            archive: where removed messages go. Default: in-process.
            settings: every setting below at once (:class:`TieredSettings`, the
                place each is documented and checked); the keywords below are the
                same fields one by one: give one or the other.
            target_utilization, min_protected_turns, protected_share,
                expected_ratio, summary_tokens, max_summary_layers,
                max_summary_share, summarizer_timeout, prepare_ahead,
                prepare_headroom: :class:`TieredSettings`' fields.
            pin_task: keep the session's first user message verbatim.
        """
        super().__init__(archive=archive, pin_task=pin_task, **kwargs)
        if summarizer is not None and not isinstance(summarizer, BaseChatModel):
            check_has("summarizer", summarizer, ("summarize", "asummarize"), "a Summarizer")
        given = TieredSettings(
            target_utilization=target_utilization,
            min_protected_turns=min_protected_turns,
            protected_share=protected_share,
            expected_ratio=expected_ratio,
            summary_tokens=summary_tokens,
            max_summary_layers=max_summary_layers,
            max_summary_share=max_summary_share,
            summarizer_timeout=summarizer_timeout,
            prepare_ahead=prepare_ahead,
            prepare_headroom=prepare_headroom,
        )
        if settings is not None:
            check_instance("settings", settings, TieredSettings, "TieredSettings(...)")
            if given != TieredSettings():
                raise ConfigurationError(
                    "settings", "give settings= or its fields as keywords, not both"
                )
            given = settings
        self.settings = given
        """What to compress, to which goal, and how summaries are made: fixed at
        construction (the planner reads it; the properties below show its fields)."""
        if isinstance(summarizer, BaseChatModel):
            summarizer = ReportingSummarizer(summarizer, timeout=given.summarizer_timeout)
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self._own_summarizer = summarizer is None
        self.compactor = ExtractiveSummarizer()
        """Writes the digests of compacted tool results (offline, whatever the summarizer)."""
        self.planner = TierPlanner(given, pin_task=self.pin_task)
        """What to compress and to which goal, by :attr:`settings`."""

    # The settings' fields, read-only (TieredSettings documents them).
    target_utilization = Shown[float]()
    min_protected_turns = Shown[int]()
    protected_share = Shown[float]()
    expected_ratio = Shown[float]()
    summary_tokens = Shown[tuple[int, int]]()
    max_summary_layers = Shown[int]()
    max_summary_share = Shown[float]()
    prepare_headroom = Shown[float]()
    prepare_ahead = Shown[bool]()

    # -- the middleware ----------------------------------------------------

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        if self._own_summarizer and isinstance(self.summarizer, ExtractiveSummarizer):
            # Sized with the pipeline's counter, so "300 tokens" means what budgets mean.
            self.summarizer.counter = ctx.counter
        # The planner is pure: its inputs are gathered here, and what it found recorded.
        figures = budget_figures(ctx)
        messages: list[BaseMessage] = list(view.get("messages") or ())
        advised = bool(ctx.session.scratch.get("compression_advised"))
        count = ctx.session.cache.count_of
        plan = self.planner.decide(messages, count, figures, advised=advised)
        record_findings(plan, ctx)
        if plan.work is not None:
            view = yield from self._compress(view, ctx, plan.work, figures)
        elif self.prepare_ahead:
            prepare_ahead(self.planner, self.summarizer, view, ctx, figures)
        return (yield from enforce_ceiling(self, view, ctx))

    def _compress(
        self, view: View, ctx: CallContext, work: Work, figures: BudgetFigures
    ) -> Hook[View]:
        """Apply ``work``: with the summary prepared ahead if it is still right for
        this history (waiting for it if it is under way), else one made now."""
        ready, why = take_prepared(self.planner, work, ctx, figures)
        if ready is not None:
            ahead, pending = ready
            outcome = pending.outcome()
            if outcome is None:
                # Under way: waiting for the rest costs less than starting over.
                why = "waited"
                outcome = yield IOCall(pending.wait, pending.await_)
            if outcome is not None:
                summary, reasons, retention, written = outcome
                return (
                    yield from self.apply_work(
                        view,
                        ctx,
                        ahead,
                        summary,
                        reasons,
                        path=("prepared", why),
                        measured=(retention, written),
                    )
                )
            why = "failed"
        text: str | None = None
        fallbacks: list[str] = []
        summarizer = reporting(self.summarizer, fallbacks)
        if work.source:
            text = yield IOCall(
                partial(summarizer.summarize, work.source, max_tokens=work.max_tokens),
                partial(summarizer.asummarize, work.source, max_tokens=work.max_tokens),
            )
        return (
            yield from self.apply_work(view, ctx, work, text, fallbacks, path=("synchronous", why))
        )

    def apply_work(
        self,
        view: View,
        ctx: CallContext,
        work: Work,
        text: str | None,
        fallbacks: list[str],
        *,
        path: tuple[CompressionPath, PreparedOutcome] = ("synchronous", "none"),
        measured: tuple[float, int] | None = None,
    ) -> Hook[View]:
        """``work`` as edit operations through the core: the span (with the earlier
        summaries, for a meta-summary) merged into its summary, each kept tool
        result to compact rewritten as its digest. Then what it measured."""
        plan, count = work.plan, ctx.session.cache.count_of
        # Counted before the core forgets the originals' counts.
        summarized = sum(count(m) for m in work.source)
        compacted = sum(count(m) for m, _ in work.compact)
        digests = [
            compact_tool_result(m, size, count(m), self.compactor) for m, size in work.compact
        ]
        ops = [EditOp.replacing([str(d.id)], d, "compacted") for d in digests]
        summary = None
        if text is not None:
            # Measured ahead (a prepared summary, counted with this counter): no
            # need to count it again on the call that crosses the red line.
            if measured is None or measured[1] > work.max_tokens:
                fitted = fit_text(text, work.max_tokens, ctx.counter)
                text, measured = (text, measured) if fitted == text else (fitted, None)
            summary = self._summary(work, text)
            replaced = [*plan.tiers.summaries, *plan.compress] if work.meta else plan.compress
            seq = (summary_info(summary) or {})["seq"]
            why = f"{'consolidated' if work.meta else 'compressed'} into summary #{seq}"
            # At the span's end: after the pinned messages among it (the task, when
            # something came before it), before the turns it keeps.
            merge = EditOp.replacing([str(m.id) for m in replaced], summary, why, place="last")
            ops.insert(0, merge)
        view, edit = yield from self.edit(view, ctx, ops, reason=work.archive_reason())
        # (None: the core refused the edit or could not archive, and recorded why;
        # the history is as it was.)
        if edit is not None:
            ctx.session.scratch["compression_advised"] = False
            if digests:
                after = sum(count(m) for m in digests)
                ctx.record(
                    "tool_results_compacted",
                    ledger.ToolResultsCompacted(
                        ids=[str(m.id) for m in digests],
                        tokens_before=compacted,
                        tokens_after=after,
                    ),
                )
            if summary is not None and text is not None:
                _release_kept_recall(ctx)
                self._record(ctx, work, summary, text, summarized, measured, path)
        for reason in fallbacks:
            ctx.record("summarizer_fallback", ledger.SummarizerFallback(reason=reason))
        # Still over the prompt limit? ``enforce_ceiling`` reduces tool results or raises.
        return view

    def _record(
        self,
        ctx: CallContext,
        work: Work,
        summary: BaseMessage,
        text: str,
        summarized: int,
        measured: tuple[float, int] | None,
        path: tuple[CompressionPath, PreparedOutcome],
    ) -> None:
        # (Entity retention and size, if not measured already in the background.)
        written = measured[1] if measured else ctx.counter.count_text(text)
        retention = measured[0] if measured else entity_retention(work.source, text)
        info = summary_info(summary) or {}
        ctx.record(
            "compression",
            ledger.Compression(
                {
                    "seq": info["seq"],
                    "messages": len(work.plan.compress),
                    "through": info["through"],
                    "tokens_before": summarized,
                    "tokens_after": written,
                    "max_tokens": work.max_tokens,  # what the summarizer was asked for
                    "ratio": round(summarized / max(written, 1), 2),
                    "entity_retention": round(retention, 4),
                    "meta": work.meta,
                    "utilization_after": round(ctx.measured().utilization, 4),
                    # Whether a summary prepared ahead was used, and if not, why not.
                    "path": path[0],
                    "prepared": path[1],
                }
            ),
        )

    def _summary(self, work: Work, text: str) -> SystemMessage:
        previous = work.plan.tiers.summaries
        seq = next_seq(previous)
        through = str(work.plan.compress[-1].id)
        covers = [str(m.id) for m in work.source]
        return summary_message(text, seq, through, covers=covers, meta=work.meta)


def budget_figures(ctx: CallContext) -> BudgetFigures:
    """The budget numbers the planner reads, from pre-flight's report for this call
    (zone and allocations without recall's additions: strategies/recall_room.py)."""
    report = ctx.measured()
    history = without_recall(ctx)
    return BudgetFigures(
        zone=history.zone,
        messages_over="messages" in history.over,
        messages_used=report.used.get("messages", 0),
        messages_budget=ctx.budget.messages,
        messages_capped=ctx.budget.messages_cap,
        kept_recall=kept_recall(ctx),
        room=messages_room(report, ctx.budget, recall_share(ctx)),
        calibration=report.calibration,
    )


def record_findings(plan: TierPlan, ctx: CallContext) -> None:
    """Record what the planner found on the way (before its work is applied)."""
    if plan.candidates is not None:
        # Once per approach to the red line, not on every yellow call.
        ctx.session.scratch["compression_advised"] = True
        found = plan.candidates
        ctx.record(
            "compression_candidates",
            ledger.CompressionCandidates(
                messages=found.messages, tokens=found.tokens, through=found.through
            ),
        )
    if plan.unreachable is not None:
        report = ctx.measured()
        pinned, why = plan.unreachable.pinned_tokens, plan.unreachable.reason
        data = ledger.BudgetUnreachable(
            total=report.total, prompt_limit=report.prompt_limit, pinned_tokens=pinned, reason=why
        )
        ctx.record("budget_unreachable", data)
        logger.warning(
            "context budget cannot be met on node %r (total %d > limit %d, pinned %d tokens): "
            "%s; pinned content is kept",
            ctx.node,
            report.total,
            report.prompt_limit,
            pinned,
            why,
        )


def _release_kept_recall(ctx: CallContext) -> None:
    """A summary changed the prefix: the recall blocks kept for the old one are given
    up (placement starts them over), so they leave the usage report now, and recall,
    which runs next, sizes this call's block to the room the compression made."""
    raw = sum(ctx.session.reserved.values())
    ctx.session.reserved.clear()
    if raw and ctx.usage is not None:
        ctx.adjust_usage("system", -raw)
