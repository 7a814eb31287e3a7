"""Tiered compression (``strategy="tiered"``, the default): the oldest turns
summarized in tiers as the window fills, summaries prepared ahead, a hard ceiling.
:mod:`.middleware` holds :class:`TieredCompression`, the glue; :mod:`.planner`,
:mod:`.prepared` and :mod:`.ceiling` its parts."""

from __future__ import annotations

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.strategies.base import BuildInputs
from langgraph_ctx.strategies.tiered.middleware import TieredCompression


def build(given: BuildInputs) -> Middleware:
    """The registry's builder. Recall on or off, compressions aim at the same target:
    aimed deeper with recall on, they removed turns that word search could not find
    again, and recall on kept fewer answers than off (strategies/recall_room.py)."""
    return TieredCompression(
        summarizer=given.summary_model, archive=given.archive, nodes=given.nodes
    )
