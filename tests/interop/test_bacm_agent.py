"""BACM selected in create_context_agent with one argument, and inside LangChain's
create_agent: the scripted model reads its step ids and budget, and drives the fold tool."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import Budget, BudgetAwareFolding, PreflightCheck
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.strategies.bacm.policy import FOLD_TOOL
from langgraph_ctx.testing import ScriptedChatModel
from tests.agents import one_tool_agent

STEP = re.compile(r"\[step (c[0-9a-f]{5}x*)\]")


@tool
def lookup(sku: str) -> str:
    """Look up the stock of a SKU."""
    return f"SKU {sku}: 42 units in Rotterdam, next delivery Tuesday, carrier Maersk. " * 4


def folding_agent() -> ScriptedChatModel:
    """Looks up two SKUs, then folds both steps into one line and answers."""

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        seen = "\n".join(m.text for m in messages)
        steps = STEP.findall(seen)
        last = messages[-1]
        if isinstance(last, ToolMessage) and "Folded steps" in last.text:
            return AIMessage("A1 and B2: 42 units each.")
        if len(steps) < 2:
            sku = ["A1", "B2"][len(steps)]
            call = {"name": "lookup", "args": {"sku": sku}, "id": f"k{len(steps)}"}
            return AIMessage("", tool_calls=[call])
        args = {"commit_ids": steps[:2], "merged": "A1: 42 units; B2: 42 units"}
        return AIMessage("", tool_calls=[{"name": FOLD_TOOL, "args": args, "id": "k9"}])

    return ScriptedChatModel(default=reply, report_usage=False)


def check_folded(values: dict[str, Any], model: ScriptedChatModel) -> None:
    messages = values["messages"]
    folded = [m for m in messages if m.type == "system" and "Folded steps" in m.text]
    assert len(folded) == 1 and "B2: 42 units" in folded[0].text
    assert messages[-1].text == "A1 and B2: 42 units each."
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    assert calls == {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert "Rotterdam" not in model.calls[-1].text  # the last call saw the fold only
    assert "Context budget: used" in model.calls[1].text  # shown with the first observation
    kinds = [(e["kind"], e["data"].get("by")) for e in values["context_ledger"]]
    assert ("fold", "agent") in kinds


def test_strategy_bacm_binds_the_fold_tool_and_applies_the_agents_fold() -> None:
    model = folding_agent()
    agent = one_tool_agent(model, lookup, "bacm", 8_000, think=False)
    config: Any = {"configurable": {"thread_id": "s"}}
    agent.invoke({"messages": [HumanMessage("Check A1 and B2.")]}, config)
    assert FOLD_TOOL in model.calls[0].tool_names
    check_folded(agent.get_state(config).values, model)


def test_bacm_folds_inside_create_agent() -> None:
    model = folding_agent()
    bacm = BudgetAwareFolding()
    agent = create_agent(
        model,
        [lookup],
        middleware=[ContextMiddleware([PreflightCheck(), bacm], budget=Budget.for_window(8_000))],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("Check A1 and B2.")]}, config)
    assert FOLD_TOOL in model.calls[0].tool_names  # registered by the middleware
    values = agent.get_state(config).values
    check_folded(values, model)
    (source,) = [m for m in values["messages"] if m.type == "system"]
    origin = source.additional_kwargs["lgctx"]["edited"]["from"]
    assert all(bacm.original("t", mid) is not None for mid in origin)


def test_with_thinking_the_plan_notes_stay_and_the_fold_still_lands() -> None:
    model = folding_agent()
    model.structured_default = {
        "hypothesis": "both SKUs are needed",
        "confidence": 0.9,
        "gaps": [],
        "next_thought_needed": False,
        "actions": [{"kind": "tool_call", "detail": "lookup", "expected_utility": 0.8}],
    }
    agent = create_context_agent(model, [lookup], strategy="bacm", always_include=["lookup"])
    config: Any = {"configurable": {"thread_id": "k"}}
    agent.invoke({"messages": [HumanMessage("Check A1 and B2.")]}, config)
    values = agent.get_state(config).values
    check_folded(values, model)
    # The think node's notes carry the mark the edit core never merges: folds leave them.
    assert any(m.text.startswith("[plan]") for m in values["messages"])
