"""Tiered compression (``strategy="tiered"``, the default): the oldest turns
summarized in tiers as the window fills, summaries prepared ahead, a hard ceiling.
:mod:`.middleware` holds :class:`TieredCompression`."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.tiered.middleware import RECALL_TARGET, TieredCompression


def build(
    *,
    archive: MessageArchive | None,
    summary_model: BaseChatModel | None,
    nodes: Sequence[str],
    recall: bool,
) -> Middleware:
    """The registry's builder. With recall on, compression aims deeper
    (:data:`RECALL_TARGET` of the room): what it removes comes back on demand."""
    target = RECALL_TARGET if recall else TieredCompression.DEFAULT_TARGET
    return TieredCompression(
        summarizer=summary_model, archive=archive, nodes=nodes, target_utilization=target
    )
