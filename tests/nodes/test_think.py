"""Structured thinking: thresholds, rounds, the confidence update, ephemerality."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_ctx import ConfigurationError
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.agent.nodes import ThinkSettings, reasoning_overhead, update_confidence
from langgraph_ctx.agent.nodes.think import information_gain
from langgraph_ctx.testing import ScriptedChatModel


@tool
def get_order(order_id: str) -> str:
    """Look up an order by id: status, carrier and amount."""
    return f'{{"order_id": "{order_id}", "status": "shipped", "carrier": "DHL", "amount": 412.5}}'


def thought(
    conf: float, *, more: bool = False, gaps: list[str] | None = None, action: str = "respond"
) -> dict[str, Any]:
    kind = "tool_call" if action.startswith("get_order") else "respond"
    return {
        "hypothesis": "the user wants the order status",
        "confidence": conf,
        "gaps": gaps or [],
        "next_thought_needed": more,
        "actions": [{"kind": kind, "detail": action, "expected_utility": 0.8}],
    }


def run(thoughts: list[dict[str, Any]], replies: list[Any], **settings: Any) -> tuple[Any, Any]:
    model = ScriptedChatModel(structured_responses=thoughts, responses=replies)
    agent = create_context_agent(model, [get_order], think_settings=ThinkSettings(**settings))
    out = agent.invoke(
        {"messages": [HumanMessage("Where is ORD-1?", id="h1")]},
        {"configurable": {"thread_id": "t"}},
    )
    return out, model


def structured_calls(model: ScriptedChatModel) -> int:
    return sum(1 for c in model.calls if c.structured)


@pytest.mark.slow
def test_confident_thought_proceeds_at_once() -> None:
    out, model = run([thought(0.9)], ["It shipped."])
    assert structured_calls(model) == 1
    assert out["messages"][-1].text == "It shipped."


def test_low_confidence_thinks_again_until_tau() -> None:
    _, model = run([thought(0.3), thought(0.5), thought(0.8)], ["ok"], max_rounds=5)
    assert structured_calls(model) == 3


def test_next_thought_needed_overrides_confidence() -> None:
    _, model = run([thought(0.95, more=True), thought(0.95)], ["ok"])
    assert structured_calls(model) == 2


def test_rounds_are_bounded() -> None:
    _, model = run([thought(0.1)] * 5, ["ok"], max_rounds=3)
    assert structured_calls(model) == 3  # then it acts anyway


def test_tool_result_raises_confidence_without_a_model_call() -> None:
    first = thought(0.75, gaps=["order status and carrier"], action="get_order ORD-1")
    call = AIMessage(
        "", tool_calls=[{"name": "get_order", "args": {"order_id": "ORD-1"}, "id": "c1"}]
    )
    out, model = run([first], [call, "Shipped with DHL."])
    assert structured_calls(model) == 1  # 0.75 + 0.5 * 1.0 * 0.25 = 0.875 >= 0.7: no rethink
    assert out["thoughts"][-1]["confidence"] == pytest.approx(0.875)
    assert out["thoughts"][-1]["gaps"] == []
    assert model.calls[1].tool_names == ["search_tools", "get_order"]  # planned tool loaded


def test_thoughts_stay_out_of_the_history() -> None:
    out, model = run([thought(0.9, gaps=["the carrier name"])], ["It shipped."])
    texts = [m.text for m in out["messages"]]
    assert not any("the carrier name" in t for t in texts)  # the full thought is not there
    notes = [m for m in out["messages"] if m.name == "think"]
    assert len(notes) == 1 and len(notes[0].text) < 300  # only a compact note
    assert "the carrier name" in model.calls[-1].text  # but the model saw it for that call
    assert out["thoughts"][0]["gaps"] == ["the carrier name"]
    assert reasoning_overhead(out) > 0


def test_confidence_update_formula() -> None:
    assert update_confidence(0.5, 1.0, 0.5) == pytest.approx(0.75)
    assert update_confidence(0.5, 0.0, 0.5) == 0.5
    assert update_confidence(0.9, 2.0, 1.0) == pytest.approx(1.0)  # gain clamped
    assert information_gain(["carrier name", "delivery date"], "carrier: DHL name") == 0.5


def test_function_words_fill_no_gap() -> None:
    # "the" used to count as half of the gap's words: any text with "the" filled it.
    assert information_gain(["the budget"], "the weather is fine") == 0.0
    assert information_gain(["the budget", "Müller's phone"], "Budget: 5k.") == 0.5


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="tau"):
        ThinkSettings(tau=1.5)
    with pytest.raises(ConfigurationError, match="max_rounds"):
        ThinkSettings(max_rounds=0)
