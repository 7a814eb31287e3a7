"""What recall adds to a prompt, for a strategy to leave out of its decisions.

With ``recall=True`` a prompt carries this call's recall block, the lines kept
from earlier calls (``recall_refresh``'s blocks, counted by pre-flight as system
content) and the ``glimpse`` tool's schema. A strategy decides when and how far
to compress, fold or cut on the prompt without this call's block and the schema,
and aims (the line and goal a compression works to) without the kept lines too,
since a compression gives them up. The kept lines alone still count towards the
trigger: compression makes room for them, so that they stay byte-identical (a
cached prefix) until it runs. A deeper aim, or the schema and this call's block
counted, had recall take turns from the history that word search could not find
again: recall on kept fewer answers than recall off.
"""

from __future__ import annotations

from langgraph_ctx.budget import UsageReport, measure
from langgraph_ctx.middleware import glimpse
from langgraph_ctx.pipeline import CallContext


def kept_recall(ctx: CallContext) -> int:
    """Calibrated tokens of the recall blocks kept for the current prefix
    (``ctx.session.reserved``, counted as system content)."""
    return ctx.session.calibration.apply(sum(ctx.session.reserved.values()))


def recall_share(ctx: CallContext) -> int:
    """Calibrated tokens recall adds to this call's prompt: its kept blocks and the
    ``glimpse`` schema it binds (:func:`~langgraph_ctx.middleware.glimpse.bound_tokens`)."""
    return kept_recall(ctx) + glimpse.bound_tokens(ctx)


def without_recall(ctx: CallContext) -> UsageReport:
    """The usage report of this call without the ``glimpse`` schema in the tools, the
    budget rebalanced over what is left (this call's recall block is not in it yet:
    recall runs after the strategy). Its ``zone``, ``over`` and ``total`` are what a
    strategy triggers on: with the schema in them, the history was found over its
    rebalanced allocation (or in the red) sooner with recall on than off."""
    report = ctx.measured()
    used = dict(report.used)
    # Recall's kept blocks stay counted: a strategy makes room for them (they are
    # given up at a compression), so that they stay byte-identical in between.
    used["tools"] = max(0, used.get("tools", 0) - glimpse.bound_tokens(ctx))
    return measure(
        ctx.budget,
        used,
        calibration=report.calibration,
        raw_total=report.raw_total,
    )
