"""AdaCoM (arXiv "Learning Agent-Compatible Context Management",
``strategy="adacom"``): a manager edits the history when the trigger fires.
:mod:`.middleware` runs it (:class:`AdaptiveContextManager`); :mod:`.policy` is
the manager's request, answer and chat-model manager; :mod:`.offline` the
deterministic manager, the offline baseline."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.adacom.middleware import AdaptiveContextManager


def build(
    *,
    archive: MessageArchive | None,
    summary_model: BaseChatModel | None,
    nodes: Sequence[str],
    recall: bool,
    preset: str = "default",
) -> Middleware:
    """The registry's builder: the agent's own call only (a manager call per
    thought would double its cost)."""
    return AdaptiveContextManager.from_preset(
        preset, manager=summary_model, archive=archive, nodes=["call_llm"]
    )
