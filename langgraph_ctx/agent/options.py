"""The options of the prebuilt agent (:class:`AgentOptions`) and every check of them
and of the model that needs no part built: a bad option is refused, named as
written, before any database is touched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from typing_extensions import TypedDict

from langgraph_ctx._checks import check_bool, check_instance, check_int, check_str
from langgraph_ctx.agent.nodes import ThinkSettings
from langgraph_ctx.budget import Budget, model_window
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.middleware.placement import REFRESHES, Placement, RecallRefresh, check_placement
from langgraph_ctx.pipeline import EventSink, Middleware
from langgraph_ctx.retrieval.memory import MemoryBank
from langgraph_ctx.storage.archive import MessageArchive


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


def check_all(model: Any, options: Any) -> None:
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


def budget_of(model: BaseChatModel, options: AgentOptions) -> Budget:
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
