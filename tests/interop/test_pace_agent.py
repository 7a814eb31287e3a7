"""PACE selected in create_context_agent with one argument (its glimpse tool included),
and run inside LangChain's create_agent through ContextMiddleware."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import Budget, PredictiveExtraction, PreflightCheck
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.strategies import LexicalScorer, PaceSettings
from langgraph_ctx.testing import ScriptedChatModel
from tests.agents import one_tool_agent


@tool
def lookup(sku: str) -> str:
    """Look up the stock of a SKU."""
    return f"SKU {sku}: 42 units in Rotterdam, next delivery Tuesday, carrier Maersk. " * 20


def agent_model(glimpse_at: int | None = None) -> ScriptedChatModel:
    """Looks one SKU up per user turn; on turn ``glimpse_at`` glimpses step s1 first."""
    turns = itertools.count()

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            n = next(turns)
            if n == glimpse_at:
                call = {"name": "glimpse", "args": {"reference": "s1"}, "id": f"g{n}"}
                return AIMessage("", tool_calls=[call])
            call = {"name": "lookup", "args": {"sku": f"S{n}"}, "id": f"c{n}"}
            return AIMessage("", tool_calls=[call])
        if isinstance(last, ToolMessage) and last.name == "glimpse":
            return AIMessage("Seen it.")
        return AIMessage("Stock checked.")

    return ScriptedChatModel(default=reply)


@pytest.mark.slow
def test_create_context_agent_runs_pace_with_its_glimpse_tool() -> None:
    model = agent_model(glimpse_at=6)
    agent = one_tool_agent(model, lookup, "pace", 3_000, think=False)
    config: Any = {"configurable": {"thread_id": "p"}}
    for i in range(7):
        agent.invoke({"messages": [HumanMessage(f"Check S{i} in Rotterdam.")]}, config)
    values = agent.get_state(config).values
    kinds = {e["kind"] for e in values["context_ledger"]}
    assert "pace_context" in kinds and "compression" not in kinds
    assert values["pace_chunks"]  # the records resume needs
    # The history is never rewritten: every tool result is there in full.
    results = [m for m in values["messages"] if isinstance(m, ToolMessage)]
    assert sum("Maersk" in m.text for m in results if m.name == "lookup") == 6
    # The glimpse returned step s1's original (the first lookup) as a tool result.
    glimpsed = [m for m in results if m.name == "glimpse"]
    assert len(glimpsed) == 1 and "SKU S0" in glimpsed[0].text
    # And the model's prompts stayed small: condensed steps, not the whole history.
    assert max(len(c.text) for c in model.calls) < sum(len(m.text) for m in results)


def test_pace_inside_create_agent() -> None:
    model = agent_model()
    pace = PredictiveExtraction(
        scorer=LexicalScorer(), settings=PaceSettings(condense_when_fits=True)
    )
    agent = create_agent(
        model,
        [lookup],
        middleware=[ContextMiddleware([PreflightCheck(), pace], budget=Budget.for_window(8_000))],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "c"}}
    for i in range(6):
        agent.invoke({"messages": [HumanMessage(f"Check S{i} in Rotterdam.")]}, config)
    values = agent.get_state(config).values
    assert "pace_context" in {e["kind"] for e in values["context_ledger"]}
    assert values["pace_chunks"]
    assert sum(isinstance(m, ToolMessage) for m in values["messages"]) == 6
    assert "[Earlier steps" in model.calls[-1].text
