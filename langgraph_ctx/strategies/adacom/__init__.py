"""AdaCoM (arXiv "Learning Agent-Compatible Context Management",
``strategy="adacom"``): a manager edits the history when the trigger fires.
:mod:`.middleware` runs it (:class:`AdaptiveContextManager`); :mod:`.policy` is
the manager's request, answer and chat-model manager; :mod:`.offline` the
deterministic manager, the offline baseline."""

from __future__ import annotations

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.strategies.adacom.middleware import AdaptiveContextManager
from langgraph_ctx.strategies.base import BuildInputs


def build(given: BuildInputs) -> Middleware:
    """The registry's builder: the agent's own call only (a manager call per
    thought would double its cost)."""
    return AdaptiveContextManager.from_preset(
        given.preset, manager=given.summary_model, archive=given.archive, nodes=["call_llm"]
    )
