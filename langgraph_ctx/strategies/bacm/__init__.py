"""BACM (arXiv "ContextBudget", ``strategy="bacm"``): the agent folds commit
blocks itself with a fold tool, shown its budget. :mod:`.middleware` runs it
(:class:`BudgetAwareFolding`); :mod:`.policy` the blocks, budget state, fold
action and tool and a chat-model policy; :mod:`.offline` the folding rule."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.bacm.middleware import BudgetAwareFolding


def build(
    *,
    archive: MessageArchive | None,
    summary_model: BaseChatModel | None,
    nodes: Sequence[str],
    recall: bool,
    preset: str = "default",
) -> Middleware:
    """The registry's builder: on every model node, as the first to see a new
    observation shows the budget first."""
    return BudgetAwareFolding.from_preset(
        preset, policy=summary_model, archive=archive, nodes=nodes
    )
