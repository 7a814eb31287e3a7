"""``create_context_agent``: a compiled agent with the whole pipeline in place.

::

    START -> think (loop) -> fetch_tools -> call_llm -> tools -> think ... -> END

Pre-flight runs before ``think`` and ``call_llm``; tool eviction and
compression before ``call_llm`` (compression before ``think`` too); any
middleware you pass joins them by priority. ``strategy="adacom"`` puts the
AdaCoM manager (before ``call_llm``) in compression's place, ``strategy="pace"``
PACE (before both model nodes, with its ``glimpse`` tool), ``strategy="bacm"``
BACM's budget-aware folding (with its ``fold`` tool), each built by
:mod:`~langgraph_ctx.strategies.registry`; provider placement
runs innermost on both model nodes, so every major chat client accepts the
prompt. Without thinking
(``think=False``) the loop is ``fetch_tools -> call_llm -> tools -> call_llm``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import tools_condition
from typing_extensions import Unpack

from langgraph_ctx.agent.nodes import (
    ThinkSettings,
    Thought,
    call_llm_node,
    fetch_tools_node,
    route_after_think,
    think_node,
)
from langgraph_ctx.agent.options import AgentOptions as AgentOptions
from langgraph_ctx.agent.options import budget_of, check_all
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import GLIMPSE
from langgraph_ctx.middleware import (
    Glimpse,
    MemoryRecall,
    PreflightCheck,
    ProviderPlacement,
    SummaryObserver,
    ToolEviction,
)
from langgraph_ctx.pipeline import Middleware
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.retrieval.memory import remember_tool
from langgraph_ctx.state import ContextState, DeltaContextState, with_keys
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.storage.delta_cache import DeltaReadCache
from langgraph_ctx.storage.retaining import retention_of, with_retention
from langgraph_ctx.storage.retention import KeepCheckpoints, check_keep
from langgraph_ctx.storage.stores import memory_archive_of, stores_beside
from langgraph_ctx.storage.urls import parse_url
from langgraph_ctx.strategies import PredictiveExtraction
from langgraph_ctx.strategies.pace.glimpse import StepSource
from langgraph_ctx.strategies.registry import strategy_middleware
from langgraph_ctx.tools import ToolRegistry, tools_node


def create_context_agent(
    model: BaseChatModel,
    tools: Sequence[BaseTool] = (),
    *,
    checkpointer: BaseCheckpointSaver[Any] | str | None = None,
    keep_checkpoints: KeepCheckpoints = "default",
    **options: Unpack[AgentOptions],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build and compile a context-managed agent.

    Args:
        model: the agent's chat model (needs ``bind_tools``; ``think`` also
            needs ``with_structured_output``).
        tools: every tool the agent may use. Only ``always_include`` and the
            tools the session discovers (``search_tools``, the thought's plan)
            are bound on a call.
        checkpointer: a saver, or a URL opened with
            :func:`~langgraph_ctx.storage.checkpointers.checkpointer_from_url`
            (``"memory://"``, ``"sqlite:///path"``, ``"postgresql://..."``:
            migrated first). Default: in memory.
        keep_checkpoints: the latest checkpoints each thread keeps
            (:mod:`~langgraph_ctx.storage.retention`): a number, or ``None`` /
            ``"all"`` for every one. ``"default"``: for a URL, what
            :func:`~langgraph_ctx.storage.checkpointers.checkpointer_from_url` keeps
            (10 on SQLite, all on PostgreSQL); a saver you pass keeps what it
            kept (every checkpoint, unless it came from ``checkpointer_from_url``).
            A number with a ``SqliteSaver`` or ``PostgresSaver`` of yours prunes
            through a twin of it (same connection); with an in-memory saver it is
            a :class:`~langgraph_ctx.errors.ConfigurationError`.
        **options: see :class:`AgentOptions`.

    The archive and the event log live in the checkpointer's database by default
    (:func:`~langgraph_ctx.storage.stores.stores_beside`: a SQLite file, a
    PostgreSQL pool or a ``PostgresSaver``'s own connection; it says which savers
    it can reach and why), so a restart keeps what compression archived and the
    whole event log; with an in-memory checkpointer they stay in memory too. An
    ``archive=`` or ``events=`` you pass always wins (``InMemoryArchive()`` keeps
    the archive in memory). Stores opened here belong to the returned graph, and
    close with it, like a URL's saver.

    On a state whose ``messages`` is a delta channel (``DeltaContextState``, PACE's
    default), the saver is wrapped in
    :class:`~langgraph_ctx.storage.delta_cache.DeltaReadCache`: an invoke reads
    back what the turns since the last one added, not the whole history.

    A saver you pass stays yours to close. A URL is opened here and belongs to
    the returned graph: its connection (or pool) is closed when the graph is
    garbage-collected, or at interpreter exit, whichever comes first. For a
    lifetime you control, or for ``ainvoke`` (the savers opened here are
    sync), open the saver yourself::

        with checkpointer_from_url(url) as saver:
            agent = create_context_agent(model, tools, checkpointer=saver)
    """
    check_all(model, options)  # a bad option touches no database
    keep = check_keep(keep_checkpoints)
    with ExitStack() as opened:  # closed at once if building or compiling fails
        saver: BaseCheckpointSaver[Any]
        if isinstance(checkpointer, str):
            db = parse_url(checkpointer, field="checkpointer")  # names the setting if bad
            saver = opened.enter_context(checkpointer_from_url(db.url, keep_checkpoints=keep))
        else:
            saver = checkpointer if checkpointer is not None else InMemorySaver()
            if keep != "default" and keep is not None:
                saver = with_retention(saver, keep)
        options = _with_stores(options, saver, opened)
        builder = build_context_agent(model, tools, **options)
        retention = retention_of(saver)
        if retention is not None:  # full copies of its delta channels may replace ancestors
            retention.learn(builder.channels)
        graph = builder.compile(checkpointer=_cached(builder, saver))
        owned = opened.pop_all()
    weakref.finalize(graph, owned.close)  # at collection or exit; never holds the graph
    return graph


def _with_stores(options: AgentOptions, saver: Any, opened: ExitStack) -> AgentOptions:
    """``options`` with the archive and the event log in ``saver``'s database where
    the caller gave none (``None`` counts as none); what is opened joins ``opened``."""
    if options.get("archive") is not None and options.get("events") is not None:
        return options
    stores = stores_beside(saver)
    if stores is None:
        shared = memory_archive_of(saver)  # None but for an InMemorySaver
        if shared is None or options.get("archive") is not None:
            return options
        return {**options, "archive": shared}
    opened.enter_context(stores)
    archive, events = options.get("archive"), options.get("events")
    return {
        **options,
        "archive": stores.archive if archive is None else archive,
        "events": stores.events if events is None else events,
    }


def _cached(
    builder: StateGraph[Any, Any, Any, Any], saver: BaseCheckpointSaver[Any]
) -> BaseCheckpointSaver[Any]:
    """``saver`` behind a :class:`DeltaReadCache` where the history is a delta channel."""
    if isinstance(builder.channels.get("messages"), DeltaChannel) and not isinstance(
        saver, DeltaReadCache
    ):
        return DeltaReadCache(saver)
    return saver


def build_context_agent(
    model: BaseChatModel, tools: Sequence[BaseTool] = (), **options: Unpack[AgentOptions]
) -> StateGraph[Any, Any, Any, Any]:
    """The same agent, uncompiled, with its pipeline attached.

    Compile it yourself, e.g. with no checkpointer so that, run inside a
    parent graph, it checkpoints as the parent's subgraph (sub-agents do this).
    """
    check_all(model, options)
    for t in tools:  # a delegate tool's sub-agents archive where this agent does
        share = getattr(getattr(t, "subagents", None), "share_archive", None)
        if share is not None:
            share(options.get("archive"))
    always_include = options.get("always_include", ())
    memory = options.get("memory")
    if memory is not None:
        tools = [*tools, remember_tool(memory)]
        always_include = [*always_include, "remember"]
    llm_nodes = ["call_llm", "think"] if options.get("think", True) else ["call_llm"]
    strategy = _strategy(options, llm_nodes)
    recall = _recall(options, strategy)
    glimpse = next((m for m in recall if isinstance(m, Glimpse)), None)
    if glimpse is not None:
        tools = [*tools, glimpse.tool]
        always_include = [*always_include, GLIMPSE]
    own: Sequence[BaseTool] = getattr(strategy, "tools", ())  # BACM's fold: always bound
    tools, always_include = [*tools, *own], [*always_include, *(t.name for t in own)]
    registry = ToolRegistry(tools, always_include=always_include)
    pipeline = Pipeline(
        [*_builtins(registry, options, strategy, recall), *options.get("middleware", ())],
        budget=budget_of(model, options),
        tools=registry.bound,
        # ``think`` asks for a structured Thought: its schema is the one tool it sends.
        node_tools={"think": [Thought]} if "think" in llm_nodes else None,
        system_prompt=options.get("system_prompt"),
        events=options.get("events"),
    )
    return pipeline.attach(_graph(model, registry, options, _schema(options, strategy)))


def _builtins(
    registry: ToolRegistry,
    options: AgentOptions,
    strategy: Middleware,
    recall: list[Middleware],
) -> list[Middleware]:
    llm_nodes = ["call_llm", "think"] if options.get("think", True) else ["call_llm"]
    found: list[Middleware] = [
        PreflightCheck(nodes=llm_nodes),
        ToolEviction(registry, capacity=options.get("tool_capacity"), nodes=["call_llm"]),
        strategy,
        *recall,
    ]
    memory = options.get("memory")
    if memory is not None:
        has_recall = any(isinstance(m, MemoryRecall) for m in recall)
        found += [] if has_recall else [MemoryRecall(memory, nodes=["call_llm"])]
        found += [SummaryObserver(memory, nodes=llm_nodes)]
    placement = ProviderPlacement(
        options.get("placement", "system"),
        recall_refresh=options.get("recall_refresh", "delta"),
        nodes=llm_nodes,
    )
    return [*found, placement]


def _recall(options: AgentOptions, strategy: Middleware) -> list[Middleware]:
    """Recall and the ``glimpse`` tool. ``recall=True``: recall over the strategy's
    archive (and memories), and glimpse into it; PACE's steps are always glimpsable
    by step id (it shows them condensed but never removes them), and with recall
    on PACE puts every message it takes in into the archive recall searches."""
    sources = [StepSource()] if isinstance(strategy, PredictiveExtraction) else []
    found: list[Middleware] = []
    archive = None
    if options.get("recall", False):
        if isinstance(strategy, PredictiveExtraction):
            archive = _pace_index(options, strategy)
        else:
            archive = getattr(strategy, "archive", None) or options.get("archive")
        if archive is None:
            raise ConfigurationError(
                "recall", "needs an archive: pass archive=, or a strategy that keeps one"
            )
        found.append(MemoryRecall(options.get("memory"), archive=archive, nodes=["call_llm"]))
    if archive is not None or sources:
        found.append(Glimpse(archive, sources=sources, nodes=["call_llm"]))
    return found


def _pace_index(options: AgentOptions, pace: PredictiveExtraction) -> MessageArchive:
    """The archive PACE indexes its steps into for recall: ``archive=``, else one in
    memory (rebuilt from the checkpointed history after a restart: PACE takes the
    whole history in again). Only ``strategy="pace"`` is given one here: a
    ``PredictiveExtraction`` you built keeps what you built it with."""
    if pace.archive is None:
        if not isinstance(options.get("strategy"), str):
            raise ConfigurationError(
                "recall",
                "searches PACE's steps in the archive PACE puts them in: build it with "
                "one, PredictiveExtraction(archive=InMemoryArchive(), ...)",
            )
        pace.archive = options.get("archive") or InMemoryArchive()
    return pace.archive


def _strategy(options: AgentOptions, llm_nodes: list[str]) -> Middleware:
    return strategy_middleware(
        options.get("strategy", "tiered"),
        archive=options.get("archive"),
        summary_model=options.get("summary_model"),
        nodes=llm_nodes,
        recall=bool(options.get("recall", False)),
        preset=options.get("preset", "default"),
    )


def _schema(options: AgentOptions, strategy: Middleware) -> type[Any]:
    """The state schema: the one given, else PACE's history in a delta channel (it
    is never rewritten, so ``add_messages`` would checkpoint all of it every step),
    else :class:`ContextState`; with the keys the strategy declares of its own
    (its ``state_schema``, e.g. PACE's ``pace_chunks``) merged in."""
    if "state_schema" in options:
        base = options["state_schema"]
    else:
        base = DeltaContextState if isinstance(strategy, PredictiveExtraction) else ContextState
    own = getattr(strategy, "state_schema", None)
    return with_keys(base, own) if isinstance(own, type) else base


def _graph(
    model: BaseChatModel, registry: ToolRegistry, options: AgentOptions, schema: type[Any]
) -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(schema)
    builder.add_node("fetch_tools", fetch_tools_node(registry))
    call_llm = call_llm_node(
        model,
        system_prompt=options.get("system_prompt"),
        cache_breakpoints=options.get("cache_breakpoints", True),
    )
    builder.add_node("call_llm", call_llm)
    builder.add_node("tools", tools_node(registry))
    builder.add_edge("fetch_tools", "call_llm")
    builder.add_conditional_edges("call_llm", tools_condition, {"tools": "tools", END: END})
    if options.get("think", True):
        settings = options.get("think_settings") or ThinkSettings()
        think = think_node(
            options.get("think_model") or model,
            settings,
            system_prompt=options.get("system_prompt"),
            cache_breakpoints=options.get("cache_breakpoints", True),
        )
        builder.add_node("think", think)
        builder.add_edge(START, "think")
        builder.add_conditional_edges(
            "think", route_after_think(settings), ["think", "fetch_tools"]
        )
        builder.add_edge("tools", "think")
    else:
        builder.add_edge(START, "fetch_tools")
        builder.add_edge("tools", "call_llm")
    return builder
