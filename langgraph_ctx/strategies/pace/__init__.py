"""PACE (arXiv "Predictive Adaptive Context Extraction", ``strategy="pace"``):
each past step shown at the granularity its relevance earns, per call.
:mod:`.middleware` runs it (:class:`PredictiveExtraction`); :mod:`.policy` the
granularity decision and :class:`PaceSettings`, :mod:`.scorer` the scorers,
:mod:`.steps` the steps and their records, :mod:`.summaries` background
summaries, :mod:`.glimpse` the glimpse tool's source of steps."""

from __future__ import annotations

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.strategies.base import BuildInputs
from langgraph_ctx.strategies.pace.middleware import PredictiveExtraction


def build(given: BuildInputs) -> Middleware:
    """The registry's builder: ephemeral per call, so every model node needs it."""
    return PredictiveExtraction.from_preset(
        given.preset, summarizer=given.summary_model, nodes=given.nodes
    )
