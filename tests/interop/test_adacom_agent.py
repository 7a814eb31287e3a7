"""AdaCoM inside LangChain's create_agent (through ContextMiddleware) and selected in
create_context_agent with one argument."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import ConfigurationError, PreflightCheck, TieredCompression
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.edits import is_note
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.strategies import AdaptiveContextManager
from langgraph_ctx.testing import ScriptedChatModel
from tests.agents import one_tool_agent


@tool
def lookup(sku: str) -> str:
    """Look up the stock of a SKU."""
    return f"SKU {sku}: 42 units in Rotterdam, next delivery Tuesday, carrier Maersk. " * 3


def agent_model() -> ScriptedChatModel:
    ids = itertools.count()

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):
            n = next(ids)
            return AIMessage(
                "", tool_calls=[{"name": "lookup", "args": {"sku": f"S{n}"}, "id": f"c{n}"}]
            )
        return AIMessage("Stock checked.")

    return ScriptedChatModel(default=reply)


def condense_results(messages: list[BaseMessage]) -> dict[str, Any]:
    """A manager that condenses every full tool result it is shown."""
    listing = messages[-1].text
    found = re.findall(r"id=(\S+) role=tool tokens=\d+ answers=\S+\nSKU (\S+):", listing)
    return {
        "modifications": [
            {
                "ids": [mid],
                "role": "tool",
                "justification": "condense",
                "new_content": f"{sku}: 42 units",
            }
            for mid, sku in found
        ]
    }


def test_adacom_edits_the_context_inside_create_agent() -> None:
    manager = ScriptedChatModel(structured_default=condense_results)
    model = agent_model()
    adacom = AdaptiveContextManager(manager=manager, every=1)
    agent = create_agent(
        model,
        [lookup],
        middleware=[ContextMiddleware([PreflightCheck(), adacom])],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("How many S0?")]}, config)
    state = agent.get_state(config).values["messages"]
    results = [m for m in state if isinstance(m, ToolMessage)]
    assert [m.text for m in results] == ["S0: 42 units"]
    assert results[0].tool_call_id == "c0"
    assert state[-1].text == "Stock checked." and state[0].text == "How many S0?"
    # The agent's second call (after the tool) saw the condensed result, not the original.
    assert "Rotterdam" not in model.calls[1].text
    kinds = [e["kind"] for e in agent.get_state(config).values["context_ledger"]]
    assert "context_edit" in kinds
    (source,) = results[0].additional_kwargs["lgctx"]["edited"]["from"]
    original = adacom.archive.get("t", source)
    assert original is not None and "Rotterdam" in original.text


def test_create_context_agent_switches_strategy_in_one_argument() -> None:
    model = agent_model()
    agent = one_tool_agent(model, lookup, "adacom", think=False)
    config: Any = {"configurable": {"thread_id": "s"}}
    for i in range(3):
        agent.invoke({"messages": [HumanMessage(f"Check S{i}, must be in Rotterdam.")]}, config)
    values = agent.get_state(config).values
    kinds = {e["kind"] for e in values["context_ledger"]}
    assert "context_edit" in kinds and "compression" not in kinds
    assert any(is_note(m) for m in values["messages"])  # the offline policy's working note

    mine = AdaptiveContextManager(every=None, utilization=None)
    agent = create_context_agent(model, [lookup], think=False, strategy=mine)
    assert agent is not None
    with pytest.raises(ConfigurationError) as caught:
        create_context_agent(model, [lookup], think=False, strategy="magic")
    assert caught.value.field == "strategy"


def test_the_default_strategy_is_still_tiered_compression() -> None:
    from langgraph_ctx.agent.prebuilt import _strategy

    assert isinstance(_strategy({}, ["call_llm"]), TieredCompression)
