"""The summary prepared ahead: made in the yellow zone, applied at the red line.

In the yellow zone, :func:`prepare_ahead` plans the compression the call
crossing the red line will need and summarizes its span in the background (a
task on the running loop for a model summarizer under ``ainvoke``, else a
thread of the package's small pool), while the node waits on its model or
tools. The crossing call takes it with :func:`take_prepared` if it still
describes the history; else it says why not, and the ledger's ``compression``
event carries that (``prepared``): ``none``, ``failed``, ``not_ready``,
``overtaken``, ``compaction``, ``span_mismatch``, ``needs_consolidation``, or,
applied, ``ready``, ``short`` or ``waited``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from functools import partial

from langchain_core.messages import BaseMessage

from langgraph_ctx.compression.summarizers import (
    ChatModelSummarizer,
    Summarizer,
    entity_retention,
)
from langgraph_ctx.history import jobs as _prepare
from langgraph_ctx.history.structure import Plan, split_tiers
from langgraph_ctx.ledger.core import PreparedOutcome
from langgraph_ctx.pipeline import CallContext, View
from langgraph_ctx.strategies.tiered.planner import BudgetFigures, Count, TierPlanner, Work
from langgraph_ctx.strategies.tiered.summaries import reporting
from langgraph_ctx.tokens import TokenCounter

REPLAN_SHARE = 0.1
"""A ready prepared summary is checked against a new plan once the messages have
grown by this share of the span it covers (not on every yellow call)."""
SHORT_SPAN_SHARE = 0.75
"""A prepared span that frees at least this share of what the synchronous plan
would is applied (``prepared: short``) rather than made again on the call..."""
SHORT_OVER_GOAL = 0.5
"""...unless the messages it leaves exceed the compression target by more than
this share of it."""
PREPARED = "compression_prepared"
"""The session scratch key of the compression prepared ahead (memory only)."""


def prepare_ahead(
    planner: TierPlanner,
    summarizer: Summarizer,
    view: View,
    ctx: CallContext,
    figures: BudgetFigures,
) -> None:
    """In the yellow zone, start summarizing what the next compression removes
    (``figures``: this call's, as the planner read them)."""
    if figures.zone != "yellow":
        return
    scratch = ctx.session.scratch
    pending: _prepare.Prepared | None = scratch.get(PREPARED)
    # The messages' tokens, raw (as the cache counts).
    used = figures.raw(figures.messages_used)
    messages: list[BaseMessage] = list(view.get("messages") or ())
    count = ctx.session.cache.count_of
    work = None
    if pending is not None:
        tiers = split_tiers(messages, pin_task=planner.pin_task)
        if pending.fits(tiers.summaries, tiers.rest):
            if not pending.future.done():
                return  # under way; refreshed, if need be, once it is done
            if used - pending.planned_at < REPLAN_SHARE * pending.tokens:
                # Planning is a pass over the history: not on every yellow call,
                # only once it has grown enough to move the span. (A span a
                # turn short is still applied at the crossing: ``short``.)
                return
            work = planner.decide(messages, count, figures, ahead=True).work
            if work is None or (
                len(pending.span) >= len(work.plan.compress) and pending.meta >= work.meta
            ):
                pending.planned_at = used
                return  # ready, and still covers what the crossing call will need
        # Overtaken (a message it covers changed) or outgrown (the history grew
        # past what it covers): made again for the history as it is now.
        pending.discard()
        del scratch[PREPARED]
    work = work or planner.decide(messages, count, figures, ahead=True).work
    if work is None or not work.source or work.compact:
        return  # the crossing call must compact kept tool results: nothing to prepare
    source, max_tokens = list(work.source), work.max_tokens
    summaries = work.plan.tiers.summaries
    span = work.plan.compress

    counter = ctx.counter

    def run() -> _prepare.Outcome:
        reasons: list[str] = []
        text = reporting(summarizer, reasons).summarize(source, max_tokens=max_tokens)
        return text, reasons, entity_retention(source, text), counter.count_text(text)

    async def arun() -> _prepare.Outcome:
        reasons: list[str] = []
        text = await reporting(summarizer, reasons).asummarize(source, max_tokens=max_tokens)
        # CPU work: in the pool, not on the loop.
        measure = partial(_measure, source, text, counter)
        retention, written = await asyncio.wrap_future(_prepare.pool().submit(measure))
        return text, reasons, retention, written

    scratch[PREPARED] = _prepare.start(
        summaries,
        span,
        meta=work.meta,
        max_tokens=max_tokens,
        tokens=sum(ctx.session.cache.count_of(m) for m in span),
        planned_at=used,
        run=run,
        # Only a model does I/O worth a task on the loop; the extractive
        # summarizer is CPU work, which would stall the loop: a thread.
        arun=arun if isinstance(summarizer, ChatModelSummarizer) else None,
    )


def take_prepared(
    planner: TierPlanner, work: Work, ctx: CallContext, figures: BudgetFigures
) -> tuple[tuple[Work, _prepare.Prepared] | None, PreparedOutcome]:
    """The compression prepared ahead, as work to apply with its summary, if it is
    still right for this history (ready, or under way and waitable); else
    ``None``, and why not."""
    pending: _prepare.Prepared | None = ctx.session.scratch.pop(PREPARED, None)
    if pending is None:
        return None, "none"
    plan = work.plan
    tiers = plan.tiers
    # The synchronous plan keeps len(plan.keep) messages; the protected window
    # is the tail of them, which a prepared span must not reach into.
    compressible = len(tiers.rest) - plan.protected
    n = len(pending.span)
    why: PreparedOutcome | None = None
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
    elif n < len(plan.compress) and not _frees_enough(
        planner, list(tiers.rest[:n]), pending, plan, ctx.session.cache.count_of, figures
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
    ahead = Work(
        dataclasses.replace(plan, compress=rest[:n], keep=rest[n:]),
        source,
        pending.max_tokens,
        meta=pending.meta,
    )
    return (ahead, pending), why or "ready"


def _frees_enough(
    planner: TierPlanner,
    span: list[BaseMessage],
    pending: _prepare.Prepared,
    plan: Plan,
    count: Count,
    figures: BudgetFigures,
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
    freed = sum(count(m) for m in span)
    line, goal = planner.line_and_goal(plan.tiers, count, figures)  # raw, as the cache counts
    used = figures.raw(figures.messages_used)
    most = freed >= SHORT_SPAN_SHARE * sum(count(m) for m in plan.compress)
    if pending.meta:  # the summary replaces the earlier layers too
        freed += sum(count(m) for m in plan.tiers.summaries)
    ready = pending.outcome()
    written = ready[3] if ready is not None else pending.max_tokens
    left = used - freed + written
    return left <= goal * (1 + SHORT_OVER_GOAL) and (most or left <= (goal + line) // 2)


def _measure(source: list[BaseMessage], text: str, counter: TokenCounter) -> tuple[float, int]:
    return entity_retention(source, text), counter.count_text(text)
