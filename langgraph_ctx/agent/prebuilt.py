"""``create_context_agent``: a compiled agent with the whole pipeline in place.

::

    START -> think (loop) -> fetch_tools -> call_llm -> tools -> think ... -> END

Pre-flight runs before ``think`` and ``call_llm``; tool eviction and
compression before ``call_llm`` (compression before ``think`` too); any
middleware you pass joins them by priority. Without thinking (``think=False``)
the loop is ``fetch_tools -> call_llm -> tools -> call_llm``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import tools_condition

from langgraph_ctx.agent.nodes import (
    ThinkSettings,
    call_llm_node,
    fetch_tools_node,
    route_after_think,
    think_node,
)
from langgraph_ctx.budget import Budget
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.middleware import (
    MemoryRecall,
    PreflightCheck,
    SummaryObserver,
    TieredCompression,
    ToolEviction,
)
from langgraph_ctx.pipeline import EventSink, Middleware, Pipeline
from langgraph_ctx.retrieval.memory import MemoryBank, remember_tool
from langgraph_ctx.state import ContextState
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.tools import ToolRegistry, tools_node


def create_context_agent(
    model: BaseChatModel,
    tools: Sequence[BaseTool] = (),
    *,
    system_prompt: str | None = None,
    summary_model: BaseChatModel | None = None,
    checkpointer: BaseCheckpointSaver[Any] | str | None = None,
    budget: Budget | None = None,
    always_include: Sequence[str] = (),
    tool_capacity: int = 16,
    think: bool = True,
    think_model: BaseChatModel | None = None,
    think_settings: ThinkSettings | None = None,
    archive: MessageArchive | None = None,
    events: EventSink | None = None,
    memory: MemoryBank | None = None,
    middleware: Sequence[Middleware] = (),
    state_schema: type[Any] = ContextState,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build and compile a context-managed agent.

    Args:
        model: the agent's chat model (needs ``bind_tools``; ``think`` also
            needs ``with_structured_output``).
        tools: every tool the agent may use. Only ``always_include`` and the
            tools the session discovers (``search_tools``, the thought's plan)
            are bound on a call.
        summary_model: a second, usually smaller, model for summaries. Without
            one, the offline extractive summarizer is used.
        checkpointer: a saver, ``"memory://"``, or ``"sqlite:///path"``
            (default: in memory). See ``langgraph_ctx.storage.checkpointers`` for Postgres.
        budget: default: read the window from ``model``'s profile.
        think_model: the model for thoughts (default: ``model``).
        memory: long-term memory: recall before each ``call_llm`` (within the
            auxiliary budget, under a timeout), summaries stored as
            observations, and a ``remember`` tool. Scoped by
            ``config["configurable"]["user_id"]`` by default.
        middleware: more middleware, ordered with the built-ins by priority.
        state_schema: ``ContextState`` or a TypedDict extending it.
    """
    builder = build_context_agent(
        model,
        tools,
        system_prompt=system_prompt,
        summary_model=summary_model,
        budget=budget,
        always_include=always_include,
        tool_capacity=tool_capacity,
        think=think,
        think_model=think_model,
        think_settings=think_settings,
        archive=archive,
        events=events,
        memory=memory,
        middleware=middleware,
        state_schema=state_schema,
    )
    return builder.compile(checkpointer=_saver(checkpointer))


def build_context_agent(
    model: BaseChatModel,
    tools: Sequence[BaseTool] = (),
    *,
    system_prompt: str | None = None,
    summary_model: BaseChatModel | None = None,
    budget: Budget | None = None,
    always_include: Sequence[str] = (),
    tool_capacity: int = 16,
    think: bool = True,
    think_model: BaseChatModel | None = None,
    think_settings: ThinkSettings | None = None,
    archive: MessageArchive | None = None,
    events: EventSink | None = None,
    memory: MemoryBank | None = None,
    middleware: Sequence[Middleware] = (),
    state_schema: type[Any] = ContextState,
) -> StateGraph[Any, Any, Any, Any]:
    """The same agent, uncompiled, with its pipeline attached.

    Compile it yourself, e.g. with no checkpointer so that, run inside a
    parent graph, it checkpoints as the parent's subgraph (sub-agents do this).
    """
    if memory is not None:
        tools = [*tools, remember_tool(memory)]
        always_include = [*always_include, "remember"]
    registry = ToolRegistry(tools, always_include=always_include)
    budget = budget or Budget.from_model(model)
    builtins: list[Middleware] = [
        PreflightCheck(nodes=["call_llm", "think"] if think else ["call_llm"]),
        ToolEviction(registry, capacity=tool_capacity, nodes=["call_llm"]),
        TieredCompression(
            summarizer=summary_model,
            archive=archive,
            nodes=["call_llm", "think"] if think else ["call_llm"],
        ),
    ]
    if memory is not None:
        builtins += [
            MemoryRecall(memory, nodes=["call_llm"]),
            SummaryObserver(memory, nodes=["call_llm", "think"] if think else ["call_llm"]),
        ]
    builder = StateGraph(state_schema)
    builder.add_node("fetch_tools", fetch_tools_node(registry))
    builder.add_node("call_llm", call_llm_node(model, system_prompt=system_prompt))
    builder.add_node("tools", tools_node(registry))
    builder.add_edge("fetch_tools", "call_llm")
    builder.add_conditional_edges("call_llm", tools_condition, {"tools": "tools", END: END})
    if think:
        settings = think_settings or ThinkSettings()
        builder.add_node("think", think_node(think_model or model, settings))
        builder.add_edge(START, "think")
        builder.add_conditional_edges(
            "think", route_after_think(settings), ["think", "fetch_tools"]
        )
        builder.add_edge("tools", "think")
    else:
        builder.add_edge(START, "fetch_tools")
        builder.add_edge("tools", "call_llm")
    pipeline = Pipeline(
        [*builtins, *middleware],
        budget=budget,
        tools=registry.bound,
        system_prompt=system_prompt,
        events=events,
    )
    return pipeline.attach(builder)


def _saver(checkpointer: BaseCheckpointSaver[Any] | str | None) -> BaseCheckpointSaver[Any]:
    if checkpointer is None or checkpointer == "memory://":
        return InMemorySaver()
    if isinstance(checkpointer, BaseCheckpointSaver):
        return checkpointer
    if isinstance(checkpointer, str) and checkpointer.startswith("sqlite:///"):
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = Path(checkpointer.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))
    raise ConfigurationError(
        "checkpointer",
        f"expected a saver, 'memory://' or 'sqlite:///path', got {checkpointer!r}; "
        "for PostgreSQL open a saver with langgraph_ctx.storage.checkpointers and pass it",
    )
