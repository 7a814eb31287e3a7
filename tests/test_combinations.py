"""Every strategy with the agent's other parts, as ``create_context_agent`` builds them:
BACM with ``think``, ARC with recall, and sub-agents under each strategy, for enough
turns at a small window that each strategy acts (compresses, edits, reflects, folds,
condenses). Per turn: no exception, no loop, the turn answered, the delegated result
back in the parent; the strategy acted by the end."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import SubAgents, SubAgentSpec, create_context_agent
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.scripted import thought_about_the_question
from tests.agents import one_tool_agent

STRATEGIES = ("tiered", "adacom", "arc", "bacm", "pace")
TURNS = 12
_QUESTION = re.compile(r"Question (\d+) about (topic\d+)")


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the records."""
    return f"Records on {topic}: " + " ".join(f"entry-{topic}-{i} pallet" for i in range(150))


def asked(messages: Sequence[BaseMessage]) -> tuple[int, str, int] | None:
    """The latest question in a prompt (its number and topic) and where it is. Found
    by its words: placement puts per-call context in the same message, and a strategy
    may add messages of its own after it (BACM's budget line)."""
    for at in range(len(messages) - 1, -1, -1):
        m = messages[at]
        # The last one in the message: per-call context (recall, the thought) goes
        # in front of the user's text and may quote earlier questions.
        found = list(_QUESTION.finditer(m.text)) if m.type == "human" else []
        if found:
            return int(found[-1].group(1)), found[-1].group(2), at
    return None


def agent_model(use: str) -> ScriptedChatModel:
    """Per turn: one call of ``use`` (``lookup``, or ``delegate`` to the researcher)
    about the question's topic, then ``Answer N``; a confident thought per turn."""

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        found = asked(messages)
        if found is None:
            return AIMessage("No question found.")
        number, topic, at = found
        if any(isinstance(m, ToolMessage) for m in messages[at + 1 :]):
            return AIMessage(f"Answer {number}")
        args: dict[str, Any] = {"topic": topic}
        if use == "delegate":
            args = {"agent": "researcher", "task": f"Look up {topic}", "inputs": {}}
        return AIMessage("", tool_calls=[{"name": use, "args": args, "id": f"c{number}"}])

    return ScriptedChatModel(
        default=reply, structured_default=thought_about_the_question("tool_call", use)
    )


def researcher() -> SubAgents:
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(f"Found: {messages[-1].text[:60]}")
        topic = messages[-1].text.split()[-1]
        return AIMessage("", tool_calls=[{"name": "lookup", "args": {"topic": topic}, "id": "l1"}])

    return SubAgents([child_spec("researcher", "looks topics up", "You look topics up.", reply)])


def child_spec(name: str, does: str, system: str, reply: Any, **options: Any) -> SubAgentSpec:
    """A sub-agent that ``does`` with :func:`lookup`, its model scripted by ``reply``."""
    return SubAgentSpec(
        name=name,
        kind="tool",
        description=does,
        system_prompt=system,
        model=ScriptedChatModel(default=reply),
        tools=[lookup],
        **options,
    )


def question(i: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"Question {i} about topic{i}", id=f"q{i}")]}


def config(limit: int = 40) -> Any:
    return {"configurable": {"thread_id": "t"}, "recursion_limit": limit}


def acted(strategy: str, ledger: Sequence[dict[str, Any]]) -> bool:
    """Whether the strategy changed what the model saw, by its ledger."""
    kinds = {e["kind"] for e in ledger}
    if strategy == "pace":
        return any(
            e["data"]["full"] < e["data"]["scored"] for e in ledger if e["kind"] == "pace_context"
        )
    wanted = {"tiered": "compression", "bacm": "fold"}.get(strategy, "context_edit")
    return wanted in kinds


def run_turns(agent: Any, model: ScriptedChatModel, *, think: bool) -> list[dict[str, Any]]:
    """Run the turns; check each; return every ledger entry seen (the checkpoint keeps
    the latest few)."""
    seen: dict[str, dict[str, Any]] = {}
    for i in range(TURNS):
        before = sum(1 for c in model.calls if c.structured)
        out = agent.invoke(question(i), config())
        assert out["messages"][-1].text == f"Answer {i}"
        if think:  # one confident thought a turn, the tool result raises it: no loop
            assert sum(1 for c in model.calls if c.structured) - before == 1
        for e in out["context_ledger"]:
            seen[f"{e['seq']}:{e['ts']}"] = e
    return list(seen.values())


@pytest.mark.parametrize("think", [False, True])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.slow
def test_sub_agents_under_each_strategy(strategy: str, think: bool) -> None:
    # Every other turn delegates (the child's result, capped, enters the parent's
    # history as a tool result), every other one reads a long record itself, so that
    # the parent's history outgrows its 4K window and its strategy acts on both kinds.
    subs = researcher()
    models = {use: agent_model(use) for use in ("delegate", "lookup")}
    answers: dict[str, int] = {}

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        found = asked(messages)
        use = "delegate" if found is None or found[0] % 2 == 0 else "lookup"
        answers[use] = answers.get(use, 0) + 1
        return models[use]._generate(list(messages)).generations[0].message  # type: ignore[return-value]

    model = ScriptedChatModel(
        default=reply, structured_default=thought_about_the_question("tool_call", "delegate")
    )
    agent = create_context_agent(
        model,
        [subs.tool(), lookup],
        strategy=strategy,
        think=think,
        always_include=["delegate", "lookup"],
        budget=Budget.for_window(4_000),
    )
    ledger = run_turns(agent, model, think=think)  # each answered after its tool result
    assert acted(strategy, ledger), sorted({e["kind"] for e in ledger})
    assert answers["delegate"] >= TURNS // 2 and answers["lookup"] >= TURNS // 2


@pytest.mark.slow
def test_bacm_with_think_folds_and_answers_every_turn() -> None:
    model = agent_model("lookup")
    agent = one_tool_agent(model, lookup, "bacm", 4_000, think=True)
    ledger = run_turns(agent, model, think=True)
    assert acted("bacm", ledger)


@pytest.mark.slow
def test_arc_with_recall_reflects_and_recalls_what_it_folded() -> None:
    model = agent_model("lookup")
    agent = one_tool_agent(model, lookup, "arc", 4_000, recall=True, think=False)
    ledger = run_turns(agent, model, think=False)
    assert acted("arc", ledger)
    assert any(e["kind"] == "recall" and e["data"]["items"] for e in ledger)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.slow
def test_a_child_under_each_strategy_reads_more_than_its_window_and_reports(
    strategy: str,
) -> None:
    # The child reads six long records in a 4K window: its own strategy must act for
    # it to finish, and its result (capped) returns to the parent.
    def child(messages: Sequence[BaseMessage]) -> AIMessage:
        read = [m for m in messages if isinstance(m, ToolMessage)]
        ids = {m.tool_call_id for m in read}
        done = sum(1 for k in range(6) if f"r{k}" in ids)
        if done == 6 or (read and read[-1].tool_call_id == "r5"):
            return AIMessage("Read all six records.")
        k = max((int(i[1:]) for i in ids if i.startswith("r")), default=-1) + 1
        call = {"name": "lookup", "args": {"topic": f"part{k}"}, "id": f"r{k}"}
        return AIMessage("", tool_calls=[call])

    window = Budget.for_window(4_000)
    spec = child_spec("reader", "reads records", "You read records.", child, budget=window,
                      strategy=strategy)  # fmt: skip
    subs = SubAgents([spec])
    call = {"agent": "reader", "task": "Read the six records", "inputs": {}}
    parent = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[{"name": "delegate", "args": call, "id": "d"}])],
        default="Thanks.",
    )
    agent = create_context_agent(
        parent,
        [subs.tool()],
        think=False,
        always_include=["delegate"],
        budget=Budget.for_window(16_000),
    )
    out = agent.invoke({"messages": [HumanMessage("Read them", id="h")]}, config())
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert '"status":"ok"' in result.text.replace(" ", ""), result.text[:300]
    assert "Read all six records." in result.text
    assert out["messages"][-1].text == "Thanks."
    last = spec.model.calls[-1].text  # type: ignore[attr-defined]
    whole = [k for k in range(6) if f"entry-part{k}-149 " in last]
    assert len(whole) < 6  # the child's strategy took some out of its last prompt
