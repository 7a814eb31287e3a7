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

Every rewrite goes through the edit core (:func:`~langgraph_ctx.edits.apply_edits`,
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
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from langgraph_ctx import ledger
from langgraph_ctx._checks import check_bool, check_has, check_int, check_number, check_timeout
from langgraph_ctx.budget import Budget, UsageReport
from langgraph_ctx.compression.ceiling import (
    COMPACT_FLOOR,
    compact_tool_result,
    fit_prompt,
)
from langgraph_ctx.compression.summarizers import (
    ChatModelSummarizer,
    ExtractiveSummarizer,
    Summarizer,
    entity_retention,
)
from langgraph_ctx.edits import EditOp
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.history import (
    Plan,
    Tiers,
    plan_compression,
    split_tiers,
    turn_starts,
)
from langgraph_ctx.history import jobs as _prepare
from langgraph_ctx.ledger.core import CeilingChecked
from langgraph_ctx.markers import (
    KEY,
    SUMMARY_ID,
    SUMMARY_PREFIX,
    is_compacted,
    is_summary,
    summary_info,
)
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.base import RewritingStrategy
from langgraph_ctx.strategies.recall_room import kept_recall, recall_share, without_recall
from langgraph_ctx.tokens import TokenCounter

logger = logging.getLogger("langgraph_ctx.compression")

COMPACT_MIN_TOKENS = 200
"""Tool results smaller than this are never compacted: too little to gain."""
_fallbacks: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "lgctx_summarizer_fallbacks", default=None
)


@contextlib.contextmanager
def _collecting_fallbacks() -> Iterator[list[str]]:
    """Collect, for this call only, why the (shared) summarizer fell back."""
    reasons: list[str] = []
    token = _fallbacks.set(reasons)
    try:
        yield reasons
    finally:
        _fallbacks.reset(token)


def _note_fallback(reason: str, exc: BaseException | None) -> None:
    sink = _fallbacks.get()
    if sink is not None:
        sink.append(reason if exc is None else f"{reason}: {type(exc).__name__}: {exc}")


class TieredCompression(RewritingStrategy):
    """Compresses old history into ``[Conversation Summary]`` messages, incrementally."""

    name = "compression"
    # A later system message, or the think node's plan trace, goes with its turn.
    protection = "tiers"
    DEFAULT_TARGET = 0.7
    """``target_utilization`` by default: the next compression a third of the room away."""

    def __init__(
        self,
        *,
        summarizer: Summarizer | BaseChatModel | None = None,
        archive: MessageArchive | None = None,
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
            target_utilization: how far down a compression goes, as a share of
                the messages' room: the red line (capped by the prompt limit)
                minus what the system prompt, tools and auxiliary content use
                now. Relative to that room rather than to the whole window, so
                that a large pinned system prompt or many tool schemas do not
                squeeze the messages to a sliver of their budget, and so that
                after any compression the next one is ``1 - target`` of the
                room away. The trigger is unchanged: the red zone, or messages
                over their allocation.
            min_protected_turns: the protected window's floor, in turns.
            protected_share: cap of the protected window, as a share of the
                nominal message allocation (and never more than leaves the
                summaries their room under the target).
            expected_ratio: the compression ratio to plan with; a new summary
                layer gets ``span / expected_ratio`` tokens, within
                ``summary_tokens`` and the summary cap.
            summary_tokens: ``(low, high)``: bounds of any one summary.
            max_summary_layers: more summaries than this are consolidated.
            max_summary_share: the summaries' cap, as a share of the nominal
                message allocation: above it they are consolidated into one
                meta-summary written to at most this cap (and to the room left
                under the target), so summaries never grow to fill the budget.
            pin_task: keep the session's first user message verbatim.
            summarizer_timeout: for a chat-model summarizer, seconds.
            prepare_ahead: in the yellow zone, summarize the span the next
                compression will remove in the background (a task on the running
                loop for a model summarizer under ``ainvoke``, else a thread of
                the package's small pool), so that crossing the red line does not
                wait for the summarizer.
            prepare_headroom: the span prepared ahead is planned for messages
                this share of the red line above it. Default 0: planned for the
                red line itself, so it compresses what the synchronous path
                would, less the turn that crosses the line (a span short by
                that much is still applied: ``prepared: short``). A larger
                headroom covers that turn too, but compresses more than the
                synchronous path would.
        """
        super().__init__(archive=archive, pin_task=pin_task, **kwargs)
        if summarizer is not None and not isinstance(summarizer, BaseChatModel):
            check_has("summarizer", summarizer, ("summarize", "asummarize"), "a Summarizer")
        check_number("expected_ratio", expected_ratio)
        check_int("min_protected_turns", min_protected_turns)
        check_int("max_summary_layers", max_summary_layers)
        check_bool("prepare_ahead", prepare_ahead)
        check_number("prepare_headroom", prepare_headroom)
        check_timeout("summarizer_timeout", summarizer_timeout)
        if not (isinstance(summary_tokens, tuple) and len(summary_tokens) == 2):
            raise ConfigurationError(
                "summary_tokens", f"expected a (low, high) pair, got {summary_tokens!r}"
            )
        for bound in summary_tokens:
            check_int("summary_tokens", bound)
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
        if not 0.0 <= prepare_headroom < 1.0:
            raise ConfigurationError(
                "prepare_headroom", f"must be in [0, 1), got {prepare_headroom}"
            )
        if isinstance(summarizer, BaseChatModel):
            summarizer = ChatModelSummarizer(
                summarizer, timeout=summarizer_timeout, on_fallback=_note_fallback
            )
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self._own_summarizer = summarizer is None
        self._compactor = ExtractiveSummarizer()
        self.target_utilization = target_utilization
        self.min_protected_turns = min_protected_turns
        self.protected_share = protected_share
        self.expected_ratio = expected_ratio
        self.summary_tokens = summary_tokens
        self.max_summary_layers = max_summary_layers
        self.max_summary_share = max_summary_share
        self.prepare_ahead = prepare_ahead
        self.prepare_headroom = prepare_headroom

    # -- the middleware ----------------------------------------------------

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        if self._own_summarizer and isinstance(self.summarizer, ExtractiveSummarizer):
            # Sized with the pipeline's counter, so "300 tokens" means what budgets mean.
            self.summarizer.counter = ctx.counter
        work = self._decide(view, ctx)
        if work is None:
            self._prepare_ahead(view, ctx)
            return (yield from self._ceiling(view, ctx))
        ready, why = self._take_prepared(work, ctx)
        if ready is not None:
            ahead, pending = ready
            outcome = pending.outcome()
            if outcome is None:
                # Under way: waiting for the rest costs less than starting over.
                why = "waited"
                outcome = yield IOCall(pending.wait, pending.await_)
            if outcome is not None:
                summary, reasons, retention, written = outcome
                path = ("prepared", why)
                measured = (retention, written)
                view = yield from self._apply(
                    view, ctx, ahead, summary, reasons, path=path, measured=measured
                )
                return (yield from self._ceiling(view, ctx))
            why = "failed"
        text: str | None = None
        with _collecting_fallbacks() as fallbacks:
            if work.source:
                text = yield IOCall(
                    partial(self.summarizer.summarize, work.source, max_tokens=work.max_tokens),
                    partial(self.summarizer.asummarize, work.source, max_tokens=work.max_tokens),
                )
        view = yield from self._apply(view, ctx, work, text, fallbacks, path=("synchronous", why))
        return (yield from self._ceiling(view, ctx))

    # -- the steps -----------------------------------------------------------

    def _decide(self, view: View, ctx: CallContext, *, ahead: bool = False) -> _Work | None:
        """The compression this call needs (``None``: none). ``ahead``: the one the
        call crossing the red line will need, planned now (records nothing)."""
        report = ctx.measured()
        messages: list[BaseMessage] = list(view.get("messages") or ())
        # Zone and allocations without recall's additions: they never trigger a
        # compression recall off would not make (see strategies/recall_room.py).
        history = without_recall(ctx)
        zone = history.zone
        urgent = ahead or zone == "red" or "messages" in history.over
        if ctx.budget.messages_cap:  # the recall kept with them shares the cap
            used = report.used.get("messages", 0) + kept_recall(ctx)
            urgent = urgent or used > ctx.budget.messages
        if not urgent and zone != "yellow":
            return None
        if not urgent and ctx.session.scratch.get("compression_advised"):
            return None  # yellow, candidates already recorded: nothing to plan on this call
        calibration = max(report.calibration, 1e-6)
        count = ctx.session.cache.count_of
        # Everything below is in raw (uncalibrated) tokens, as the cache counts.
        tiers = split_tiers(messages, pin_task=self.pin_task)
        line, goal = self._line_and_goal(tiers, ctx)  # messages at the red line, and after
        pinned = sum(count(m) for m in tiers.pinned if m.type != "system")
        existing = sum(count(m) for m in tiers.summaries)
        low = self.summary_tokens[0]
        cap = self._summary_cap(ctx, calibration)
        used = int(report.used.get("messages", 0) / calibration)
        if ahead:  # as if at the red line (plus any headroom)
            used = max(used, line) + int(self.prepare_headroom * line)
        plan = plan_compression(
            messages,
            count,
            free_tokens=max(used - goal, 1),
            expected_ratio=self.expected_ratio,
            min_turns=self.min_protected_turns,
            # The nominal allocation, not the rebalanced one: rebalancing grows
            # with usage, and the cap must not. Nor may the protected window
            # take the room the summaries need to meet the goal.
            max_protected_tokens=min(
                int(self.protected_share * ctx.budget.messages / calibration),
                max(0, goal - pinned - cap),
            ),
            pin_task=self.pin_task,
            summary_cap=cap,
            tiers=tiers,
        )
        span = sum(count(m) for m in plan.compress)
        if not urgent:
            self._advise(plan, span, ctx)
            return None
        kept = sum(count(m) for m in plan.keep)
        # The least the summaries will take after this step: consolidated down to
        # the smallest layer if there is a span to compress, else as they are.
        smallest = low if plan.compress else existing
        # Turns kept verbatim may alone be too large (tool-heavy ones): compact
        # their tool results, oldest first, by what it takes to meet the goal.
        excess = pinned + kept + smallest - goal
        # With the partners a pin only drags along (a pin keeps a pair whole, not
        # its other results verbatim: see the tiers).
        loose = [m for m in tiers.dragged if isinstance(m, ToolMessage)]
        compact = _compactions([*loose, *plan.keep], count, excess, self.expected_ratio)
        kept -= sum(count(m) - size for m, size in compact)
        if not plan.compress:
            if not compact:
                # Not if it is the recall blocks kept that pass the line (the
                # messages fit it): placement gives them up (see _recall_refresh).
                if not ahead and used > line:
                    self._unreachable(plan, ctx, "nothing left to compress")
                return None
            return _Work(plan, [], 0, meta=False, compact=compact)
        # What the summaries may take and still meet the goal, within their cap.
        room = min(cap, goal - pinned - kept)
        if room < low:
            # The target is out of reach whatever the summary's size: then at least
            # stay under the red line, and let the summary have what is left there.
            room = min(cap, line - pinned - kept - 1)
        if not ahead and pinned + kept + low > goal and plan.protected == len(plan.keep):
            # Even the smallest summary leaves the history above the target: with
            # pinned content this large, compression will run on every call.
            self._unreachable(
                plan,
                ctx,
                f"pinned messages and the protected window alone exceed the compression "
                f"target ({goal} tokens of messages), so compression runs on every call",
            )
        layer = min(cap, max(low, int(span / self.expected_ratio)))
        summaries = plan.tiers.summaries
        if len(summaries) + 1 > self.max_summary_layers or existing + layer > max(room, low):
            # Consolidate: the earlier layers and the new span in one call, written
            # to the cap (or what the goal leaves), never to the budget's full size.
            return _Work(
                plan, [*summaries, *plan.compress], max(low, room), meta=True, compact=compact
            )
        return _Work(plan, plan.compress, layer, meta=False, compact=compact)

    def _line_and_goal(self, tiers: Tiers, ctx: CallContext) -> tuple[int, int]:
        """Raw tokens the messages may take at the red line, and what a compression
        brings them to: ``target_utilization`` of that, but never less than what it
        must keep anyway (the pinned messages, a summary at its cap and the
        ``min_protected_turns`` latest turns, within the protected window's cap),
        if that is under the line. A goal below that cannot be met: with a deep
        target at a small window, the protected turns were cut to the current one
        and every compression still ended ``budget_unreachable``."""
        report = ctx.measured()
        calibration = max(report.calibration, 1e-6)
        count = ctx.session.cache.count_of
        line = int(_room(report, ctx.budget, recall_share(ctx)) / calibration)
        protect = int(self.protected_share * ctx.budget.messages / calibration)
        keep = sum(count(m) for m in tiers.pinned if m.type != "system")
        keep += self._summary_cap(ctx, calibration)
        keep += _latest_turns(tiers.rest, self.min_protected_turns, protect, count)
        goal = int(self.target_utilization * line)
        if keep < line:
            return line, max(goal, keep)
        # Past the line (tool-heavy turns at a small window, or pinned content
        # that large, which budget_unreachable reports): the protected window
        # will be cut to fit anyway; a deep aim would cut it to the current turn,
        # the usual one keeps as many turns as recall off does.
        return line, max(goal, int(self.DEFAULT_TARGET * line))

    def _summary_cap(self, ctx: CallContext, calibration: float) -> int:
        """Raw tokens a summary may take: ``max_summary_share`` of the messages'
        allocation, within ``summary_tokens``."""
        low, high = self.summary_tokens
        share = int(self.max_summary_share * ctx.budget.messages / calibration)
        return max(low, min(high, share))

    def _advise(self, plan: Plan, span: int, ctx: CallContext) -> None:
        # Once per approach to the red line, not on every yellow call.
        if not plan.compress or ctx.session.scratch.get("compression_advised"):
            return
        ctx.session.scratch["compression_advised"] = True
        ctx.record(
            "compression_candidates",
            ledger.CompressionCandidates(
                messages=len(plan.compress), tokens=span, through=plan.compress[-1].id
            ),
        )

    def _apply(
        self,
        view: View,
        ctx: CallContext,
        work: _Work,
        text: str | None,
        fallbacks: list[str],
        *,
        path: tuple[str, str] = ("synchronous", "none"),
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
            compact_tool_result(m, size, count(m), self._compactor) for m, size in work.compact
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
        # Still over the prompt limit? ``_ceiling`` reduces tool results or raises.
        return view

    def _record(
        self,
        ctx: CallContext,
        work: _Work,
        summary: BaseMessage,
        text: str,
        summarized: int,
        measured: tuple[float, int] | None,
        path: tuple[str, str],
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

    def _ceiling(self, view: View, ctx: CallContext) -> Hook[View]:
        """Keep the history itself within the prompt limit, before pre-flight's
        last-line guard has to fit the prompt on every call.

        Compression plans with expected ratios and leaves results it compacted
        alone, so one tool result larger than the window could still be over
        it. Here, in order, each step only if the last left it over: the
        largest tool results not pinned are reduced (compacted again, down to
        what fits, then cut with a marker); everything before the current turn
        is compressed again, with the summaries, into one meta-summary of the
        smallest size; the tool results kept are reduced again. The originals
        are archived first; the ledger has ``ceiling_enforced`` and a
        ``compression`` event with ``path: ceiling``. What is still over then
        (pinned content, a current turn larger than the window) is left to
        pre-flight's guard (:meth:`PreflightCheck.fit`), which fits this call's
        prompt or raises :class:`BudgetExceededError` before the model is called.
        """
        if _over(ctx) <= 0:
            return view
        view = yield from self._reduce_results(view, ctx)
        if _over(ctx) > 0:
            view = yield from self._compress_again(view, ctx)
            if _over(ctx) > 0:
                view = yield from self._reduce_results(view, ctx)
        return view

    def _reduce_results(self, view: View, ctx: CallContext) -> Hook[View]:
        messages: list[BaseMessage] = list(view.get("messages") or ())
        count = ctx.session.cache.count_of
        fit = fit_prompt(
            messages,
            _over(ctx),
            count,
            ctx.counter,
            pin_task=self.pin_task,
            compactor=self._compactor,
            history=True,
        )
        if not fit.reduced:
            return view
        # Each reduced result is a rewrite keeping its id and tool call; an original
        # already compacted is in the archive as it first was (writes never replace).
        smaller = {str(m.id): m for m in fit.messages}
        ops = [
            EditOp.replacing([str(m.id)], smaller[str(m.id)], "reduced to fit the prompt limit")
            for m in fit.originals
        ]
        view, edit = yield from self.edit(view, ctx, ops, reason="compacted")
        if edit is None:
            return view  # refused or not archived: pre-flight's guard fits the prompt
        report = ctx.measured()
        ctx.record(
            "ceiling_enforced",
            CeilingChecked(
                scope="history",
                **fit.as_dict(),
                total_after=report.total,
                prompt_limit=report.prompt_limit,
            ),
        )
        return view

    def _compress_again(self, view: View, ctx: CallContext) -> Hook[View]:
        """Everything before the current turn, with the summaries, into one
        meta-summary of the smallest size (``summary_tokens[0]``)."""
        messages: list[BaseMessage] = list(view.get("messages") or ())
        tiers = split_tiers(messages, pin_task=self.pin_task)
        current = turn_starts(tiers.rest)[-1] if tiers.rest else 0
        if current == 0:
            return view  # only the current turn is left: the guard fits it
        plan = Plan(
            tiers=tiers,
            compress=tiers.rest[:current],
            keep=tiers.rest[current:],
            protected=len(tiers.rest) - current,
        )
        work = _Work(plan, [*tiers.summaries, *plan.compress], self.summary_tokens[0], meta=True)
        with _collecting_fallbacks() as fallbacks:
            text = yield IOCall(
                partial(self.summarizer.summarize, work.source, max_tokens=work.max_tokens),
                partial(self.summarizer.asummarize, work.source, max_tokens=work.max_tokens),
            )
        return (yield from self._apply(view, ctx, work, text, fallbacks, path=("ceiling", "none")))

    def _prepare_ahead(self, view: View, ctx: CallContext) -> None:
        """In the yellow zone, start summarizing what the next compression removes."""
        report = ctx.measured()
        if not self.prepare_ahead or without_recall(ctx).zone != "yellow":
            return
        scratch = ctx.session.scratch
        pending: _prepare.Prepared | None = scratch.get(_PREPARED)
        # The messages' tokens, raw (as the cache counts).
        used = int(report.used.get("messages", 0) / max(report.calibration, 1e-6))
        work = None
        if pending is not None:
            tiers = split_tiers(list(view.get("messages") or ()), pin_task=self.pin_task)
            if pending.fits(tiers.summaries, tiers.rest):
                if not pending.future.done():
                    return  # under way; refreshed, if need be, once it is done
                if used - pending.planned_at < REPLAN_SHARE * pending.tokens:
                    # Planning is a pass over the history: not on every yellow call,
                    # only once it has grown enough to move the span. (A span a
                    # turn short is still applied at the crossing: ``short``.)
                    return
                work = self._decide(view, ctx, ahead=True)
                if work is None or (
                    len(pending.span) >= len(work.plan.compress) and pending.meta >= work.meta
                ):
                    pending.planned_at = used
                    return  # ready, and still covers what the crossing call will need
            # Overtaken (a message it covers changed) or outgrown (the history grew
            # past what it covers): made again for the history as it is now.
            pending.discard()
            del scratch[_PREPARED]
        work = work or self._decide(view, ctx, ahead=True)
        if work is None or not work.source or work.compact:
            return  # the crossing call must compact kept tool results: nothing to prepare
        source, max_tokens = list(work.source), work.max_tokens
        summaries = work.plan.tiers.summaries
        span = work.plan.compress

        counter = ctx.counter

        def run() -> _prepare.Outcome:
            with _collecting_fallbacks() as reasons:
                text = self.summarizer.summarize(source, max_tokens=max_tokens)
            return text, reasons, entity_retention(source, text), counter.count_text(text)

        async def arun() -> _prepare.Outcome:
            with _collecting_fallbacks() as reasons:
                text = await self.summarizer.asummarize(source, max_tokens=max_tokens)
            # CPU work: in the pool, not on the loop.
            measure = partial(_measure, source, text, counter)
            retention, written = await asyncio.wrap_future(_prepare.pool().submit(measure))
            return text, reasons, retention, written

        scratch[_PREPARED] = _prepare.start(
            summaries,
            span,
            meta=work.meta,
            max_tokens=max_tokens,
            tokens=sum(ctx.session.cache.count_of(m) for m in span),
            planned_at=used,
            run=run,
            # Only a model does I/O worth a task on the loop; the extractive
            # summarizer is CPU work, which would stall the loop: a thread.
            arun=arun if isinstance(self.summarizer, ChatModelSummarizer) else None,
        )

    def _take_prepared(
        self, work: _Work, ctx: CallContext
    ) -> tuple[tuple[_Work, _prepare.Prepared] | None, str]:
        """The compression prepared ahead, as work to apply with its summary, if it is
        still right for this history (ready, or under way and waitable); else
        ``None``, and why not."""
        pending: _prepare.Prepared | None = ctx.session.scratch.pop(_PREPARED, None)
        if pending is None:
            return None, "none"
        plan = work.plan
        tiers = plan.tiers
        # The synchronous plan keeps len(plan.keep) messages; the protected window
        # is the tail of them, which a prepared span must not reach into.
        compressible = len(tiers.rest) - plan.protected
        n = len(pending.span)
        why = ""
        if pending.future.done() and pending.outcome() is None:
            why = "failed"
        elif not pending.waitable():
            why = "not_ready"
        elif not pending.fits(tiers.summaries, tiers.rest):
            why = "overtaken"  # never applied stale
        elif work.compact:
            why = "compaction"  # this call must also shrink kept tool results
        elif n > compressible:
            why = "span_mismatch"  # it would touch the protected turns
        elif n < len(plan.compress) and not self._frees_enough(
            list(tiers.rest[:n]), pending, plan, ctx
        ):
            why = "span_mismatch"  # it would free too little
        elif work.meta and not pending.meta:
            why = "needs_consolidation"
        if why:
            pending.discard()
            return None, why
        if n < len(plan.compress):
            why = "short"
        rest = tiers.rest
        summaries = tiers.summaries
        source = [*summaries, *rest[:n]] if pending.meta else list(rest[:n])
        ahead = _Work(
            _replace_plan(plan, rest[:n], rest[n:]), source, pending.max_tokens, meta=pending.meta
        )
        return (ahead, pending), why or "ready"

    def _frees_enough(
        self, span: list[BaseMessage], pending: _prepare.Prepared, plan: Plan, ctx: CallContext
    ) -> bool:
        # A span a turn or two short of the synchronous plan's (the crossing turn
        # went past the red line by more than the plan made ahead foresaw) is
        # applied if it frees most of what that plan would, or still takes the
        # history well under the red line: at most halfway from the goal to it.
        # The next compression comes a turn or two sooner, instead of this call
        # waiting for a new summary. But never if it leaves the messages far above
        # the goal: with a deep target (recall on) a span a quarter short keeps
        # twice the goal verbatim, and what a compression keeps is what a
        # provider's prompt cache misses after it.
        count = ctx.session.cache.count_of
        freed = sum(count(m) for m in span)
        report = ctx.measured()
        calibration = max(report.calibration, 1e-6)
        line, goal = self._line_and_goal(plan.tiers, ctx)  # raw, as the cache counts
        used = int(report.used.get("messages", 0) / calibration)
        most = freed >= SHORT_SPAN_SHARE * sum(count(m) for m in plan.compress)
        if pending.meta:  # the summary replaces the earlier layers too
            freed += sum(count(m) for m in plan.tiers.summaries)
        ready = pending.outcome()
        written = ready[3] if ready is not None else pending.max_tokens
        left = used - freed + written
        return left <= goal * (1 + SHORT_OVER_GOAL) and (most or left <= (goal + line) // 2)

    def _summary(self, work: _Work, text: str) -> SystemMessage:
        previous = work.plan.tiers.summaries
        seq = next_seq(previous)
        through = str(work.plan.compress[-1].id)
        covers = [str(m.id) for m in work.source]
        return _summary_message(text, seq, through, covers=covers, meta=work.meta)

    def _unreachable(self, plan: Plan, ctx: CallContext, why: str) -> None:
        report = ctx.measured()
        pinned = sum(ctx.session.cache.count_of(m) for m in plan.tiers.pinned)
        data = ledger.BudgetUnreachable(
            total=report.total, prompt_limit=report.prompt_limit, pinned_tokens=pinned, reason=why
        )
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


@dataclass(frozen=True, slots=True)
class _Work:
    """One compression: the plan, what the summarizer reads, and its budget."""

    plan: Plan
    source: list[BaseMessage]
    """The span to compress (empty if only tool results are compacted); for a
    consolidation, the earlier summaries before it."""
    max_tokens: int
    meta: bool
    compact: list[tuple[BaseMessage, int]] = field(default_factory=list)
    """Kept tool results to shrink in place, each with its digest's size."""

    def archive_reason(self) -> Callable[[BaseMessage], str]:
        """The archive's reason for each original this work removes.

        It names the summary that replaces it, so that a search hit says where
        its gist still is (``compressed into summary #3``)."""
        seq = next_seq(self.plan.tiers.summaries)
        compacted = {str(m.id) for m, _ in self.compact}

        def reason(message: BaseMessage) -> str:
            if str(message.id) in compacted:
                return "compacted"
            if is_summary(message):
                return f"consolidated into summary #{seq}"
            return f"compressed into summary #{seq}"

        return reason


REPLAN_SHARE = 0.1
"""A ready prepared summary is checked against a new plan once the messages have
grown by this share of the span it covers (not on every yellow call)."""
SHORT_SPAN_SHARE = 0.75
"""A prepared span that frees at least this share of what the synchronous plan
would is applied (``prepared: short``) rather than made again on the call..."""
SHORT_OVER_GOAL = 0.5
"""...unless the messages it leaves exceed the compression target by more than
this share of it."""


def _measure(source: list[BaseMessage], text: str, counter: TokenCounter) -> tuple[float, int]:
    return entity_retention(source, text), counter.count_text(text)


_PREPARED = "compression_prepared"
"""The session scratch key of the compression prepared ahead (memory only)."""


def _replace_plan(plan: Plan, compress: list[BaseMessage], keep: list[BaseMessage]) -> Plan:
    return dataclasses.replace(plan, compress=compress, keep=keep)


def _compactions(
    keep: list[BaseMessage], count: Callable[[BaseMessage], int], excess: int, ratio: float
) -> list[tuple[BaseMessage, int]]:
    """The oldest large tool results whose digests save ``excess`` tokens, with sizes.

    Results of ``COMPACT_MIN_TOKENS`` or more first; smaller ones (down to what a
    digest can still save) only if those are not enough."""
    chosen: dict[int, tuple[BaseMessage, int]] = {}
    for least in (COMPACT_MIN_TOKENS, COMPACT_FLOOR * 3 // 2):
        for m in keep:
            if excess <= 0:
                break
            tokens = count(m)
            usable = isinstance(m, ToolMessage) and not is_compacted(m)
            if usable and least <= tokens and id(m) not in chosen:
                size = max(COMPACT_FLOOR, int(tokens / ratio))
                chosen[id(m)] = (m, size)
                excess -= tokens - size
    return list(chosen.values())


def _over(ctx: CallContext) -> int:
    """Raw tokens the prompt, as measured now, is over its limit (<= 0: within it),
    recall's additions left out: they give way to the history, never the reverse."""
    report = ctx.measured()
    total = report.total - recall_share(ctx)
    return math.ceil((total - report.prompt_limit) / max(report.calibration, 1e-6))


def _room(report: UsageReport, budget: Budget, released: int = 0) -> int:
    """Calibrated tokens the messages may take before the prompt reaches the red line
    (which the prompt limit caps), given what the other components use now, less
    ``released`` (what a compression gives up with the prefix: the recall blocks
    kept for it); never more than a hard message cap (:attr:`Budget.messages_cap`)."""
    others = report.total - report.used.get("messages", 0) - released
    room = max(0, budget.red_line - others)
    return min(room, budget.messages) if budget.messages_cap else room


# The names the other strategy folders import (until they import recall_room).
_kept_recall, _recall_share = kept_recall, recall_share


def _release_kept_recall(ctx: CallContext) -> None:
    """A summary changed the prefix: the recall blocks kept for the old one are given
    up (placement starts them over), so they leave the usage report now, and recall,
    which runs next, sizes this call's block to the room the compression made."""
    raw = sum(ctx.session.reserved.values())
    ctx.session.reserved.clear()
    if raw and ctx.usage is not None:
        ctx.adjust_usage("system", -raw)


def _latest_turns(
    rest: list[BaseMessage], turns: int, cap: int, count: Callable[[BaseMessage], int]
) -> int:
    """Raw tokens of the ``turns`` latest turns of ``rest``, fewer while they pass
    ``cap`` (the protected window's rule), the current turn always."""
    starts = turn_starts(rest) if rest else [0]
    n = min(turns, len(starts))
    tokens = sum(count(m) for m in rest[starts[-n] :])
    while n > 1 and tokens > cap:
        n -= 1
        tokens = sum(count(m) for m in rest[starts[-n] :])
    return tokens


def next_seq(summaries: list[BaseMessage]) -> int:
    """The sequence number of the next summary after ``summaries``."""
    return 1 + max((int((summary_info(m) or {}).get("seq", 0)) for m in summaries), default=0)


def _summary_message(
    text: str, seq: int, through: str, *, covers: list[str], meta: bool = False
) -> SystemMessage:
    label = "meta-summary" if meta else "summary"
    # ``covers``: the ids it replaced (for a meta-summary, the summaries among them),
    # every one archived: what ``glimpse`` reads to bring summary #seq's originals back.
    info = {"seq": seq, "through": through, "meta": meta, "covers": covers}
    return SystemMessage(
        f"{SUMMARY_PREFIX} #{seq} ({label} of {len(covers)} messages, through {through})\n{text}",
        id=f"{SUMMARY_ID}{seq}",
        additional_kwargs={KEY: {"summary": info}},
    )


def fit_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` within ``max_tokens`` by ``counter``: whole lines dropped from the end,
    then the last line cut. A summarizer may count differently, or overrun."""
    if counter.count_text(text) <= max_tokens:
        return text
    lines = text.splitlines()
    while len(lines) > 1 and counter.count_text("\n".join(lines)) > max_tokens:
        lines.pop()
    kept = "\n".join(lines)
    while kept and counter.count_text(kept) > max_tokens:
        kept = kept[: int(len(kept) * 0.9)]
    return kept


def _check_share(field: str, value: float) -> None:
    check_number(field, value)
    if not 0.0 < value < 1.0:
        raise ConfigurationError(field, f"must be between 0 and 1, got {value}")
