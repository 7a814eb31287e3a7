"""The ``strategy=`` registry: the middleware each named strategy puts in
compression's slot, for :func:`~langgraph_ctx.agent.create_context_agent` and for
a pipeline of your own.

Each is built from the same three things: the optional ``summary_model`` (the
strategy's summarizer, manager or policy; without one it runs offline), the
``archive`` for what it removes, and the agent's model nodes. Whether it runs on
all of them or on the agent's own call only is each strategy's decision, below.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.middleware import (
    AdaptiveContextManager,
    BudgetAwareFolding,
    Glimpse,
    MemoryRecall,
    PredictiveExtraction,
    PreflightCheck,
    ProviderPlacement,
    ReflectiveContextManager,
    TieredCompression,
    ToolEviction,
)
from langgraph_ctx.middleware.compression import RECALL_TARGET
from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive

STRATEGIES = ("tiered", "adacom", "arc", "pace", "bacm", "none")
"""The strategies :class:`~langgraph_ctx.agent.AgentOptions` names; a middleware
instance is the other way to give one. ``"none"`` manages nothing (:class:`NoStrategy`)."""

AGENT_OWN = (PreflightCheck, ToolEviction, MemoryRecall, Glimpse, ProviderPlacement)
"""Layers the agent adds itself: as ``strategy=`` each would run twice on a call."""


class NoStrategy(Middleware):
    """``strategy="none"``: nothing rewrites the history. Each call's prompt is still
    fitted by pre-flight's ceiling (cut for that call only; the checkpoint keeps every
    message whole), so this is the baseline the other strategies are measured against.
    It passes every call through; it holds an ``archive`` only so that ``recall=True``
    (recall over the archive and ``memory``, and ``glimpse``) has one to read."""

    name = "no_strategy"

    def __init__(self, *, archive: MessageArchive | None, nodes: Sequence[str]) -> None:
        super().__init__(nodes=nodes)
        self.archive: MessageArchive = archive if archive is not None else InMemoryArchive()


def strategy_middleware(
    strategy: str | Middleware,
    *,
    archive: MessageArchive | None = None,
    summary_model: BaseChatModel | None = None,
    nodes: Sequence[str] = ("call_llm",),
    recall: bool = False,
) -> Middleware:
    """The middleware ``strategy=strategy`` puts in compression's place, on the model
    ``nodes``: what :func:`~langgraph_ctx.agent.create_context_agent` builds, for a
    pipeline of your own (and for the fuzz suite, which runs every name in
    :data:`STRATEGIES`). A middleware instance is returned as it is. ``recall``:
    recall over the archive is on, so tiered compression aims deeper
    (:data:`~langgraph_ctx.middleware.compression.RECALL_TARGET` of the room,
    never below what the protected turns need)."""
    if isinstance(strategy, AGENT_OWN):
        raise ConfigurationError(
            "strategy",
            f"{type(strategy).__name__} is one of the agent's own layers, already in it; "
            f"strategy= takes what manages the history: one of {list(STRATEGIES)} or a "
            "middleware such as TieredCompression(...) (extra layers go in middleware=)",
        )
    if isinstance(strategy, Middleware):
        return strategy
    if strategy == "tiered":
        return TieredCompression(
            summarizer=summary_model,
            archive=archive,
            nodes=nodes,
            target_utilization=RECALL_TARGET if recall else TieredCompression.DEFAULT_TARGET,
        )
    if strategy == "adacom":
        # The agent's own call only: a manager call per thought would double its cost.
        return AdaptiveContextManager(manager=summary_model, archive=archive, nodes=["call_llm"])
    if strategy == "pace":  # ephemeral per call: every model node needs it
        return PredictiveExtraction(summarizer=summary_model, nodes=nodes)
    if strategy == "arc":
        return ReflectiveContextManager(manager=summary_model, archive=archive, nodes=["call_llm"])
    if strategy == "bacm":
        # On every model node: the first to see a new observation shows the budget first.
        return BudgetAwareFolding(policy=summary_model, archive=archive, nodes=nodes)
    if strategy == "none":
        return NoStrategy(archive=archive, nodes=nodes)
    raise ConfigurationError(
        "strategy", f"unknown strategy {strategy!r}; use one of {list(STRATEGIES)} or a middleware"
    )
