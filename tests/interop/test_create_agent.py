"""Our built-ins inside LangChain's create_agent: a real agent graph, a scripted model."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import (
    Budget,
    ConfigurationError,
    MiddlewareError,
    PreflightCheck,
    TieredCompression,
    TokenCounter,
    ToolEviction,
    as_middleware,
)
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.interop.langchain import ContextAgentState
from langgraph_ctx.markers import SUMMARY_PREFIX
from langgraph_ctx.state import lru_reducer
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.scripted import ScriptExhaustedError
from langgraph_ctx.tools import ToolRegistry

PROMPT = "You are a stock assistant. Answer from the lookup tool, citing the warehouse."
NOTE = "EPHEMERAL: the Rotterdam warehouse is closed today."


@tool
def lookup(sku: str) -> str:
    """Look up the stock of a SKU."""
    return f"SKU {sku}: 42 units in Rotterdam, next delivery Tuesday, carrier Maersk. " * 3


@tool
def secret(query: str) -> str:
    """An internal tool the model must not see."""
    return "classified"


def tool_then_answer() -> ScriptedChatModel:
    """First a tool call for each user turn, then an answer from the tool's result."""
    ids = itertools.count()

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            n = next(ids)
            call = {"name": "lookup", "args": {"sku": f"S{n}"}, "id": f"call-{n}"}
            return AIMessage("", tool_calls=[call])
        return AIMessage("Stock checked: " + last.text[:80])

    return ScriptedChatModel(default=reply)


def agent(model: ScriptedChatModel, *layers: Any, window: int = 128_000, **kw: Any) -> Any:
    mw = ContextMiddleware(layers, budget=Budget.for_window(window), **kw)
    return create_agent(
        model, [lookup], system_prompt=PROMPT, middleware=[mw], checkpointer=InMemorySaver()
    )


def ask(i: int) -> dict[str, Any]:
    text = f"Turn {i}: check stock for item {i}, urgent for order ORD-{i:04d} in Antwerp."
    return {"messages": [HumanMessage(text)]}


def assert_pairs_intact(messages: Sequence[BaseMessage]) -> None:
    """Every tool call is followed by all its results, and no result is orphaned."""
    pending: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in pending, f"orphaned result {m.tool_call_id}"
            pending.discard(m.tool_call_id)
            continue
        assert not pending, f"tool calls {pending} split from their results"
        if isinstance(m, AIMessage):
            pending = {str(tc["id"]) for tc in m.tool_calls}
    assert not pending


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def utilization(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in values["context_ledger"] if e["kind"] == "utilization"]


def test_preflight_runs_once_per_model_call_counting_prompt_and_tools() -> None:
    model = tool_then_answer()
    graph = agent(model, PreflightCheck())
    chunks = list(graph.stream(ask(0), config("t"), stream_mode="custom"))

    assert len(model.calls) == 2  # the tool call, then the answer
    streamed = [c["langgraph_ctx"] for c in chunks if c["langgraph_ctx"]["kind"] == "utilization"]
    entries = utilization(graph.get_state(config("t")).values)
    assert [e["seq"] for e in entries] == [e["seq"] for e in streamed] == [0, 1]
    first = entries[0]["data"]
    counter = TokenCounter()
    assert entries[0]["node"] == "model"
    # create_agent sends the prompt as a system message: its overhead counts.
    assert first["used"]["system"] == counter.count_message(SystemMessage(PROMPT))
    assert first["used"]["tools"] == counter.count_tool(lookup) > 0
    assert first["messages_count"] == 1
    # Calibration learned from the usage the model reported after the call.
    assert first["actual_input"] > 0 and entries[1]["data"]["calibration_samples"] == 1


def test_system_prompt_not_counted_when_told() -> None:
    graph = agent(tool_then_answer(), PreflightCheck(), system_prompt_counted=False)
    graph.invoke(ask(0), config("t"))
    assert utilization(graph.get_state(config("t")).values)[0]["data"]["used"]["system"] == 0


def check_long_session(
    graph: Any, model: ScriptedChatModel, turns: int, events: list[dict[str, Any]]
) -> None:
    messages = graph.get_state(config("long")).values["messages"]
    assert any(m.type == "system" and SUMMARY_PREFIX in m.text for m in messages)
    assert len(messages) < 4 * turns
    assert isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls
    assert SUMMARY_PREFIX in model.calls[-1].text
    for call in model.calls:
        assert_pairs_intact(call.messages)
    used = [e["data"] for e in events if e["kind"] == "utilization"]
    assert len(used) == len(model.calls) == 2 * turns  # once per model call
    assert max(u["sent_utilization"] for u in used) < 0.85
    assert sum(e["kind"] == "compression" for e in events) >= 1


@pytest.mark.slow
def test_long_session_compresses_the_agent_state() -> None:
    model = tool_then_answer()
    graph = agent(model, PreflightCheck(), TieredCompression(), window=3_000)
    events: list[dict[str, Any]] = []
    for i in range(40):
        for chunk in graph.stream(ask(i), config("long"), stream_mode="custom"):
            events.append(chunk["langgraph_ctx"])
        last = graph.get_state(config("long")).values["messages"][-1]
        assert isinstance(last, AIMessage) and last.text.startswith("Stock checked")
    check_long_session(graph, model, 40, events)


@as_middleware(priority=50)
def inject_note(view: Any, ctx: Any, call_next: Any) -> Any:
    """Sync only: under ainvoke it runs in a worker thread."""
    ctx.tools = [t for t in ctx.tools if t.name != "secret"]
    return call_next(view.replace(messages=[SystemMessage(NOTE), *view["messages"]]))


def test_ephemeral_view_and_tools_reach_the_model_only() -> None:
    model = tool_then_answer()
    mw = ContextMiddleware([PreflightCheck(), inject_note])
    graph = create_agent(model, [lookup, secret], middleware=[mw], checkpointer=InMemorySaver())
    graph.invoke(ask(0), config("t"))
    assert [NOTE in c.text for c in model.calls] == [True, True]
    assert [c.tool_names for c in model.calls] == [["lookup"], ["lookup"]]
    messages = graph.get_state(config("t")).values["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"]
    assert all(NOTE not in m.text for m in messages)


@pytest.mark.slow
async def test_async_agent_compresses_and_bridges_sync_middleware() -> None:
    model = tool_then_answer()
    graph = agent(model, PreflightCheck(), TieredCompression(), inject_note, window=3_000)
    events: list[dict[str, Any]] = []
    for i in range(30):
        async for chunk in graph.astream(ask(i), config("long"), stream_mode="custom"):
            events.append(chunk["langgraph_ctx"])
    check_long_session(graph, model, 30, events)
    assert all(NOTE in c.text for c in model.calls)
    assert all(NOTE not in m.text for m in graph.get_state(config("long")).values["messages"])


@as_middleware()
def persist_note(view: Any, ctx: Any, call_next: Any) -> Any:
    ctx.persist("note", messages=[SystemMessage("persisted note")])
    return call_next(view)


def test_persistent_update_lands_before_the_answer_or_not_at_all() -> None:
    model = ScriptedChatModel(responses=["Hello."])
    graph = agent(model, PreflightCheck(), persist_note)
    graph.invoke(ask(0), config("t"))
    assert [m.text for m in graph.get_state(config("t")).values["messages"][1:]] == [
        "persisted note",
        "Hello.",
    ]
    with pytest.raises(ScriptExhaustedError):
        graph.invoke(ask(1), config("t"))
    values = graph.get_state(config("t")).values
    assert [m.text for m in values["messages"]].count("persisted note") == 1
    assert len(utilization(values)) == 1


@pytest.mark.slow
def test_interop_package_does_not_import_langchain() -> None:
    code = "import sys, langgraph_ctx.interop; assert 'langchain.agents' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


class WithToolCache(ContextAgentState):
    tool_cache: Annotated[list[str], lru_reducer]


class ToolAwareContext(ContextMiddleware):
    state_schema = WithToolCache


def test_a_layer_needing_a_key_the_agent_state_lacks_fails_at_construction() -> None:
    eviction = ToolEviction(ToolRegistry([lookup]))
    with pytest.raises(ConfigurationError, match=r"\['tool_cache'\].*state_schema extending"):
        ContextMiddleware([PreflightCheck(), eviction])
    ToolAwareContext([PreflightCheck(), ToolEviction(ToolRegistry([lookup]))])


@as_middleware()
def persist_session(view: Any, ctx: Any, call_next: Any) -> Any:
    ctx.persist("note", session={"seen": True})  # not a key of the agent's state
    return call_next(view)


def test_persisting_a_key_the_agent_state_lacks_fails_instead_of_vanishing() -> None:
    graph = agent(ScriptedChatModel(responses=["Hello."]), PreflightCheck(), persist_session)
    with pytest.raises(MiddlewareError, match="'persist_session'") as info:
        graph.invoke(ask(0), config("t"))
    assert "['session']" in str(info.value.__cause__)


def test_recall_is_one_argument_and_brings_the_glimpse_tool() -> None:
    from langgraph_ctx.storage.archive import InMemoryArchive

    archive = InMemoryArchive()
    archive.put("t", [HumanMessage("The dock code is 4471.", id="m7")], reason="compressed")
    look = AIMessage("", tool_calls=[{"name": "glimpse", "args": {"reference": "m7"}, "id": "g"}])
    model = ScriptedChatModel(responses=[look, "4471."])
    context = ContextMiddleware([PreflightCheck(), TieredCompression(archive=archive)], recall=True)
    graph = create_agent(model, [], middleware=[context], checkpointer=InMemorySaver())
    out = graph.invoke(
        {"messages": [HumanMessage("What is the dock code?")]},
        {"configurable": {"thread_id": "t"}},
    )
    assert "archived m7" in model.calls[0].messages[-1].text
    assert out["messages"][-2].text == "[m7] The dock code is 4471."
    with pytest.raises(ConfigurationError, match="recall"):
        ContextMiddleware([PreflightCheck()], recall=True)


def test_recall_keeps_each_turns_lines_in_its_user_message_by_default() -> None:
    from langgraph_ctx.markers import RECALL_PREFIX
    from langgraph_ctx.storage.archive import InMemoryArchive

    facts = [  # (archived fact, question, answer): no words in common across facts
        ("The customs broker for Antwerp is Vermeulen.", "Who brokers customs for Antwerp?"),
        ("Crane capacity in Bilbao reaches 40 tonnes.", "What crane capacity has Bilbao?"),
        ("Cadiz reefer plugs number 212.", "How many reefer plugs has Cadiz?"),
        ("Danzig pilotage fees run 900 euros.", "What pilotage fees apply in Danzig?"),
    ]

    def prompts(**options: Any) -> list[list[tuple[str, str]]]:
        archive = InMemoryArchive()
        for n, (fact, _) in enumerate(facts):
            archive.put("t", [HumanMessage(fact, id=f"m{n}")], reason="compressed")
        model = ScriptedChatModel(default="Noted.")
        layers = [PreflightCheck(), TieredCompression(archive=archive)]
        context = ContextMiddleware(layers, recall=True, **options)
        graph = create_agent(model, [], middleware=[context], checkpointer=InMemorySaver())
        for _, question in facts:
            graph.invoke(
                {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": "t"}}
            )
        return [[(m.type, m.text) for m in call.messages] for call in model.calls]

    delta, fresh = prompts(), prompts(recall_refresh="call")
    for n, (fact, _) in enumerate(facts):
        # Either way, the call that asks sees the fact in its last user message.
        assert fact in delta[n][-1][1].split("\n\n")[0]
        assert fact in fresh[n][-1][1].split("\n\n")[0]
    for before, now in itertools.pairwise(delta):
        # Delta: every earlier turn is sent again as it was, its recall lines
        # included: a provider's prefix cache serves the whole previous prompt.
        assert now[: len(before)] == before
    assert sum(RECALL_PREFIX in text for _, text in delta[-1]) == len(facts)  # one a turn
    # Per call: the previous user message loses its block, the prefix breaks there.
    assert fresh[1][: len(fresh[0])] != fresh[0]
    assert sum(RECALL_PREFIX in text for _, text in fresh[-1]) == 1
    with pytest.raises(ConfigurationError, match=r"ContextMiddleware\.recall_refresh"):
        ContextMiddleware([PreflightCheck()], recall_refresh="turn")  # type: ignore[arg-type]
