"""Spawn sub-agents: a parent hands focused tasks to children with clean contexts.

Run it: ``python examples/spawn_subagents.py``. Scripted models, no network.
The parent has a long history; each child sees only its system prompt, the
task and the inputs, works with its own tools and budget, and returns a
compact structured result. Two children run in parallel from one step.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_ctx.agent import SubAgentResult, SubAgents, SubAgentSpec, create_context_agent
from langgraph_ctx.testing import ScriptedChatModel


@tool
def freight_rate(route: str) -> str:
    """Current freight rate for a shipping route, in USD per kg."""
    return f'{{"route": "{route}", "usd_per_kg": 3.2}}'


@tool
def customs_rules(country: str) -> str:
    """Customs rules that apply to imports into a country."""
    return f'{{"country": "{country}", "duty": "4.5%", "documents": ["invoice", "packing list"]}}'


def tool_then_answer(name: str, args: dict[str, Any], answer: str) -> ScriptedChatModel:
    call = AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"{name}-1"}])
    return ScriptedChatModel(responses=[call, answer])


subagents = SubAgents(
    [
        SubAgentSpec(
            name="rates",
            kind="tool",
            description="quotes freight rates",
            system_prompt="You quote freight rates. Be brief.",
            tools=[freight_rate],
            model=tool_then_answer("freight_rate", {"route": "RTM-NYC"}, "RTM-NYC: 3.2 USD/kg"),
        ),
        SubAgentSpec(
            name="customs",
            kind="tool",
            description="explains customs rules",
            system_prompt="You explain customs rules. Be brief.",
            tools=[customs_rules],
            model=tool_then_answer("customs_rules", {"country": "US"}, "US duty 4.5%"),
        ),
    ]
)

parent_model = ScriptedChatModel(
    responses=[
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "delegate",
                    "id": "d1",
                    "args": {
                        "agent": "rates",
                        "task": "Quote RTM-NYC",
                        "inputs": {"route": "RTM-NYC"},
                    },
                },
                {
                    "name": "delegate",
                    "id": "d2",
                    "args": {
                        "agent": "customs",
                        "task": "US import rules",
                        "inputs": {"country": "US"},
                    },
                },
            ],
        ),
        "Shipping RTM-NYC costs 3.2 USD/kg; US duty is 4.5%.",
    ]
)
agent = create_context_agent(
    parent_model, [subagents.tool()], always_include=["delegate"], think=False
)


def main() -> list[SubAgentResult]:
    history = [HumanMessage(f"Earlier question {i} about supplier S-{i}") for i in range(30)]
    out = agent.invoke(
        {"messages": [*history, HumanMessage("Plan a shipment to New York.")]},
        {"configurable": {"thread_id": "shipping"}},
    )
    results = [
        SubAgentResult.model_validate_json(m.text)
        for m in out["messages"]
        if m.type == "tool" and m.name == "delegate"
    ]
    for r in results:
        print(f"{r.agent}: {r.status}, {r.steps} steps, {r.tokens_consumed} tokens -> {r.output}")
    ratios = [
        e["data"]["boundary_ratio"] for e in out["context_ledger"] if e["kind"] == "delegation"
    ]
    print("tokens each child used per token its result costs the parent:", ratios)
    print("answer:", out["messages"][-1].text)
    return results


if __name__ == "__main__":
    main()
