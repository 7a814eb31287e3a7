"""ARC (arXiv "ARC: Active and Reflection-driven Context Management",
``strategy="arc"``): a checklist, an interaction memory, incremental updates and
reflection. :mod:`.middleware` runs it (:class:`ReflectiveContextManager`);
:mod:`.manager` the manager's data and fold, :mod:`.model` a chat-model manager,
:mod:`.signals` the stall triggers, :mod:`.offline` a deterministic manager."""

from __future__ import annotations

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.strategies.arc.middleware import ReflectiveContextManager
from langgraph_ctx.strategies.base import BuildInputs


def build(given: BuildInputs) -> Middleware:
    """The registry's builder: the agent's own call only."""
    return ReflectiveContextManager.from_preset(
        given.preset, manager=given.summary_model, archive=given.archive, nodes=["call_llm"]
    )
