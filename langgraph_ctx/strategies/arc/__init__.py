"""ARC (arXiv "ARC: Active and Reflection-driven Context Management",
``strategy="arc"``): a checklist, an interaction memory, incremental updates and
reflection. :mod:`.middleware` runs it (:class:`ReflectiveContextManager`);
:mod:`.manager` the manager's data and fold, :mod:`.model` a chat-model manager,
:mod:`.signals` the stall triggers, :mod:`.offline` a deterministic manager."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.arc.middleware import ReflectiveContextManager


def build(
    *,
    archive: MessageArchive | None,
    summary_model: BaseChatModel | None,
    nodes: Sequence[str],
    recall: bool,
    preset: str = "default",
) -> Middleware:
    """The registry's builder: the agent's own call only."""
    return ReflectiveContextManager.from_preset(
        preset, manager=summary_model, archive=archive, nodes=["call_llm"]
    )
