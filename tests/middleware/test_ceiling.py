"""The hard ceiling: the prompt sent never exceeds the budget's prompt limit.

Before it, a 22,119-token tool result in a 4,000-token window went out as a
4,420-token digest (tokens / expected ratio, never compacted again): over the
whole window, a call the provider must refuse.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx import Budget, BudgetExceededError, pin
from langgraph_ctx.compression._ceiling import CUT_MARKER
from langgraph_ctx.markers import is_compacted
from tests.middleware.test_compression import COUNTER, FILLER, cfg, events, make_graph

LIMIT = Budget.for_window(4_000).prompt_limit


def big_result(call_id: str, rows: int) -> list[BaseMessage]:
    records = [
        {"invoice": f"INV-{k:05d}", "amount": 100 * k, "vendor": f"V{k}"} for k in range(rows)
    ]
    return [
        AIMessage("", tool_calls=[{"name": "list", "args": {}, "id": call_id}], id=f"c-{call_id}"),
        ToolMessage(json.dumps(records), tool_call_id=call_id, id=f"r-{call_id}"),
    ]


@pytest.mark.parametrize("rows", [900, 2_300])
def test_a_result_larger_than_the_window_is_reduced_until_the_prompt_fits(rows: int) -> None:
    graph, model, compression = make_graph(window=4_000)
    config = cfg(f"ceiling-{rows}")
    graph.invoke({"messages": [HumanMessage("Audit the open invoices.", id="task")]}, config)
    exchange = big_result("call_0", rows)
    assert COUNTER.count_message(exchange[1]) > 4_000 * 5  # the 22K and more
    graph.invoke({"messages": exchange}, config)
    for call in model.calls:
        assert COUNTER.count_messages(list(call.messages)) <= LIMIT
    sent = list(model.calls[-1].messages)
    result = next(m for m in sent if m.id == "r-call_0")
    assert is_compacted(result) and result.tool_call_id == "call_0"
    assert "INV-0" in result.text  # what is left still names records
    assert compression.original(f"ceiling-{rows}", "r-call_0") == exchange[1]  # nothing lost
    [entry] = events(graph, config, "ceiling_enforced")
    assert entry["ids"] == ["r-call_0"] and entry["total_after"] <= LIMIT
    if entry["cut"]:
        assert CUT_MARKER in result.text


def test_pinned_content_that_cannot_fit_raises_before_the_model_is_called() -> None:
    graph, model, _ = make_graph(window=4_000)
    config = cfg("giant-raise")
    graph.invoke({"messages": [HumanMessage("Read the contract.", id="task")]}, config)
    before = graph.get_state(config).values["messages"]
    calls = len(model.calls)
    giant = pin(HumanMessage("Contract text: " + FILLER * 80, id="giant"))
    with pytest.raises(BudgetExceededError) as info:
        graph.invoke({"messages": [giant]}, config)
    assert info.value.needed > info.value.available == LIMIT
    assert len(model.calls) == calls  # never sent
    # LangGraph keeps the input; nothing of the failed call is persisted.
    assert graph.get_state(config).values["messages"] == [*before, giant]
