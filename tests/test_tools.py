"""Dynamic tool context: LRU cache, registry, search, eviction, unbound calls."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ConfigurationError, ContextState, Pipeline, PreflightCheck
from langgraph_ctx.middleware import ToolEviction
from langgraph_ctx.state import lru_reducer
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.catalog import catalog_tools
from langgraph_ctx.tools import SEARCH_TOOLS, ToolRegistry, tools_node

TOOLS = catalog_tools(60)


def test_lru_reducer_touches_and_evicts() -> None:
    cache = lru_reducer(None, ["a", "b", "c"])
    assert lru_reducer(cache, ["a"]) == ["b", "c", "a"]  # touched: most recent last
    assert lru_reducer(cache, ["-b", "d"]) == ["a", "c", "d"]
    assert lru_reducer(cache, ["-zzz"]) == cache  # evicting the absent is a no-op


def test_registry_costs_and_validation() -> None:
    registry = ToolRegistry(TOOLS, always_include=["get_orders"])
    assert all(registry.cost[t.name] > 50 for t in TOOLS)
    assert sum(registry.cost[t.name] for t in TOOLS) > 5_000  # 60 real schemas are expensive
    with pytest.raises(ConfigurationError, match="always_include"):
        ToolRegistry(TOOLS, always_include=["nope"])
    with pytest.raises(ConfigurationError, match="duplicate"):
        ToolRegistry([TOOLS[0], TOOLS[0]])


def test_search_ranks_by_name_and_description() -> None:
    registry = ToolRegistry(TOOLS)
    assert registry.search("track a shipment through customs")[0].endswith("_shipping")
    assert registry.search("overdue invoice payments")[0].endswith("_billing")
    assert registry.search("zzz qqq") == []


def test_search_matches_whole_words_of_any_script() -> None:
    @tool
    def office_hours(city: str) -> str:
        """Opening hours of the Zürich office."""
        return city

    @tool
    def templates(kind: str) -> str:
        """List rich-text e-mail templates."""
        return kind

    registry = ToolRegistry([office_hours, templates])
    # An ASCII-only tokenizer read "Zürich" as "z" and "rich": both tools matched.
    assert registry.search("Zürich") == ["office_hours"]
    assert registry.search("rich text") == ["templates"]


def test_bound_is_search_always_then_cache() -> None:
    registry = ToolRegistry(TOOLS, always_include=["get_orders"])
    names = [t.name for t in registry.bound({"tool_cache": ["search_hr", "nope", "get_orders"]})]
    assert names == [SEARCH_TOOLS, "get_orders", "search_hr"]


def test_using_tools_does_not_reorder_the_schemas_bound() -> None:
    # Tool schemas come first in a provider's prompt: bound in the cache's LRU order,
    # every use of a tool but the latest reordered them, and the prompt cache missed
    # everything after them on the next call. The set changes the bound list; use does not.
    registry = ToolRegistry(TOOLS)
    used = ["get_hr", "get_orders", "search_crm"]
    calls = [{"name": n, "args": {"employee_id": "x", "order_id": "x", "contact_id": "x"},
              "id": f"c{i}"} for i, n in enumerate([*used, "get_orders", "get_hr"])]  # fmt: skip
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[c]) for c in calls])
    graph = graph_for(registry, window=128_000, capacity=8, model=model)
    config: Any = {"configurable": {"thread_id": "order"}}
    caches = []
    for i in range(len(calls)):
        first = {"tool_cache": used} if i == 0 else {}
        out = graph.invoke({"messages": [HumanMessage("next")], **first}, config)
        caches.append(list(out["tool_cache"]))
    assert len({tuple(c) for c in caches}) > 1  # use did reorder the LRU cache
    bound = {tuple(c.tool_names) for c in model.calls}
    assert bound == {(SEARCH_TOOLS, "get_orders", "search_crm", "get_hr")}  # registry order


def graph_for(registry: ToolRegistry, *, window: int, capacity: int | None, model: Any) -> Any:
    from langgraph_ctx import call_llm_node

    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_node("tools", tools_node(registry))
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", "tools")
    pipeline = Pipeline(
        [PreflightCheck(), ToolEviction(registry, capacity=capacity)],
        budget=Budget.for_window(window),
        tools=registry.bound,
    )
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver())


def run_once(graph: Any, thread: str, cache: list[str]) -> dict[str, Any]:
    config: Any = {"configurable": {"thread_id": thread}}
    return graph.invoke({"messages": [HumanMessage("hi")], "tool_cache": cache}, config)


def test_lru_order_and_capacity() -> None:
    registry = ToolRegistry(TOOLS)
    model = ScriptedChatModel(default=AIMessage("", tool_calls=[]))
    graph = graph_for(registry, window=128_000, capacity=3, model=model)
    cache = ["get_orders", "get_billing", "get_shipping", "get_crm", "get_hr"]
    out = run_once(graph, "cap", cache)
    assert out["tool_cache"] == ["get_shipping", "get_crm", "get_hr"]  # the two oldest went
    assert model.calls[-1].tool_names == [SEARCH_TOOLS, "get_shipping", "get_crm", "get_hr"]
    eviction = [e for e in out["context_ledger"] if e["kind"] == "eviction"]
    assert eviction[0]["data"]["evicted"] == ["get_orders", "get_billing"]


def test_by_default_found_tools_stay_bound_while_the_tool_budget_holds_them() -> None:
    # Each change to the tools bound costs the prompt cache the whole prompt: no
    # count limit by default, only the budget (see benchmarks/RESULTS.md).
    from langgraph_ctx.agent import create_context_agent

    found = [t.name for t in TOOLS[:30]]  # about 4,500 schema tokens
    model = ScriptedChatModel(default=AIMessage("", tool_calls=[]))
    agent = create_context_agent(model, TOOLS, think=False)
    out = run_once(agent, "kept", found)
    assert out["tool_cache"] == found
    assert model.calls[-1].tool_names == [SEARCH_TOOLS, *found]
    assert not [e for e in out["context_ledger"] if e["kind"] == "eviction"]
    # The budget still evicts: at 8K the 60 schemas do not fit.
    small = graph_for(ToolRegistry(TOOLS), window=8_000, capacity=None, model=model)
    out = run_once(small, "short", [t.name for t in TOOLS])
    assert 0 < len(out["tool_cache"]) < 60
    eviction = next(e for e in out["context_ledger"] if e["kind"] == "eviction")["data"]
    assert eviction["reason"] == "budget"


def test_eviction_to_fit_the_tool_budget_keeps_always_include() -> None:
    registry = ToolRegistry(TOOLS, always_include=["export_documents", "update_support"])
    model = ScriptedChatModel(default=AIMessage("", tool_calls=[]))
    # An 8K window: even borrowing every surplus, tools get under 6,700 tokens,
    # and the 60 schemas need about 9,000.
    graph = graph_for(registry, window=8_000, capacity=100, model=model)
    out = run_once(graph, "budget", [t.name for t in TOOLS])
    bound = model.calls[-1].tool_names
    assert {"export_documents", "update_support", SEARCH_TOOLS} <= set(bound)
    assert len(bound) < 60
    sent = sum(registry.cost[n] for n in bound)
    report = [e for e in out["context_ledger"] if e["kind"] == "utilization"][-1]["data"]
    assert sent <= report["allocation"]["tools"]
    # Least recently used went first: what survives is the tail of the cache.
    kept = [n for n in out["tool_cache"]]
    assert kept == [t.name for t in TOOLS][-len(kept) :]


def test_unbound_and_unknown_calls_get_a_message_not_a_crash() -> None:
    registry = ToolRegistry(TOOLS)
    calls = [
        {"name": "get_orders", "args": {"order_id": "ORD-1"}, "id": "c1"},  # bound
        {"name": "get_hr", "args": {"employee_id": "E-1"}, "id": "c2"},  # exists, not loaded
        {"name": "launch_rocket", "args": {}, "id": "c3"},  # unknown
    ]
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=calls)])
    graph = graph_for(registry, window=128_000, capacity=10, model=model)
    out = run_once(graph, "unbound", ["get_orders"])
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert '"ok": true' in results["c1"].text
    assert "not loaded" in results["c2"].text and SEARCH_TOOLS in results["c2"].text
    assert "unknown" in results["c3"].text
    assert results["c2"].status == "error"
    assert out["tool_cache"][-1] == "get_orders"  # used: touched


def test_search_tools_rediscovers_an_evicted_tool() -> None:
    registry = ToolRegistry(TOOLS)
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[
                    {"name": SEARCH_TOOLS, "args": {"query": "employee leave requests"}, "id": "s1"}
                ],
            )
        ]
    )
    graph = graph_for(registry, window=128_000, capacity=2, model=model)
    out = run_once(graph, "rediscover", ["get_hr", "get_crm", "get_orders"])
    evicted = next(e for e in out["context_ledger"] if e["kind"] == "eviction")
    assert "get_hr" in evicted["data"]["evicted"]
    assert "get_hr" in out["tool_cache"] or any(n.endswith("_hr") for n in out["tool_cache"])
    found = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert "_hr" in found.text
