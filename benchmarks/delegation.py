"""Delegation: the boundary compression ratio, and the parent's utilization with and without.

A parent works through research tasks. Each needs five tool calls whose
results are 1-4 KB documents, logs and JSON rows (from the seeded workload
generator), then a short answer. Without delegation the parent makes the
calls itself; with delegation it hands each task to a sub-agent and receives
only the capped result. Both parents run the full pipeline (pre-flight,
compression) with a 32K window. The boundary ratio is the child's tokens
consumed (input + output over all its calls, as the scripted provider
reports them) over the tokens of the result that entered the parent.

Run: python benchmarks/delegation.py
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean
from typing import Any

from _common import emit, header, table
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import Budget
from langgraph_ctx.agent.prebuilt import create_context_agent
from langgraph_ctx.agent.subagents import SubAgents, SubAgentSpec
from langgraph_ctx.ledger import Compression, Utilization, event_data
from langgraph_ctx.ledger.strategies import Delegation
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import generate_session

TASKS = 12
STEPS = 5
SOURCE = generate_session(200, seed=3, tool_rate=1.0, result_chars=(1_000, 4_000))
RESULTS = [s.result for t in SOURCE.turns for s in t.tool_steps]


def research_tool() -> BaseTool:
    def lookup(topic: str, step: int) -> str:
        return RESULTS[(hash(topic) % 50 + step * 7) % len(RESULTS)]

    return StructuredTool.from_function(
        lookup, name="lookup", description="Look up documents, logs and records on a topic."
    )


def worker(messages: Sequence[BaseMessage]) -> AIMessage:
    """Five lookups on the task's topic, then a short answer."""
    task = next(m for m in reversed(messages) if m.type == "human").text
    topic = task.split(":", 1)[-1].strip()
    done = sum(
        1
        for m in messages[
            messages.index(next(m for m in reversed(messages) if m.type == "human")) :
        ]
        if m.type == "tool"
    )
    if done < STEPS:
        return AIMessage(
            "",
            tool_calls=[
                {"name": "lookup", "args": {"topic": topic, "step": done}, "id": f"{topic}-{done}"}
            ],
        )
    return AIMessage(
        f"Findings on {topic}: three risks, two owners, one open invoice; "
        f"recommend escalating to finance by Friday."
    )


def delegating(messages: Sequence[BaseMessage]) -> AIMessage:
    last = next(m for m in reversed(messages) if m.type != "system")
    if last.type == "tool":
        return AIMessage("Noted: " + last.text[:60])
    topic = last.text.split(":", 1)[-1].strip()
    return AIMessage(
        "",
        tool_calls=[
            {
                "name": "delegate",
                "id": f"d-{topic}",
                "args": {"agent": "researcher", "task": f"Research: {topic}"},
            }
        ],
    )


def run(delegate: bool) -> dict[str, Any]:
    budget = Budget.for_window(32_000)
    child = ScriptedChatModel(default=worker)
    subs = SubAgents(
        [
            SubAgentSpec(
                name="researcher",
                kind="analysis",
                description="researches a topic with lookups",
                system_prompt="You research topics with the lookup tool and answer briefly.",
                tools=[research_tool()],
                model=child,
            )
        ]
    )
    if delegate:
        model, tools, always = ScriptedChatModel(default=delegating), [subs.tool()], ["delegate"]
    else:
        model, tools, always = ScriptedChatModel(default=worker), [research_tool()], ["lookup"]
    agent = create_context_agent(
        model,
        tools,
        always_include=always,
        think=False,
        budget=budget,
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "parent"}, "recursion_limit": 100}
    measured, sent, delegations, compressions = [], [], [], 0
    for i in range(TASKS):
        update = {"messages": [HumanMessage(f"Task {i}: vendor-{i} audit")]}
        for chunk in agent.stream(update, config, stream_mode="custom"):
            event = chunk["langgraph_ctx"]
            if (use := event_data(event, Utilization)) is not None:
                measured.append(use["utilization"])
                sent.append(use["utilization"])
            elif (run := event_data(event, Compression)) is not None:
                compressions += 1
                sent[-1] = run["utilization_after"]
        ledger = agent.get_state(config).values["context_ledger"]
        runs = [d for e in ledger if (d := event_data(e, Delegation)) is not None]
        delegations += [d for d in runs if d not in delegations]
    return {
        "measured": measured,
        "sent": sent,
        "compressions": compressions,
        "delegations": delegations,
        "calls": len(model.calls),
    }


def main() -> None:
    plain, delegated = run(False), run(True)
    ratios = [d["boundary_ratio"] for d in delegated["delegations"]]
    rows = []
    for name, r in (("parent does the work", plain), ("parent delegates", delegated)):
        rows.append(
            [
                name,
                str(r["calls"]),
                f"{max(r['measured']):.3f}",
                f"{max(r['sent']):.3f}",
                f"{mean(r['sent']):.3f}",
                str(r["compressions"]),
            ]
        )
    lines = header("Delegation: boundary ratio and parent utilization")
    lines += [
        "Command: `python benchmarks/delegation.py`",
        "",
        f"{TASKS} research tasks, {STEPS} lookups each (1-4 KB results), parent window 32K, "
        "pre-flight + compression on both parents.",
        "",
        *table(
            [
                "parent",
                "parent LLM calls",
                "peak measured",
                "peak sent",
                "mean sent",
                "compressions",
            ],
            rows,
        ),
        "",
        f"Boundary compression ratio (child tokens consumed / result tokens): mean "
        f"{mean(ratios):.1f}:1, min {min(ratios):.1f}:1, max {max(ratios):.1f}:1 over "
        f"{len(ratios)} delegations (the paper reports 15:1 to 40:1).",
    ]
    emit("delegation", lines)


if __name__ == "__main__":
    main()
