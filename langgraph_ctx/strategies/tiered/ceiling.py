"""The hard ceiling: the history itself kept within the prompt limit.

Compression plans with expected ratios and leaves results it compacted alone, so
one tool result larger than the window could still be over it. Here, in order,
each step only if the last left it over: the largest tool results not pinned are
reduced (compacted again, down to what fits, then cut with a marker); everything
before the current turn is compressed again, with the summaries, into one
meta-summary of the smallest size; the tool results kept are reduced again. The
originals are archived first; the ledger has ``ceiling_enforced`` and a
``compression`` event with ``path: ceiling``. What is still over then (pinned
content, a current turn larger than the window) is left to pre-flight's guard
(:meth:`PreflightCheck.fit`), which fits this call's prompt or raises
:class:`BudgetExceededError` before the model is called.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage

from langgraph_ctx.compression.ceiling import fit_prompt
from langgraph_ctx.edits.core import EditOp
from langgraph_ctx.history.structure import Plan, split_tiers, turn_starts
from langgraph_ctx.ledger.core import CeilingChecked
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View
from langgraph_ctx.strategies.recall_room import recall_share
from langgraph_ctx.strategies.tiered.planner import Work
from langgraph_ctx.strategies.tiered.summaries import reporting

if TYPE_CHECKING:
    from langgraph_ctx.strategies.tiered.middleware import TieredCompression


def enforce_ceiling(strategy: TieredCompression, view: View, ctx: CallContext) -> Hook[View]:
    """Keep the history itself within the prompt limit, before pre-flight's
    last-line guard has to fit the prompt on every call (the module says how)."""
    if over_limit(ctx) <= 0:
        return view
    view = yield from _reduce_results(strategy, view, ctx)
    if over_limit(ctx) > 0:
        view = yield from _compress_again(strategy, view, ctx)
        if over_limit(ctx) > 0:
            view = yield from _reduce_results(strategy, view, ctx)
    return view


def over_limit(ctx: CallContext) -> int:
    """Raw tokens the prompt, as measured now, is over its limit (<= 0: within it),
    recall's additions left out: they give way to the history, never the reverse."""
    report = ctx.measured()
    total = report.total - recall_share(ctx)
    return math.ceil((total - report.prompt_limit) / max(report.calibration, 1e-6))


def _reduce_results(strategy: TieredCompression, view: View, ctx: CallContext) -> Hook[View]:
    messages: list[BaseMessage] = list(view.get("messages") or ())
    count = ctx.session.cache.count_of
    fit = fit_prompt(
        messages,
        over_limit(ctx),
        count,
        ctx.counter,
        pin_task=strategy.pin_task,
        compactor=strategy.compactor,
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
    view, edit = yield from strategy.edit(view, ctx, ops, reason="compacted")
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


def _compress_again(strategy: TieredCompression, view: View, ctx: CallContext) -> Hook[View]:
    """Everything before the current turn, with the summaries, into one
    meta-summary of the smallest size (``summary_tokens[0]``)."""
    messages: list[BaseMessage] = list(view.get("messages") or ())
    tiers = split_tiers(messages, pin_task=strategy.pin_task)
    current = turn_starts(tiers.rest)[-1] if tiers.rest else 0
    if current == 0:
        return view  # only the current turn is left: the guard fits it
    plan = Plan(
        tiers=tiers,
        compress=tiers.rest[:current],
        keep=tiers.rest[current:],
        protected=len(tiers.rest) - current,
    )
    work = Work(plan, [*tiers.summaries, *plan.compress], strategy.summary_tokens[0], meta=True)
    fallbacks: list[str] = []
    summarizer = reporting(strategy.summarizer, fallbacks)
    text = yield IOCall(
        partial(summarizer.summarize, work.source, max_tokens=work.max_tokens),
        partial(summarizer.asummarize, work.source, max_tokens=work.max_tokens),
    )
    return (
        yield from strategy.apply_work(view, ctx, work, text, fallbacks, path=("ceiling", "none"))
    )
