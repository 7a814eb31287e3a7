"""What recall adds to a prompt, for a strategy to leave out of its decisions.

With ``recall=True`` a prompt carries recall's blocks (kept from earlier calls,
counted by pre-flight as system content) and the ``glimpse`` tool's schema. A
strategy decides on the prompt without them: when to compress, how deep, what to
fold or leave out are then the same as with recall off, and recall only fills
the room the history leaves. That is what makes "recall on never keeps fewer
answers than recall off" hold by construction rather than by tuning: a share
reserved for recall took turns from the history that word search then could not
find again.
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
    """The usage report of this call as recall off would have it: recall's kept blocks
    out of the system component, the ``glimpse`` schema out of the tools, the budget
    rebalanced over what is left. Its ``zone``, ``over`` and ``total`` are what a
    strategy decides on: with recall's share in them, the history was found over its
    rebalanced allocation (or in the red) sooner with recall on than off."""
    report = ctx.measured()
    used = dict(report.used)
    used["system"] = max(0, used.get("system", 0) - kept_recall(ctx))
    used["tools"] = max(0, used.get("tools", 0) - glimpse.bound_tokens(ctx))
    return measure(
        ctx.budget,
        used,
        calibration=report.calibration,
        raw_total=report.raw_total,
    )
