"""BACM (arXiv "ContextBudget", ``strategy="bacm"``): the agent folds commit
blocks itself with a fold tool, shown its budget. :mod:`.middleware` runs it
(:class:`BudgetAwareFolding`); :mod:`.policy` the blocks, budget state, fold
action and tool and a chat-model policy; :mod:`.offline` the folding rule."""

from __future__ import annotations

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.strategies.bacm.middleware import BudgetAwareFolding
from langgraph_ctx.strategies.base import BuildInputs


def build(given: BuildInputs) -> Middleware:
    """The registry's builder: on every model node, as the first to see a new
    observation shows the budget first."""
    return BudgetAwareFolding.from_preset(
        given.preset, policy=given.summary_model, archive=given.archive, nodes=given.nodes
    )
