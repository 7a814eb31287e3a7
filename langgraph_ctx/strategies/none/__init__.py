"""``strategy="none"``: nothing rewrites the history (:class:`NoStrategy`)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.none.middleware import NoStrategy


def build(
    *,
    archive: MessageArchive | None,
    summary_model: BaseChatModel | None,
    nodes: Sequence[str],
    recall: bool,
) -> Middleware:
    """The registry's builder: every model node (with recall, it fits each call)."""
    return NoStrategy(archive=archive, nodes=nodes, recall=recall)
