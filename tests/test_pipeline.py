"""The middleware pipeline: ordering, filters, short-circuit, persistence, sync/async, errors."""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langgraph_ctx import (
    Budget,
    ConfigurationError,
    ContextRunError,
    ContextState,
    MemoryBank,
    MemoryRecall,
    Middleware,
    MiddlewareError,
    NextCalledTwiceError,
    Pipeline,
    PreflightCheck,
    TieredCompression,
    ToolEviction,
    View,
    as_middleware,
    current_context,
)
from langgraph_ctx.pipeline import Hook, IOCall
from langgraph_ctx.tools import ToolRegistry

CONFIG: Any = {"configurable": {"thread_id": "t1"}}


class Recorder(Middleware):
    """Records before/after around call_next(), sync and async alike."""

    def __init__(self, log: list[str], tag: str, **kwargs: Any) -> None:
        super().__init__(name=tag, **kwargs)
        self.log = log

    def __call__(self, view: View, ctx: Any, call_next: Any) -> Any:
        self.log.append(f"{self.name}>{ctx.node}")
        result = call_next(view)
        self.log.append(f"<{self.name}")
        return result

    async def acall(self, view: View, ctx: Any, call_next: Any) -> Any:
        self.log.append(f"{self.name}>{ctx.node}")
        result = await call_next(view)
        self.log.append(f"<{self.name}")
        return result


def two_node_graph(log: list[str]) -> StateGraph[Any, Any, Any, Any]:
    def first(state: ContextState) -> dict[str, Any]:
        log.append("node:first")
        return {"messages": [AIMessage("from first")]}

    async def second(state: ContextState) -> dict[str, Any]:
        log.append("node:second")
        return {"messages": [AIMessage("from second")]}

    def second_sync(state: ContextState) -> dict[str, Any]:
        log.append("node:second")
        return {"messages": [AIMessage("from second")]}

    builder = StateGraph(ContextState)
    builder.add_node("first", first)
    builder.add_node("second", RunnableLambda(second_sync, afunc=second))
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder


def ordered_pipeline(log: list[str]) -> Pipeline:
    # Registered out of order on purpose: priority decides, then registration.
    return Pipeline(
        [
            Recorder(log, "late", priority=90),
            Recorder(log, "early", priority=5),
            Recorder(log, "tie-a", priority=50),
            Recorder(log, "only-second", priority=1, nodes=["second"]),
            Recorder(log, "tie-b", priority=50),
        ]
    )


EXPECTED = [
    "early>first", "tie-a>first", "tie-b>first", "late>first",
    "node:first",
    "<late", "<tie-b", "<tie-a", "<early",
    "only-second>second", "early>second", "tie-a>second", "tie-b>second", "late>second",
    "node:second",
    "<late", "<tie-b", "<tie-a", "<early", "<only-second",
]  # fmt: skip


def test_full_execution_order_with_priorities_ties_and_filters() -> None:
    log: list[str] = []
    graph = ordered_pipeline(log).attach(two_node_graph(log)).compile()
    graph.invoke({"messages": [HumanMessage("hi")]})
    assert log == EXPECTED


def test_same_order_under_ainvoke() -> None:
    log: list[str] = []
    graph = ordered_pipeline(log).attach(two_node_graph(log)).compile()
    asyncio.run(graph.ainvoke({"messages": [HumanMessage("hi")]}))
    assert log == EXPECTED


def test_same_order_under_stream() -> None:
    log: list[str] = []
    graph = ordered_pipeline(log).attach(two_node_graph(log)).compile()
    chunks = list(graph.stream({"messages": [HumanMessage("hi")]}, stream_mode="updates"))
    assert log == EXPECTED
    assert [next(iter(c)) for c in chunks] == ["first", "second"]


def test_sync_only_middleware_runs_under_ainvoke() -> None:
    log: list[str] = []

    @as_middleware(priority=1)
    def sync_only(view: View, ctx: Any, call_next: Any) -> Any:
        log.append(f"sync>{ctx.node}")
        return call_next(view)

    graph = Pipeline([sync_only]).attach(two_node_graph(log)).compile()
    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage("hi")]}))
    assert log == ["sync>first", "node:first", "sync>second", "node:second"]
    assert [m.content for m in out["messages"]] == ["hi", "from first", "from second"]


def test_async_only_middleware_fails_clearly_under_invoke() -> None:
    @as_middleware()
    async def async_only(view: View, ctx: Any, call_next: Any) -> Any:
        return await call_next(view)

    graph = Pipeline([async_only]).attach(two_node_graph([])).compile()
    with pytest.raises(ContextRunError, match="async-only"):
        graph.invoke({"messages": [HumanMessage("hi")]})
    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage("hi")]}))
    assert len(out["messages"]) == 3


class AsyncOnly(Middleware):
    """Overrides only ``acall``: it has no sync form."""

    def __init__(self, log: list[str]) -> None:
        super().__init__(name="async-only", priority=50)
        self.log = log

    async def acall(self, view: View, ctx: Any, call_next: Any) -> Any:
        self.log.append(f"async-only>{ctx.node}")
        return await call_next(view)


def test_async_only_middleware_class_fails_before_anything_runs_under_invoke() -> None:
    log: list[str] = []
    pipeline = Pipeline([Recorder(log, "outer", priority=1), AsyncOnly(log)])
    graph = pipeline.attach(two_node_graph(log)).compile(checkpointer=InMemorySaver())
    with pytest.raises(ContextRunError, match=r"'async-only'.*ainvoke/astream"):
        graph.invoke({"messages": [HumanMessage("hi")]}, CONFIG)
    assert log == []  # refused up front: no layer ran, not even the outer one
    assert [m.content for m in graph.get_state(CONFIG).values["messages"]] == ["hi"]
    other: Any = {"configurable": {"thread_id": "t2"}}
    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage("hi")]}, other))
    assert "async-only>first" in log and len(out["messages"]) == 3


class Lookup(Middleware):
    """Hooks with I/O, written once: a note fetched before the node, a log line after."""

    def __init__(self, log: list[str], *, delay: float = 0.0) -> None:
        super().__init__(name="lookup", nodes=["first"])
        self.log, self.delay = log, delay

    def fetch(self, via: str) -> str:
        time.sleep(self.delay)
        return f"note via {via}"

    async def afetch(self, via: str) -> str:
        await asyncio.sleep(self.delay)
        return f"note via {via}"

    def before(self, view: View, ctx: Any) -> Hook[View]:
        fetch = IOCall(partial(self.fetch, "call"), partial(self.afetch, "acall"), timeout=0.5)
        try:
            note = yield fetch
        except TimeoutError:
            note = "no note: the lookup timed out"
        return view.replace(messages=[*view["messages"], SystemMessage(note)])

    def after(self, view: View, result: Any, ctx: Any) -> Any:
        self.log.append(f"after, with {view['messages'][-1].content}")
        return result


def seen_by_first(log: list[str]) -> StateGraph[Any, Any, Any, Any]:
    def first(state: ContextState) -> dict[str, Any]:
        log.append(f"node saw {state['messages'][-1].content}")
        return {}

    builder = StateGraph(ContextState)
    builder.add_node("first", first)
    builder.add_edge(START, "first")
    return builder


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_hooks_do_their_io_in_the_form_of_the_run(mode: str) -> None:
    log: list[str] = []
    graph = Pipeline([Lookup(log)]).attach(seen_by_first(log)).compile()
    run = graph.invoke if mode == "invoke" else lambda x: asyncio.run(graph.ainvoke(x))
    run({"messages": [HumanMessage("hi")]})
    via = "call" if mode == "invoke" else "acall"
    assert log == [f"node saw note via {via}", f"after, with note via {via}"]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_hook_catches_its_io_timeout_at_the_yield(mode: str) -> None:
    log: list[str] = []
    graph = Pipeline([Lookup(log, delay=2.0)]).attach(seen_by_first(log)).compile()
    run = graph.invoke if mode == "invoke" else lambda x: asyncio.run(graph.ainvoke(x))
    run({"messages": [HumanMessage("hi")]})
    assert log[0] == "node saw no note: the lookup timed out"


def test_short_circuit_skips_later_layers_and_the_node() -> None:
    log: list[str] = []

    @as_middleware(priority=1, nodes=["first"])
    def cache_hit(view: View, ctx: Any, call_next: Any) -> Any:
        return {"messages": [AIMessage("cached answer")]}

    pipeline = Pipeline([cache_hit, Recorder(log, "after", priority=2)])
    graph = pipeline.attach(two_node_graph(log)).compile()
    out = graph.invoke({"messages": [HumanMessage("hi")]})
    assert "node:first" not in log and "after>first" not in log
    assert [m.content for m in out["messages"]] == ["hi", "cached answer", "from second"]


def test_persistent_updates_reach_the_checkpoint_ephemeral_views_do_not() -> None:
    seen: list[list[str]] = []

    def agent(state: ContextState) -> dict[str, Any]:
        seen.append([str(m.content) for m in state["messages"]])
        return {"messages": [AIMessage("answer")]}

    @as_middleware()
    def inject(view: View, ctx: Any, call_next: Any) -> Any:
        ctx.persist("inject", session={"injected_calls": 1})
        block = SystemMessage("[Recalled Memory] the user likes tea", id="recall-1")
        return call_next(view.replace(messages=[block, *view["messages"]]))

    builder = StateGraph(ContextState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    saver = InMemorySaver()
    graph = Pipeline([inject]).attach(builder).compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("hello")]}, CONFIG)

    assert seen == [["[Recalled Memory] the user likes tea", "hello"]]
    saved = saver.get_tuple(CONFIG)
    assert saved is not None
    values = saved.checkpoint["channel_values"]
    assert [m.content for m in values["messages"]] == ["hello", "answer"]
    assert values["session"] == {"injected_calls": 1}


def test_persistent_update_is_dropped_when_the_node_fails() -> None:
    def agent(state: ContextState) -> dict[str, Any]:
        raise ValueError("node broke")

    @as_middleware()
    def persist(view: View, ctx: Any, call_next: Any) -> Any:
        ctx.persist("persist", session={"should_not": "land"})
        return call_next(view)

    builder = StateGraph(ContextState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    saver = InMemorySaver()
    graph = Pipeline([persist]).attach(builder).compile(checkpointer=saver)
    with pytest.raises(ValueError, match="node broke"):  # the node's error, not wrapped
        graph.invoke({"messages": [HumanMessage("x")]}, CONFIG)
    assert "should_not" not in graph.get_state(CONFIG).values.get("session", {})


def test_middleware_exception_names_the_middleware() -> None:
    @as_middleware(name="flaky")
    def flaky(view: View, ctx: Any, call_next: Any) -> Any:
        raise KeyError("boom")

    graph = (
        Pipeline([flaky, Recorder([], "outer", priority=1)]).attach(two_node_graph([])).compile()
    )
    with pytest.raises(MiddlewareError, match="'flaky' failed on node 'first'") as info:
        graph.invoke({"messages": [HumanMessage("x")]})
    assert info.value.middleware == "flaky"
    assert isinstance(info.value.__cause__, KeyError)


def test_calling_next_twice_is_an_error() -> None:
    @as_middleware(name="greedy")
    def greedy(view: View, ctx: Any, call_next: Any) -> Any:
        call_next(view)
        return call_next(view)

    graph = Pipeline([greedy]).attach(two_node_graph([])).compile()
    with pytest.raises(NextCalledTwiceError, match=r"'greedy' called call_next\(\) again"):
        graph.invoke({"messages": [HumanMessage("x")]})


class Flaky:
    """A node that fails its first ``failures`` calls, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def __call__(self, state: ContextState) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"provider down (call {self.calls})")
        return {"messages": [AIMessage(f"answer on call {self.calls}")]}


def retried_graph(node: Flaky, retry: Any) -> Any:
    """``retry`` outermost; inside it a layer that persists, records and trims tools."""

    @as_middleware(priority=50)
    def inner(view: View, ctx: Any, call_next: Any) -> Any:
        ctx.persist("inner", session={f"attempt-{node.calls + 1}": True})
        ctx.record("attempt", {"tools_seen": len(ctx.tools)})
        ctx.tools = ctx.tools[:1]
        return call_next(view)

    builder = StateGraph(ContextState)
    builder.add_node("agent", node)
    builder.add_edge(START, "agent")
    pipeline = Pipeline([retry, inner], tools=[{"name": "a"}, {"name": "b"}])
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver())


@as_middleware(priority=1, name="retry")
def retry_twice(view: View, ctx: Any, call_next: Any) -> Any:
    for attempt in range(3):
        try:
            return call_next(view)
        except ConnectionError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@as_middleware(priority=1, name="retry")
async def aretry_twice(view: View, ctx: Any, call_next: Any) -> Any:
    for attempt in range(3):
        try:
            return await call_next(view)
        except ConnectionError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def test_call_next_again_after_a_failure_retries_and_rolls_the_failure_back() -> None:
    node = Flaky(failures=2)
    graph = retried_graph(node, retry_twice)
    graph.invoke({"messages": [HumanMessage("hi")]}, CONFIG)
    values = graph.get_state(CONFIG).values
    assert node.calls == 3
    assert [m.content for m in values["messages"]] == ["hi", "answer on call 3"]
    # Only the attempt that succeeded left its persistent update and its event;
    # each attempt started from the tools the call began with.
    assert values["session"] == {"attempt-3": True}
    assert [(e["kind"], e["data"]) for e in values["context_ledger"]] == [
        ("attempt", {"tools_seen": 2})
    ]


def test_retry_under_ainvoke_and_through_a_worker_thread() -> None:
    for retry in (aretry_twice, retry_twice):  # async form; sync form in a worker thread
        node = Flaky(failures=1)
        graph = retried_graph(node, retry)
        asyncio.run(graph.ainvoke({"messages": [HumanMessage("hi")]}, CONFIG))
        values = graph.get_state(CONFIG).values
        assert values["session"] == {"attempt-2": True}
        assert len(values["context_ledger"]) == 1


def test_retries_exhausted_raise_the_node_error_and_land_nothing() -> None:
    graph = retried_graph(Flaky(failures=5), retry_twice)
    with pytest.raises(ConnectionError, match="call 3"):
        graph.invoke({"messages": [HumanMessage("hi")]}, CONFIG)
    values = graph.get_state(CONFIG).values
    assert not values.get("session") and not values.get("context_ledger")


def test_calling_next_while_it_runs_is_an_error() -> None:
    @as_middleware(name="racer")
    async def racer(view: View, ctx: Any, call_next: Any) -> Any:
        results = await asyncio.gather(call_next(view), call_next(view))
        return results[0]

    graph = Pipeline([racer]).attach(two_node_graph([])).compile()
    with pytest.raises(NextCalledTwiceError, match="while its previous call was still running"):
        asyncio.run(graph.ainvoke({"messages": [HumanMessage("x")]}))


def test_the_four_argument_form_is_refused_at_registration_naming_the_middleware() -> None:
    # (view, config, ctx, next) was never released: refused like any other arity, so a
    # middleware written that way fails when registered, not on its first call.
    def old_function(view: View, config: Any, ctx: Any, next: Any) -> Any:
        return next(view)

    class OldClass(Middleware):
        def __call__(self, view: View, config: Any, ctx: Any, next: Any) -> Any:  # type: ignore[override]
            return next(view)

    for mw, name in ((old_function, "old_function"), (OldClass(name="old_class"), "old_class")):
        with pytest.raises(ConfigurationError, match=r"\(view, ctx, call_next\).*takes 4") as info:
            Pipeline([mw])
        assert info.value.field == name


def test_a_middleware_taking_neither_form_fails_at_registration() -> None:
    def two(view: View, ctx: Any) -> Any:
        return None

    pipeline = Pipeline()
    with pytest.raises(ConfigurationError, match=r"\(view, ctx, call_next\).*takes 2") as info:
        pipeline.use(two)
    assert info.value.field == "two"
    pipeline.attach(two_node_graph([]))
    assert pipeline.layers_for("first") == []  # nothing was registered


def test_filter_naming_a_missing_node_fails_at_wiring() -> None:
    pipeline = Pipeline([Recorder([], "r", nodes=["first", "nope"])])
    builder = two_node_graph([])
    before = dict(builder.nodes)
    with pytest.raises(ConfigurationError, match=r"\['nope'\]") as info:
        pipeline.attach(builder)
    assert info.value.field == "r.nodes"
    assert builder.nodes == before  # nothing wrapped


def test_default_filter_needs_one_existing_node() -> None:
    builder = two_node_graph([])
    with pytest.raises(ConfigurationError, match="pass nodes="):
        Pipeline([PreflightCheck()]).attach(builder)


def test_use_after_attach_raises() -> None:
    pipeline = Pipeline()
    pipeline.attach(two_node_graph([]))
    with pytest.raises(ConfigurationError, match="already attached"):
        pipeline.use(Recorder([], "late"))


def test_use_overrides_belong_to_the_pipeline_not_to_the_shared_instance() -> None:
    log: list[str] = []
    shared = Recorder(log, "shared", priority=50)
    early = (
        Pipeline().use(Recorder(log, "mark", priority=10)).use(shared, priority=1, nodes=["second"])
    )
    late = Pipeline().use(Recorder(log, "mark", priority=10)).use(shared)
    assert (shared.priority, shared.nodes) == (50, None)  # the instance as it was made
    early.attach(two_node_graph(log)).compile().invoke({"messages": [HumanMessage("x")]})
    seen, log[:] = list(log), []
    late.attach(two_node_graph(log)).compile().invoke({"messages": [HumanMessage("x")]})
    assert [e for e in seen if ">" in e] == ["mark>first", "shared>second", "mark>second"]
    # The second pipeline gets the instance's own priority (after "mark") on both nodes.
    assert [e for e in log if ">" in e] == [
        "mark>first",
        "shared>first",
        "mark>second",
        "shared>second",
    ]


def test_nodes_without_middleware_are_left_alone() -> None:
    builder = two_node_graph([])
    original = builder.nodes["first"].runnable
    Pipeline([Recorder([], "r", nodes=["second"])]).attach(builder)
    assert builder.nodes["first"].runnable is original
    assert builder.nodes["second"].runnable is not original


def test_node_reads_the_call_context() -> None:
    seen: dict[str, Any] = {}

    def agent(state: ContextState) -> dict[str, Any]:
        ctx = current_context()
        assert ctx is not None
        seen.update(node=ctx.node, note=ctx.annotations.get("note"), thread=ctx.thread_id)
        return {}

    @as_middleware()
    def annotate(view: View, ctx: Any, call_next: Any) -> Any:
        ctx.annotations["note"] = "from middleware"
        return call_next(view)

    builder = StateGraph(ContextState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    Pipeline([annotate]).attach(builder).compile(checkpointer=InMemorySaver()).invoke(
        {"messages": [HumanMessage("x")]}, CONFIG
    )
    assert seen == {"node": "agent", "note": "from middleware", "thread": "t1"}
    assert current_context() is None


def test_post_processing_sees_and_changes_the_node_result() -> None:
    @as_middleware()
    def shout(view: View, ctx: Any, call_next: Any) -> Any:
        result = call_next(view)
        return {"messages": [AIMessage(str(m.content).upper()) for m in result["messages"]]}

    graph = (
        Pipeline(
            [shout],
        )
        .attach(two_node_graph([]))
        .compile()
    )
    out = graph.invoke({"messages": [HumanMessage("x")]})
    assert [m.content for m in out["messages"]] == ["x", "FROM FIRST", "FROM SECOND"]


@pytest.mark.slow
def test_no_import_from_langgraph_private_modules() -> None:
    # langgraph._internal changes without notice between releases; the package
    # (and this test module) must build on LangGraph's public API only.
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = []
    for path in [*sorted((root / "langgraph_ctx").rglob("*.py")), Path(__file__)]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("langgraph._internal")]
    assert offenders == []


def test_call_context_carries_the_call_settings_not_the_pipeline() -> None:
    # The create_agent adapter builds contexts with a per-request system prompt;
    # middleware must find everything on ctx, with no pipeline to reach back into.
    seen: list[Any] = []

    @as_middleware()
    def spy(view: View, ctx: Any, call_next: Any) -> Any:
        seen.append(ctx)
        return call_next(view)

    budget, sink = Budget.for_window(32_000), ListSink()
    pipeline = Pipeline([spy], budget=budget, system_prompt="Be brief.", events=sink)
    pipeline.attach(two_node_graph([])).compile().invoke({"messages": [HumanMessage("x")]})
    ctx = seen[0]
    assert not hasattr(ctx, "pipeline")
    assert (ctx.budget, ctx.counter, ctx.system_prompt, ctx.sink) == (
        budget,
        pipeline.counter,
        "Be brief.",
        sink,
    )
    assert {"messages", "context_ledger", "session"} <= ctx.channels


class ListSink:
    """An event sink that keeps what it is given."""

    def __init__(self) -> None:
        self.entries: list[Any] = []

    def write(self, thread_id: str, namespace: str, entries: Any) -> None:
        self.entries += entries

    async def awrite(self, thread_id: str, namespace: str, entries: Any) -> None:
        self.write(thread_id, namespace, entries)


# -- what a middleware needs, checked at attach ----------------------------------


def llm_graph(schema: Any = ContextState) -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(schema)
    builder.add_node("call_llm", lambda state: {})
    builder.add_node("think", lambda state: {})
    builder.add_edge(START, "think")
    builder.add_edge("think", "call_llm")
    return builder


def needs_preflight() -> list[Middleware]:
    return [TieredCompression(), ToolEviction(ToolRegistry([])), MemoryRecall(MemoryBank())]


@pytest.mark.parametrize("mw", needs_preflight(), ids=lambda mw: mw.name)
def test_a_builtin_without_preflight_before_it_fails_at_attach(mw: Middleware) -> None:
    builder = llm_graph()
    before = dict(builder.nodes)
    with pytest.raises(ConfigurationError, match="needs PreflightCheck before it") as info:
        Pipeline([mw]).attach(builder)
    assert info.value.field == f"{mw.name}.requires"
    assert "add PreflightCheck() to the pipeline" in str(info.value)
    assert builder.nodes == before  # nothing wrapped


def test_preflight_after_a_middleware_that_needs_it_fails_at_attach() -> None:
    late = PreflightCheck(priority=60)
    with pytest.raises(ConfigurationError, match=r"priority 60.*lower priority number than 30"):
        Pipeline([TieredCompression(), late]).attach(llm_graph())


def test_requirements_hold_per_node() -> None:
    # Pre-flight on `think` only: compression (call_llm and think) lacks it on call_llm.
    pipeline = Pipeline([PreflightCheck(nodes=["think"]), TieredCompression()])
    with pytest.raises(ConfigurationError, match="on node 'call_llm'"):
        pipeline.attach(llm_graph())
    Pipeline([PreflightCheck(nodes=["think"]), TieredCompression(nodes=["think"])]).attach(
        llm_graph()
    )


def test_a_custom_middleware_declares_what_it_needs_by_name() -> None:
    class Audit(Middleware):
        requires = ("preflight",)

    Pipeline([PreflightCheck(), Audit(nodes=["call_llm"])]).attach(llm_graph())
    with pytest.raises(ConfigurationError, match="Audit needs preflight before it"):
        Pipeline([Audit(nodes=["call_llm"])]).attach(llm_graph())


def messages_state_graph() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(MessagesState)
    builder.add_node("call_llm", lambda state: {"messages": [AIMessage("ok")]})
    builder.add_edge(START, "call_llm")
    return builder


def test_a_middleware_that_records_needs_the_ledger_in_the_state_at_attach() -> None:
    # On MessagesState the ledger (and the calibration it carries across a
    # resume) would be dropped without a word.
    builder = messages_state_graph()
    with pytest.raises(ConfigurationError, match=r"\['context_ledger'\]") as info:
        Pipeline([PreflightCheck()]).attach(builder)
    message = str(info.value)
    assert info.value.field == "preflight"
    assert "build the graph on ContextState" in message
    assert "context_ledger: Annotated[list[LedgerEntry], ledger_reducer()]" in message


def test_declared_writes_are_checked_at_attach() -> None:
    @as_middleware(writes=["session"])
    def remember(view: View, ctx: Any, call_next: Any) -> Any:
        return call_next(view)

    with pytest.raises(ConfigurationError, match=r"\['session'\].*session: Annotated"):
        Pipeline([remember]).attach(messages_state_graph())


def test_persisting_a_key_the_graph_lacks_fails_instead_of_vanishing() -> None:
    @as_middleware(name="remember")
    def remember(view: View, ctx: Any, call_next: Any) -> Any:
        ctx.persist("remember", session={"seen": True})
        return call_next(view)

    graph = Pipeline([remember]).attach(messages_state_graph()).compile(InMemorySaver())
    with pytest.raises(MiddlewareError, match="'remember'") as info:
        graph.invoke({"messages": [HumanMessage("x")]}, CONFIG)
    cause = info.value.__cause__
    assert isinstance(cause, ContextRunError)
    assert "['session']" in str(cause) and "session: Annotated" in str(cause)
    assert [m.type for m in graph.get_state(CONFIG).values["messages"]] == ["human"]


def test_recording_without_a_ledger_in_the_state_fails_instead_of_vanishing() -> None:
    @as_middleware(name="audit")
    def audit(view: View, ctx: Any, call_next: Any) -> Any:
        ctx.record("audit", {"messages": len(view["messages"])})
        return call_next(view)

    graph = Pipeline([audit]).attach(messages_state_graph()).compile()
    with pytest.raises(MiddlewareError, match="'audit'") as info:
        graph.invoke({"messages": [HumanMessage("x")]})
    assert "context_ledger" in str(info.value.__cause__)
