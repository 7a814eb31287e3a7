"""ARC inside LangChain's create_agent (through ContextMiddleware) and selected in
create_context_agent with one argument."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import PreflightCheck
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.strategies import ReflectiveContextManager
from langgraph_ctx.strategies.arc.manager import CHECKLIST_TITLE, MEMORY_TITLE
from langgraph_ctx.testing import ScriptedChatModel

TASK = "Check the stock of S0, S1 and S2."


@tool
def stock(sku: str) -> str:
    """The stock of a SKU."""
    return f"SKU {sku}: 42 units in Rotterdam"


def agent_model(n: int = 3) -> ScriptedChatModel:
    ids = itertools.count()

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        k = next(ids)
        if k < n:
            return AIMessage(
                "", tool_calls=[{"name": "stock", "args": {"sku": f"S{k}"}, "id": f"c{k}"}]
            )
        return AIMessage("All in stock.")

    return ScriptedChatModel(default=reply)


def test_arc_keeps_checklist_and_memory_inside_create_agent() -> None:
    model = agent_model()
    agent = create_agent(
        model,
        [stock],
        middleware=[ContextMiddleware([PreflightCheck(), ReflectiveContextManager()])],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    out = agent.invoke({"messages": [HumanMessage(TASK)]}, config)
    assert out["messages"][-1].text == "All in stock."
    last = model.calls[-1].messages
    assert [m.text.split("\n")[0] for m in last[:3]] == [TASK, CHECKLIST_TITLE, MEMORY_TITLE]
    assert isinstance(last[-1], ToolMessage) and last[-1].tool_call_id == "c2"
    assert len(last) == 5  # task, checklist, memory, the last call and its result
    assert '"sku": "S0"' in last[2].text and '"sku": "S1"' in last[2].text
    state = agent.get_state(config).values["messages"]
    assert state[1].text.startswith(CHECKLIST_TITLE)


def test_create_context_agent_selects_arc_by_name() -> None:
    model = agent_model()
    agent = create_context_agent(
        model, [stock], always_include=["stock"], think=False, strategy="arc"
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    out = agent.invoke({"messages": [HumanMessage(TASK)]}, config)
    assert out["messages"][1].text.startswith(CHECKLIST_TITLE)
    edits = [e for e in out["context_ledger"] if e["kind"] == "context_edit"]
    assert edits and {e["data"]["source"] for e in edits} == {"arc"}
