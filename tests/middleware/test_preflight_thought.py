"""Pre-flight measures the prompt ``call_llm`` sends, thought included, and a
calibration ratio under 1 never lets a prompt over its limit.

With think on, ``call_llm`` shows the model the turn's latest thought only.
Pre-flight once counted every thought of the turn as auxiliary text: the
measured prompt was larger than the one sent, calibration learned
actual / measured under 1 from the exact usage reports, and the calls after it
were measured short and sent over ``prompt_limit``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget, View, as_middleware
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.agent.nodes import ThinkSettings, Thought
from langgraph_ctx.pipeline import CallContext
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

COUNTER = TokenCounter()
PLACED_SAVING = 2 * 3
"""Most the node's placement may save on what was counted (tests/test_usage_exact.py)."""


@tool
def get_order(order_id: str) -> str:
    """Look up an order by id: status, carrier and amount."""
    return f"order {order_id}: shipped by DHL, 412.50 EUR"


def thought(confidence: float, more: bool, words: int) -> dict[str, Any]:
    return {
        "hypothesis": " ".join(["the user wants the status of the order"] * words),
        "confidence": confidence,
        "gaps": ["carrier of the order"],
        "next_thought_needed": more,
        "actions": [{"kind": "respond", "detail": "say where it is", "expected_utility": 0.8}],
    }


class Reported:
    """The usage each ``call_llm`` call reaches the node with (after every layer)."""

    def __init__(self) -> None:
        self.raw: list[int] = []

    def layer(self) -> Any:
        @as_middleware(priority=10_000, nodes=["call_llm"], name="reported")
        def probe(view: View, ctx: CallContext, call_next: Callable[..., Any]) -> Any:
            self.raw.append(ctx.measured().raw_total)
            return call_next(view)

        return probe


def sent_tokens(model: ScriptedChatModel) -> list[int]:
    return [
        COUNTER.count_messages(list(c.messages)) + sum(map(COUNTER.count_tool, c.tools))
        for c in model.calls
        if not c.structured
    ]


def test_two_thoughts_in_a_turn_are_measured_as_the_one_sent() -> None:
    # Two thoughts a turn (the first asks for another), long enough that counting
    # both where one is sent is far outside the placement's few tokens.
    turns = 3
    model = ScriptedChatModel(
        structured_responses=[
            t for _ in range(turns) for t in (thought(0.3, True, 12), thought(0.9, False, 6))
        ],
        default="It shipped with DHL.",
    )
    reported = Reported()
    agent = create_context_agent(
        model,
        [get_order],
        think_settings=ThinkSettings(max_rounds=2),
        middleware=[reported.layer()],
    )
    config = {"configurable": {"thread_id": "t"}}
    for i in range(turns):
        agent.invoke({"messages": [HumanMessage(f"Where is ORD-{i}?", id=f"h{i}")]}, config)
    sent = sent_tokens(model)
    assert len(sent) == turns == len(reported.raw)
    for i, (measured, exact) in enumerate(zip(reported.raw, sent, strict=True)):
        assert exact <= measured <= exact + PLACED_SAVING, (
            f"call {i}: measured {measured}, sent {exact}"
        )
    shown = [c for c in model.calls if not c.structured][-1].text
    assert "the user wants the status" in shown  # the thought is sent, once
    assert shown.count("[Current thought]") == 1


def test_a_calibration_under_one_never_lets_a_prompt_over_the_limit() -> None:
    # A provider that reports fewer tokens than we count teaches a ratio under 1;
    # applied to our exact count of what is sent, it let the ceiling pass prompts
    # over prompt_limit. Tool results fill the window; no strategy cuts them.
    budget = Budget.for_window(4_000)
    rows = "\n".join(f"row {i}: parcel {i} left the depot at 0{i % 10}:00" for i in range(40))
    model = ScriptedChatModel(default="Noted.", usage_scale=0.8)
    agent = create_context_agent(model, [get_order], budget=budget, strategy="none", think=False)
    config = {"configurable": {"thread_id": "t"}}
    for i in range(8):
        agent.invoke({"messages": [HumanMessage(f"Log {i}:\n{rows}", id=f"h{i}")]}, config)
    sent = sent_tokens(model)
    assert max(sent) > budget.prompt_limit * 0.8  # the session reached the ceiling
    assert max(sent) <= budget.prompt_limit, (sent, budget.prompt_limit)


def test_think_calls_are_measured_as_sent_however_many_tool_rounds_a_turn_takes() -> None:
    # ``think`` sends its instructions, the turn's latest thought and the Thought
    # schema, not the agent's tools. Counted with every bound tool and without its
    # instructions, and sent with every earlier thought of the turn (one more a
    # tool round), a turn of many rounds was refused at 4K with room to spare.
    rounds = 6
    calls = [
        AIMessage(
            "", tool_calls=[{"name": "get_order", "args": {"order_id": f"O{i}"}, "id": f"c{i}"}]
        )
        for i in range(rounds)
    ]
    model = ScriptedChatModel(
        responses=[*calls, AIMessage("All shipped with DHL.")],
        # Unsure, with a gap no result fills: every round thinks with the model.
        structured_default={**thought(0.5, False, 8), "gaps": ["weather forecast in Paris"]},
    )
    measured: list[int] = []

    @as_middleware(priority=10_000, nodes=["think"], name="think_probe")
    def probe(view: View, ctx: CallContext, call_next: Callable[..., Any]) -> Any:
        measured.append(ctx.measured().raw_total)
        return call_next(view)

    agent = create_context_agent(
        model, [get_order], budget=Budget.for_window(4096), middleware=[probe]
    )
    agent.invoke(
        {"messages": [HumanMessage("Where are my orders?", id="h0")]},
        {"configurable": {"thread_id": "t"}},
    )
    thinks = [c for c in model.calls if c.structured]
    # ``max_rounds`` thoughts before the first action, then one a tool round.
    assert len(thinks) == ThinkSettings().max_rounds + rounds == len(measured)
    thought_schema = COUNTER.count_tool(Thought)
    for i, (call, counted) in enumerate(zip(thinks, measured, strict=True)):
        exact = COUNTER.count_messages(list(call.messages)) + thought_schema
        assert exact <= counted <= exact + PLACED_SAVING, (
            f"think {i}: measured {counted}, sent {exact}"
        )
        assert call.text.count('"hypothesis"') <= 1, f"think {i} carries earlier thoughts"
