"""ProviderPlacement(recall_refresh="compression"): one recall block per span, in the prefix."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    ConfigurationError,
    ContextState,
    MemoryBank,
    MemoryRecall,
    Pipeline,
    PreflightCheck,
    ProviderPlacement,
    TieredCompression,
    is_summary,
)
from langgraph_ctx.markers import RECALL_PREFIX
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

CITIES = ["Antwerp", "Bilbao", "Cadiz", "Danzig", "Esbjerg", "Faro", "Genoa", "Hull"]
BUDGET = Budget.for_window(6_000)


def run(refresh: str, turns: int = 40) -> tuple[ScriptedChatModel, list[dict[str, Any]], Any]:
    bank = MemoryBank()
    for city in CITIES:
        text = f"Shipments to {city} clear customs at the {city} office. " + "Papers. " * 60
        bank.remember(("alice",), text)
    model = ScriptedChatModel(default="Noted. " * 30)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "call_llm")
    middleware = [
        PreflightCheck(),
        TieredCompression(),
        MemoryRecall(bank),
        ProviderPlacement(recall_refresh=refresh),  # type: ignore[arg-type]
    ]
    graph = Pipeline(middleware, budget=BUDGET).attach(builder).compile(InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t", "user_id": "alice"}}
    events: list[dict[str, Any]] = []
    first = [SystemMessage("You route freight.")]
    for turn in range(turns):
        city = CITIES[turn % len(CITIES)]
        text = f"Turn {turn}: where does the shipment to {city} clear customs? " + "cargo " * 40
        inputs = {"messages": [*first, HumanMessage(text, id=f"h{turn}")]}
        first = []
        for part in graph.stream(inputs, config, stream_mode="custom"):
            events.append(part["langgraph_ctx"])
    return model, events, graph.get_state(config).values["messages"]


def test_the_kept_block_is_byte_identical_until_a_compression_replaces_it() -> None:
    model, events, stored = run("compression", turns=60)
    assert any(is_summary(m) for m in stored)
    leads = [call.messages[0].text for call in model.calls]
    assert all(RECALL_PREFIX in lead for lead in leads)  # in the stable prefix, every call
    # Never in the user's message: the last user message is the user's own words.
    assert all(RECALL_PREFIX not in call.messages[-1].text for call in model.calls)
    compressed = {i for i, e in enumerate(_per_call(events)) if "compression" in e}
    changes = [i for i in range(1, len(leads)) if leads[i] != leads[i - 1]]
    assert len(changes) >= 2 and set(changes) <= compressed  # only when compressed
    # Recall asked about another city on every turn; the model saw one block per span.
    assert len(set(leads)) == len(changes) + 1 < len(leads) // 3
    # Pre-flight counted the kept block (reserved), recall's own block was taken back:
    # each call's report is what the model received, so compression made room for
    # the block and no call went past the red line.
    sent = [
        e["data"]["sent_utilization"] * BUDGET.window
        for e in events
        if "sent_utilization" in e["data"]
    ]
    received = [TokenCounter().count_messages(list(call.messages)) for call in model.calls]
    assert all(abs(r - s) < 20 for r, s in zip(received, sent, strict=True))
    assert max(received) <= BUDGET.red_line


def test_per_call_recall_changes_with_each_turn_in_the_last_user_message() -> None:
    model, _, _ = run("call", turns=6)
    blocks = [call.messages[-1].text.split("\n\n")[0] for call in model.calls]
    assert all(b.startswith(RECALL_PREFIX) for b in blocks)
    assert len(set(blocks)) > 1


def test_a_bad_recall_refresh_fails_when_configured() -> None:
    with pytest.raises(ConfigurationError, match="recall_refresh"):
        ProviderPlacement(recall_refresh="turn")  # type: ignore[arg-type]


def _per_call(events: list[dict[str, Any]]) -> list[set[str]]:
    """The kinds each model call recorded (pre-flight's ``utilization`` comes first)."""
    calls: list[set[str]] = []
    for e in events:
        if e["kind"] == "utilization":
            calls.append(set())
        if calls:
            calls[-1].add(e["kind"])
    return calls


def test_create_context_agent_takes_recall_refresh_in_one_argument() -> None:
    from langchain_core.messages import AIMessage

    from langgraph_ctx.agent import create_context_agent
    from langgraph_ctx.storage.archive import InMemoryArchive

    def ask(refresh: str) -> list[Any]:
        archive = InMemoryArchive()
        archive.put("t", [HumanMessage("The dock code is 4471.", id="old")], reason="compressed")
        model = ScriptedChatModel(responses=[AIMessage("4471")])
        agent = create_context_agent(
            model,
            archive=archive,
            recall=True,
            think=False,
            recall_refresh=refresh,  # type: ignore[arg-type]
        )
        agent.invoke(
            {"messages": [HumanMessage("What is the dock code?")]},
            {"configurable": {"thread_id": "t"}},
        )
        return list(model.calls[0].messages)

    kept, fresh = ask("compression"), ask("call")
    # Kept: the block leads, in the stable prefix; per call: in the last user message.
    assert RECALL_PREFIX in kept[0].text and RECALL_PREFIX not in kept[-1].text
    assert RECALL_PREFIX in fresh[-1].text and all(RECALL_PREFIX not in m.text for m in fresh[:-1])
    with pytest.raises(ConfigurationError, match="recall_refresh"):
        create_context_agent(ScriptedChatModel(), recall_refresh="turn")  # type: ignore[arg-type]
