"""The ``strategy=`` registry: ONE place mapping each strategy's name to the builder
of the middleware it puts in compression's slot. :func:`~langgraph_ctx.agent.create_context_agent`
(``strategy=...``), the fuzz and conformance suites and the benchmarks read it; so
does a pipeline of your own, through :func:`strategy_middleware`.

Each builder is its folder's ``build`` (``strategies/<name>/__init__.py``), made
from the same four things (:class:`~langgraph_ctx.strategies.base.BuildInputs`):
the optional ``summary_model`` (the strategy's summarizer, manager or policy;
without one it runs offline), the ``archive`` for what it removes, the agent's
model nodes, and whether recall is on. Whether it
runs on all the nodes or on the agent's own call only is each strategy's decision.
Adding a strategy: its folder with a ``build``, and one line in :data:`BUILDERS`.

The strategies after a paper (AdaCoM, ARC, BACM, PACE) also take a ``preset``:
``"paper"`` runs the mechanism as the paper's authors did where our defaults
differ (:data:`PRESETS`; each strategy's settings docs list the differences).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.language_models import BaseChatModel

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.middleware import (
    Glimpse,
    MemoryRecall,
    PreflightCheck,
    ProviderPlacement,
    ToolEviction,
)
from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies import adacom, arc, bacm, none, pace, tiered
from langgraph_ctx.strategies.adacom.middleware import AdaptiveContextManager
from langgraph_ctx.strategies.arc.middleware import ReflectiveContextManager
from langgraph_ctx.strategies.bacm.middleware import BudgetAwareFolding
from langgraph_ctx.strategies.base import BuildInputs, ContextStrategy, check_preset
from langgraph_ctx.strategies.pace.middleware import PredictiveExtraction

Builder = Callable[[BuildInputs], Middleware]
"""A strategy's ``build``: the middleware for one agent, from that agent's settings."""

BUILDERS: dict[str, Builder] = {
    "tiered": tiered.build,
    "adacom": adacom.build,
    "arc": arc.build,
    "pace": pace.build,
    "bacm": bacm.build,
    "none": none.build,
}
"""Name -> builder, the default (``"tiered"``) first."""

_WITH_PRESETS: dict[str, type[ContextStrategy]] = {
    "adacom": AdaptiveContextManager,
    "arc": ReflectiveContextManager,
    "pace": PredictiveExtraction,
    "bacm": BudgetAwareFolding,
}

PRESETS: dict[str, tuple[str, ...]] = {
    name: tuple(_WITH_PRESETS[name].presets) if name in _WITH_PRESETS else ("default",)
    for name in BUILDERS
}
"""Name -> the presets its builder takes (``"default"`` for every strategy)."""

STRATEGIES = tuple(BUILDERS)
"""The strategies :class:`~langgraph_ctx.agent.AgentOptions` names; a middleware
instance is the other way to give one. ``"none"`` manages nothing
(:class:`~langgraph_ctx.strategies.none.middleware.NoStrategy`)."""

AGENT_OWN = (PreflightCheck, ToolEviction, MemoryRecall, Glimpse, ProviderPlacement)
"""Layers the agent adds itself: as ``strategy=`` each would run twice on a call."""


def strategy_middleware(
    strategy: str | Middleware,
    *,
    archive: MessageArchive | None = None,
    summary_model: BaseChatModel | None = None,
    nodes: Sequence[str] = ("call_llm",),
    recall: bool = False,
    preset: str = "default",
) -> Middleware:
    """The middleware ``strategy=strategy`` puts in compression's place, on the model
    ``nodes``: what :func:`~langgraph_ctx.agent.create_context_agent` builds, for a
    pipeline of your own (and for the fuzz suite, which runs every name in
    :data:`STRATEGIES`). A middleware instance is returned as it is. ``recall``:
    recall over the archive is on (``"none"`` then archives what a call leaves out,
    for recall to find; the others decide as with recall off, see
    :mod:`~langgraph_ctx.strategies.recall_room`). ``preset``: the named strategy's
    preset (:data:`PRESETS`): ``"paper"`` for adacom, arc, bacm and pace."""
    if isinstance(strategy, AGENT_OWN):
        raise ConfigurationError(
            "strategy",
            f"{type(strategy).__name__} is one of the agent's own layers, already in it; "
            f"strategy= takes what manages the history: one of {list(STRATEGIES)} or a "
            "middleware such as TieredCompression(...) (extra layers go in middleware=)",
        )
    if isinstance(strategy, Middleware):
        if preset != "default":
            raise ConfigurationError(
                "preset",
                f"applies to a strategy given by name; {type(strategy).__name__} was built "
                "already (build it with .from_preset(...) instead)",
            )
        return strategy
    builder = BUILDERS.get(strategy) if isinstance(strategy, str) else None
    if builder is not None:
        assert isinstance(strategy, str)
        if strategy not in _WITH_PRESETS:  # tiered and none: no paper behind them
            check_preset(strategy, preset, {"default": {}})
        given = BuildInputs(
            archive=archive, summary_model=summary_model, nodes=nodes, recall=recall, preset=preset
        )
        return builder(given)
    raise ConfigurationError(
        "strategy", f"unknown strategy {strategy!r}; use one of {list(STRATEGIES)} or a middleware"
    )
