"""Sub-agents: clean contexts, capped results, depth, failures, resume, async, parallel."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ConfigurationError, ContextState
from langgraph_ctx.agent import SubAgentResult, SubAgents, SubAgentSpec, create_context_agent
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

ROOT = Path(__file__).resolve().parents[1]


@tool
def get_rates(route: str) -> str:
    """Freight rates for a shipping route."""
    return f'{{"route": "{route}", "usd_per_kg": 3.2}}'


def delegate_call(agent: str, task: str, cid: str = "d1", **inputs: Any) -> dict[str, Any]:
    return {"name": "delegate", "id": cid, "args": {"agent": agent, "task": task, "inputs": inputs}}


def spec(name: str = "rates", model: Any = None, **kwargs: Any) -> SubAgentSpec:
    options: dict[str, Any] = {"kind": "tool", "tools": [get_rates], **kwargs}
    return SubAgentSpec(
        name=name,
        description=f"{name} specialist",
        system_prompt=f"You are the {name} specialist.",
        model=model or ScriptedChatModel(default="done"),
        **options,
    )


def parent(subs: SubAgents, replies: list[Any]) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(responses=replies)
    agent = create_context_agent(
        model, [subs.tool()], always_include=["delegate"], think=False, checkpointer=InMemorySaver()
    )
    return agent, model


def results(out: dict[str, Any]) -> list[SubAgentResult]:
    return [
        SubAgentResult.model_validate_json(m.text)
        for m in out["messages"]
        if isinstance(m, ToolMessage) and m.name == "delegate"
    ]


def history(turns: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(turns):
        out += [
            HumanMessage(f"parent turn {i}: customer PARENT-SECRET-{i:03d}"),
            AIMessage(f"noted PARENT-SECRET-{i:03d}"),
        ]
    return out


def test_child_sees_nothing_of_a_60_turn_parent_history() -> None:
    child = ScriptedChatModel(
        responses=[
            AIMessage(
                "", tool_calls=[{"name": "get_rates", "args": {"route": "RTM-NYC"}, "id": "k"}]
            ),
            "RTM-NYC costs 3.2 USD/kg.",
        ]
    )
    subs = SubAgents([spec(model=child)])
    agent, model = parent(
        subs,
        [
            AIMessage(
                "", tool_calls=[delegate_call("rates", "Quote the RTM-NYC route", route="RTM-NYC")]
            ),
            "3.2 USD/kg.",
        ],
    )
    out = agent.invoke(
        {"messages": [*history(60), HumanMessage("Quote RTM-NYC")]},
        {"configurable": {"thread_id": "iso"}},
    )
    assert len(child.calls) == 2
    for call in child.calls:
        assert "PARENT-SECRET" not in call.text
        assert call.messages[0].text == "You are the rates specialist."
        assert "RTM-NYC" in call.messages[1].text  # the task and its inputs
    (result,) = results(out)
    assert result.status == "ok" and result.tools_used == ["get_rates"]
    assert "PARENT-SECRET-059" in model.calls[-1].text  # the parent kept its own history
    ratio = next(e for e in out["context_ledger"] if e["kind"] == "delegation")["data"]
    assert ratio["boundary_ratio"] == round(ratio["tokens_consumed"] / ratio["result_tokens"], 2)


def test_large_output_becomes_an_artifact_within_the_cap() -> None:
    report = " ".join(f"Lane {i}: carrier C{i} quotes {i * 1.7:.2f} USD/kg." for i in range(600))
    subs = SubAgents([spec(model=ScriptedChatModel(responses=[report]))], result_cap=400)
    agent, _ = parent(subs, [AIMessage("", tool_calls=[delegate_call("rates", "All lanes")]), "ok"])
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "art"}})
    message = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert subs.counter.count_text(message.text) <= 400
    (result,) = results(out)
    assert result.output is None and result.artifact is not None
    assert out["artifacts"][result.artifact["id"]]["type"] == "subagent_output"
    assert subs.artifacts.get(result.artifact["id"]) == report  # nothing lost


def nested(max_depth: int) -> tuple[SubAgents, ScriptedChatModel]:
    grandchild = ScriptedChatModel(responses=["grandchild answer 42"])
    leaf = spec("leaf", model=grandchild, kind="analysis", tools=())
    middle_model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[delegate_call("leaf", "compute", cid="d2")]),
            "middle relayed the answer",
        ]
    )
    middle = spec("middle", model=middle_model, kind="composition", tools=(), children=[leaf])
    return SubAgents([middle], max_depth=max_depth), grandchild


def test_two_levels_of_nesting() -> None:
    subs, grandchild = nested(max_depth=2)
    agent, _ = parent(subs, [AIMessage("", tool_calls=[delegate_call("middle", "ask")]), "ok"])
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "n2"}})
    assert len(grandchild.calls) == 1
    assert results(out)[0].output == "middle relayed the answer"


def test_depth_limit_returns_a_result_and_everyone_goes_on() -> None:
    subs, grandchild = nested(max_depth=1)
    agent, _ = parent(
        subs, [AIMessage("", tool_calls=[delegate_call("middle", "ask")]), "parent finished"]
    )
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "n1"}})
    assert grandchild.calls == []  # never spawned
    assert out["messages"][-1].text == "parent finished"
    assert results(out)[0].status == "ok"


def test_depth_exceeded_result_has_confidence_zero() -> None:
    subs, _ = nested(max_depth=1)
    result = subs.run("middle", "x", {}, {"configurable": {"lgctx_depth": 1}})
    assert result.status == "depth_exceeded" and result.confidence == 0.0 and result.caveats


def test_child_exception_and_step_limit() -> None:
    broken = spec("broken", model=ScriptedChatModel(responses=[]))  # raises on its first call
    looping = spec(
        "looping",
        max_steps=2,
        model=ScriptedChatModel(
            default=AIMessage(
                "", tool_calls=[{"name": "get_rates", "args": {"route": "X"}, "id": "again"}]
            )
        ),
    )
    subs = SubAgents([broken, looping])
    agent, _ = parent(
        subs,
        [
            AIMessage(
                "",
                tool_calls=[
                    delegate_call("broken", "a", cid="d1"),
                    delegate_call("looping", "b", cid="d2"),
                ],
            ),
            "carried on",
        ],
    )
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "f"}})
    by_agent = {r.agent: r for r in results(out)}
    assert by_agent["broken"].status == "failed" and "ScriptExhausted" in by_agent["broken"].summary
    assert by_agent["looping"].status == "step_limit"
    assert all(r.confidence == 0.0 for r in by_agent.values())
    assert out["messages"][-1].text == "carried on"


def test_async_parallel_children_from_one_step() -> None:
    models = {n: ScriptedChatModel(responses=[f"{n} says hi"]) for n in ("a", "b", "c")}
    subs = SubAgents([spec(n, model=m, kind="analysis", tools=()) for n, m in models.items()])
    calls = [delegate_call(n, f"task {n}", cid=f"d{n}") for n in models]
    agent, _ = parent(subs, [AIMessage("", tool_calls=calls), "all done"])
    out = asyncio.run(
        agent.ainvoke(
            {"messages": [HumanMessage("fan out")]}, {"configurable": {"thread_id": "par"}}
        )
    )
    assert sorted(r.output or "" for r in results(out)) == ["a says hi", "b says hi", "c says hi"]
    seqs = [e["seq"] for e in out["context_ledger"] if e["kind"] == "delegation"]
    assert len(set(seqs)) == 3  # parallel results never collide in the ledger


def test_static_spawn_as_a_node() -> None:
    subs = SubAgents(
        [spec(model=ScriptedChatModel(responses=["quoted"]), kind="analysis", tools=())]
    )
    builder = StateGraph(ContextState)
    builder.add_node("rates", subs.node("rates", lambda s: ("quote", {"route": "A-B"})))
    builder.add_edge(START, "rates")
    out = builder.compile(checkpointer=InMemorySaver()).invoke(
        {"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "node"}}
    )
    assert SubAgentResult.model_validate_json(out["messages"][-1].text).output == "quoted"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "robot"}, "SubAgentSpec.kind"),
        ({"kind": "mcp", "tools": ()}, "SubAgentSpec.tools"),
        ({"system_prompt": "word " * 3_000}, "SubAgentSpec.budget"),
        ({"max_steps": 0}, "SubAgentSpec.max_steps"),
    ],
)
def test_invalid_specs_are_rejected_when_defined(kwargs: dict[str, Any], field: str) -> None:
    base: dict[str, Any] = {
        "name": "x",
        "kind": "tool",
        "description": "d",
        "system_prompt": "p",
        "model": ScriptedChatModel(),
        "tools": [get_rates],
    }
    with pytest.raises(ConfigurationError) as info:
        SubAgentSpec(**{**base, **kwargs})
    assert info.value.field == field


@pytest.mark.slow
def test_resume_mid_delegation_after_sigkill(tmp_path: Path) -> None:
    from tests.scenarios.delegation import CONFIG, build

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.scenarios.delegation",
            str(tmp_path / "db.sqlite"),
            str(tmp_path),
            "block",
        ],
        cwd=ROOT,
    )
    reconcile_log = tmp_path / "reconcile.log"
    deadline = time.monotonic() + 60
    while not reconcile_log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert reconcile_log.exists(), "the child never reached its second tool"
    assert (tmp_path / "fetch_ledger.log").read_text().count("ran") == 1

    graph = build(tmp_path / "db.sqlite", tmp_path, block=False)
    assert graph.get_state(CONFIG).next == ("tools",)  # the delegation was in flight
    out = graph.invoke(None, CONFIG)
    assert out["messages"][-1].text.startswith("Done:")
    assert (tmp_path / "fetch_ledger.log").read_text().count("ran") == 1  # not redone
    assert reconcile_log.read_text().count("ran") == 2  # the step in flight ran again


async def test_delegate_without_inputs_sync_and_async() -> None:
    # The model may leave out the optional `inputs`; both the sync and async tool run.
    bare = {"name": "delegate", "id": "d1", "args": {"agent": "rates", "task": "Quote RTM-NYC"}}
    for run in ("invoke", "ainvoke"):
        subs = SubAgents([spec(model=ScriptedChatModel(default="3.2 USD/kg"))])
        agent, _ = parent(subs, [AIMessage("", tool_calls=[bare]), "done"])
        turn = {"messages": [HumanMessage("Quote it")]}
        config = {"configurable": {"thread_id": run}}
        out = agent.invoke(turn, config) if run == "invoke" else await agent.ainvoke(turn, config)
        (result,) = results(out)
        assert result.status == "ok" and result.output == "3.2 USD/kg"


def test_the_spec_counts_its_system_prompt_as_the_child_sends_it() -> None:
    """The budget check and pre-flight agree: the prompt is a system message, overhead
    included, so a prompt whose bare text just fits the system allocation is refused."""
    counter = TokenCounter()
    prompt = "word " * 40
    bare = counter.count_text(prompt)
    sent = counter.count_message(SystemMessage(prompt))
    assert sent > bare
    window = {"window": 32_000, "messages": 4_000, "tools": 1_000, "auxiliary": 500}
    base: dict[str, Any] = {
        "name": "x",
        "kind": "tool",
        "description": "d",
        "system_prompt": prompt,
        "model": ScriptedChatModel(),
        "tools": [get_rates],
    }
    SubAgentSpec(**base, budget=Budget(system=sent, **window))
    with pytest.raises(ConfigurationError) as info:
        SubAgentSpec(**base, budget=Budget(system=bare, **window))
    assert info.value.field == "SubAgentSpec.budget"
    assert f"needs {sent} tokens" in str(info.value)
