"""RuntimeStore: a MemoryBank built before the graph runs uses the store the run is given."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.store.memory import InMemoryStore

from langgraph_ctx import (
    ContextRunError,
    ContextState,
    MemoryBank,
    MemoryRecall,
    Pipeline,
    PreflightCheck,
    RuntimeStore,
)
from langgraph_ctx.testing import ScriptedChatModel

CONFIG: Any = {"configurable": {"thread_id": "t", "user_id": "alice"}}


def graph_with(bank: MemoryBank, model: ScriptedChatModel, store: InMemoryStore) -> Any:
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck(), MemoryRecall(bank)])
    return pipeline.attach(builder).compile(store=store)  # as a server compiles it


def test_recall_reads_the_store_the_graph_runs_with() -> None:
    store = InMemoryStore()
    MemoryBank(store).remember(("alice",), "Alice ships by rail, never by air.")
    model = ScriptedChatModel(default="Rail.")
    graph = graph_with(MemoryBank(RuntimeStore()), model, store)
    graph.invoke({"messages": [HumanMessage("Rail or air for Alice?")]}, CONFIG)
    assert "never by air" in model.calls[0].text
    other = ScriptedChatModel(default="No idea.")  # another run, another (empty) store
    graph_with(MemoryBank(RuntimeStore()), other, InMemoryStore()).invoke(
        {"messages": [HumanMessage("Rail or air for Alice?")]}, CONFIG
    )
    assert "never by air" not in other.calls[0].text


def test_async_runs_use_it_too() -> None:
    store = InMemoryStore()
    MemoryBank(store).remember(("alice",), "Alice's pallets are euro size.")
    model = ScriptedChatModel(default="Euro.")
    graph = graph_with(MemoryBank(RuntimeStore()), model, store)
    asyncio.run(graph.ainvoke({"messages": [HumanMessage("Which pallets for Alice?")]}, CONFIG))
    assert "euro size" in model.calls[0].text


def test_outside_a_run_it_uses_the_fallback_or_says_what_is_missing() -> None:
    with pytest.raises(ContextRunError, match=r"outside a graph run.*fallback"):
        MemoryBank(RuntimeStore()).remember(("alice",), "lost")
    seeded = InMemoryStore()
    bank = MemoryBank(RuntimeStore(fallback=seeded))
    bank.remember(("alice",), "Alice invoices in EUR.")
    assert [m.text for m in MemoryBank(seeded).search(("alice",), "invoices")] == [
        "Alice invoices in EUR."
    ]
