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
from typing_extensions import TypedDict, Unpack

from langgraph_ctx._checks import check_bool, check_instance, check_int, check_str
from langgraph_ctx.agent.nodes import (
    ThinkSettings,
    Thought,
    call_llm_node,
    fetch_tools_node,
    route_after_think,
    think_node,
)
from langgraph_ctx.budget import Budget, model_window
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
from langgraph_ctx.middleware.placement import REFRESHES, Placement, RecallRefresh, check_placement
from langgraph_ctx.pipeline import EventSink, Middleware
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.retrieval.memory import MemoryBank, remember_tool
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


class AgentOptions(TypedDict, total=False):
    """The keyword options of :func:`create_context_agent` and :func:`build_context_agent`.

    Every one is optional; the default follows each name.
    """

    system_prompt: str | None
    """``None``: the agent's prompt has no system message of its own."""
    summary_model: BaseChatModel | None
    """``None``: a second, usually smaller, model for summaries; without one the
    offline extractive summarizer is used."""
    budget: Budget | None
    """``None``: ``Budget.for_window(window)``, the window read from ``model``'s
    profile (``profile["max_input_tokens"]``) unless ``window`` is given. A model
    whose profile does not say (a local or unlisted model) is refused: sending
    it a guessed window's prompt would overflow it (an 8K model sent 106K)."""
    window: int | None
    """``None``: the model's context window in tokens, for a model whose profile
    does not give it (``window=8192``); the budget is then
    ``Budget.for_window(window)``. Give ``budget`` or ``window``, not both."""
    always_include: Sequence[str]
    """``()``: tools bound on every call, never evicted."""
    tool_capacity: int | None
    """``None``: discovered tools stay bound as long as the tool budget holds them,
    so the set bound, which comes first in the prompt, changes rarely; a number
    caps how many (least recently used go first; see
    :class:`~langgraph_ctx.middleware.ToolEviction`)."""
    think: bool
    """``True``: a structured thought before acting (needs ``with_structured_output``)."""
    think_model: BaseChatModel | None
    """``None``: the model for thoughts; ``model`` by default."""
    think_settings: ThinkSettings | None
    """``None``: :class:`~langgraph_ctx.agent.nodes.ThinkSettings` defaults."""
    archive: MessageArchive | None
    """``None``: where the strategy's originals go (what recall, ``glimpse`` and
    ``original()`` read): with :func:`create_context_agent`, in the checkpointer's
    database (SQLite file or PostgreSQL), in memory only with an in-memory
    checkpointer; pass ``InMemoryArchive()`` to keep it in memory. A strategy
    instance keeps the archive it was built with."""
    events: EventSink | None
    """``None``: where every context event is also written (the checkpoint keeps
    the latest few): with :func:`create_context_agent`, the checkpointer's
    database's ``lgctx_events``, as ``archive``; with :func:`build_context_agent`,
    nowhere."""
    memory: MemoryBank | None
    """``None``: long-term memory: recall before each ``call_llm`` (within the
    auxiliary budget, under a timeout), summaries stored as observations, and a
    ``remember`` tool. Scoped by ``config["configurable"]["user_id"]`` by default."""
    recall: bool
    """``False``: before each ``call_llm``, bring back what compression archived and
    the question needs (:class:`~langgraph_ctx.middleware.MemoryRecall` on the
    strategy's archive, and on ``memory`` if given), and give the model a
    ``glimpse`` tool for whole originals
    (:class:`~langgraph_ctx.middleware.Glimpse`). Works without a ``user_id``:
    the archive is the thread's own. A new question is shown what recall finds,
    up to the room the prompt leaves under the red line: recall never changes
    what the strategy does to the history, so it never keeps fewer answers than
    recall off (``langgraph_ctx/strategies/recall_room.py``)."""
    middleware: Sequence[Middleware]
    """``()``: more middleware, ordered with the built-ins by priority."""
    strategy: str | Middleware
    """``"tiered"``: how history is kept in budget. ``"tiered"``: tiered compression
    (:class:`~langgraph_ctx.strategies.TieredCompression`, with ``summary_model``);
    ``"adacom"``: an external manager edits the context
    (:class:`~langgraph_ctx.strategies.AdaptiveContextManager`; the manager is
    ``summary_model``, else the offline policy; originals go to ``archive``);
    ``"pace"``: each call's context assembled from every step at the granularity
    its relevance earns (:class:`~langgraph_ctx.strategies.PredictiveExtraction`;
    summaries by ``summary_model``, else extractive; adds the ``glimpse`` tool);
    ``"arc"``: a checklist and an interaction memory, reorganized by reflection
    (:class:`~langgraph_ctx.strategies.ReflectiveContextManager`; the manager is
    ``summary_model``, else the offline one; folded turns go to ``archive``);
    ``"bacm"``: the agent is shown its budget before each observation and folds
    past steps with a ``fold`` tool, the offline folding rule (or ``summary_model``)
    folds near the red line, tiered compression guards it
    (:class:`~langgraph_ctx.strategies.BudgetAwareFolding`);
    ``"none"``: nothing rewrites the history, pre-flight fits each call's prompt
    (:class:`~langgraph_ctx.strategies.registry.NoStrategy`; the baseline);
    or a middleware instance of your own, in compression's place."""
    preset: str
    """``"default"``: the named strategy's settings as the package tunes them;
    ``"paper"`` (``strategy=`` ``"adacom"``, ``"arc"``, ``"bacm"`` or ``"pace"``)
    runs it as its paper does where the defaults differ (each strategy's settings
    docs list the differences). A preset for ``"tiered"``, ``"none"`` or a
    middleware instance is refused."""
    placement: Placement
    """``"system"``: summaries merged into the leading system message for each
    call; ``"pair"``: each a user/assistant pair where it is; ``"none"``: the
    prompt as the history has it (not every provider accepts it). Recall, the
    thought and the thinking instructions go into the last user message
    (see :class:`~langgraph_ctx.middleware.ProviderPlacement`)."""
    cache_breakpoints: bool
    """``True``: with an Anthropic model (``langchain_anthropic``), each call's
    prompt (``call_llm``'s and ``think``'s) marks Anthropic's cache breakpoints:
    the end of the leading system message (system prompt and summaries), the end
    of ARC's memory, the end of the message before this call's per-call context
    (the thought, recall with ``recall_refresh="call"``), and the end of the
    prompt (the request's ``cache_control``). Anthropic caches nothing
    unmarked; other providers cache by themselves and get no marks. ``False``:
    no marks (add your own)."""
    recall_refresh: RecallRefresh
    """``"delta"``: each turn's user message keeps the recall lines it brought that
    no earlier turn showed (all its call's block held, sized to the room left),
    byte-identical until the next compression, so a provider's prompt cache keeps
    serving the earlier turns; ``"call"``: a fresh
    block on every call, in the last user message; ``"compression"``: one block
    kept after the summaries until the next compression (the fewest recall
    tokens, the least fresh). See :class:`~langgraph_ctx.middleware.ProviderPlacement`."""
    state_schema: type[Any]
    """``ContextState``, or a TypedDict extending it; ``DeltaContextState`` for
    ``strategy="pace"``, whose history is never rewritten: a step checkpoints the
    messages it added, not the whole history (see :mod:`langgraph_ctx.state`)."""


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
    _check_all(model, options)  # a bad option touches no database
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
    _check_all(model, options)
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
        budget=_budget(model, options),
        tools=registry.bound,
        # ``think`` asks for a structured Thought: its schema is the one tool it sends.
        node_tools={"think": [Thought]} if "think" in llm_nodes else None,
        system_prompt=options.get("system_prompt"),
        events=options.get("events"),
    )
    return pipeline.attach(_graph(model, registry, options, _schema(options, strategy)))


def _check_all(model: Any, options: Any) -> None:
    """Every check of the options and the model that needs no part built."""
    unknown = sorted(set(options) - AgentOptions.__optional_keys__)
    if unknown:  # what Python would catch for a written-out signature
        raise ConfigurationError(
            unknown[0],
            f"not an option of the context agent; the options are "
            f"{sorted(AgentOptions.__optional_keys__)}"
            + (" (a checkpointer is given to compile())" if "checkpointer" in unknown else ""),
        )
    _check_options(options)
    _check_model(model, options)


def _budget(model: BaseChatModel, options: AgentOptions) -> Budget:
    """``budget``, else ``window``'s, else the model profile's window's; a model with
    no known window is refused, with how to give one."""
    budget, window = options.get("budget"), options.get("window")
    if budget is not None and window is not None:
        raise ConfigurationError(
            "window", f"give budget= or window=, not both (budget.window={budget.window})"
        )
    if budget is not None:
        return budget
    if window is None:
        window = model_window(model)
    if window is None:
        name = getattr(model, "model_name", None) or getattr(model, "model", None)
        raise ConfigurationError(
            "window",
            f"the context window of {type(model).__name__}"
            + (f" {name!r}" if isinstance(name, str) else "")
            + " is unknown (its profile has no 'max_input_tokens'): pass window=<tokens> "
            "(e.g. window=8192) or budget=Budget.for_window(8192)",
        )
    check_int("window", window, least=1)
    return Budget.for_window(window)


def _check_model(model: Any, options: AgentOptions) -> None:
    """The model by what the agent calls on it, before any node is built (a provider
    name such as ``"openai:gpt-4o"`` used to fail as an ``AttributeError`` in think)."""
    methods: tuple[str, ...] = ("invoke", "ainvoke", "bind_tools")
    if options.get("think", True) and options.get("think_model") is None:
        methods += ("with_structured_output",)
    if not all(callable(getattr(model, m, None)) for m in methods):
        hint = (
            f"; for a provider name, pass init_chat_model({model!r})"
            if isinstance(model, str)
            else ""
        )
        if (
            not hint
            and "with_structured_output" in methods
            and all(callable(getattr(model, m, None)) for m in methods[:-1])
        ):
            # Only think's structured thought is missing: say how to go without it.
            hint = (
                "; think=True (the default) asks for a structured thought: pass "
                "think=False, or think_model= a model with with_structured_output"
            )
        raise ConfigurationError(
            "model",
            f"expected a LangChain chat model (with {', '.join(methods)}), "
            f"got {type(model).__name__}{hint}",
        )


def _check_options(options: AgentOptions) -> None:
    """The options no built-in checks itself, checked here, each named as written."""
    for name in ("summary_model", "think_model"):
        value = options.get(name)
        if value is not None:
            check_instance(name, value, BaseChatModel, "a LangChain chat model")
    if options.get("system_prompt") is not None:
        check_str("system_prompt", options.get("system_prompt"), empty=True)
    if options.get("budget") is not None:
        check_instance("budget", options.get("budget"), Budget, "a Budget")
    if "think" in options:
        check_bool("think", options["think"])
    if options.get("think_settings") is not None:
        check_instance(
            "think_settings", options.get("think_settings"), ThinkSettings, "ThinkSettings"
        )
    extra = options.get("middleware", ())
    if isinstance(extra, (str, bytes, Middleware)) or not all(
        isinstance(m, Middleware) or callable(m) for m in extra
    ):
        raise ConfigurationError("middleware", f"expected a list of Middleware, got {extra!r}")
    always = options.get("always_include", ())
    if isinstance(always, str) or not all(isinstance(n, str) for n in always):
        raise ConfigurationError("always_include", f"expected a list of tool names, got {always!r}")
    if "recall" in options:
        check_bool("recall", options["recall"])
    if options.get("tool_capacity") is not None:
        check_int("tool_capacity", options["tool_capacity"], least=0)
    if "placement" in options:
        check_placement(options["placement"], "placement")
    if "cache_breakpoints" in options:
        check_bool("cache_breakpoints", options["cache_breakpoints"])
    if options.get("recall_refresh", "delta") not in REFRESHES:
        raise ConfigurationError(
            "recall_refresh",
            f"must be one of {list(REFRESHES)}, got {options['recall_refresh']!r}",
        )
    if "state_schema" in options and not isinstance(options["state_schema"], type):
        raise ConfigurationError(
            "state_schema", f"expected a TypedDict class, got {options['state_schema']!r}"
        )


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
