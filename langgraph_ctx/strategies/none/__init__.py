"""``strategy="none"``: nothing rewrites the history (:class:`NoStrategy`)."""

from __future__ import annotations

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.strategies.base import BuildInputs
from langgraph_ctx.strategies.none.middleware import NoStrategy


def build(given: BuildInputs) -> Middleware:
    """The registry's builder: every model node (with recall, it fits each call)."""
    return NoStrategy(archive=given.archive, nodes=given.nodes, recall=given.recall)
