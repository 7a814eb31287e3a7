"""The delegation workload, and its delegated form run through real sub-agents.

A parent works through research tasks. Each needs five lookups whose results
are 1-4 KB documents, logs and JSON rows (some carry a planted fact), then an
answer that states the facts found. Later the user asks about facts from tasks
at least two back. Every strategy replays the parent doing the lookups itself;
``ours + sub-agents`` (see :func:`delegate`) hands each task to a real
:class:`~langgraph_ctx.agent.subagents.SubAgents` child instead, and the parent
receives only the child's capped result.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from langgraph_ctx.agent.subagents import SubAgents, SubAgentSpec
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import Fact, generate_session

from .session import Lookup, Probe, Session, Step, Task

LOOKUPS_PER_TASK = 5


def _call(lookup: Lookup, step_id: str) -> AIMessage:
    call = {"name": lookup.name, "args": lookup.args, "id": lookup.call_id, "type": "tool_call"}
    return AIMessage("", tool_calls=[call], id=step_id)


def _answer(task: int, facts: list[Fact]) -> str:
    found = "; ".join(f"{f.question.rstrip('?')}: {f.value}" for f in facts)
    return f"Task {task} done. " + (f"Findings: {found}." if found else "Nothing notable found.")


def delegation_session(seed: int, tasks: int) -> Session:
    """``tasks`` research tasks of five lookups each, with probes about earlier tasks."""
    script = generate_session(
        tasks * 4 + 10, seed=seed, tool_rate=1.0, result_chars=(1_000, 4_000), probe_rate=0.0
    )
    planted = {f.turn: f for f in script.facts if f.where == "tool"}  # in the turn's 1st result
    pool = [
        (
            Lookup(s.name, dict(s.args), s.call_id, s.result),
            planted.get(t.index) if k == 0 else None,
        )
        for t in script.turns
        for k, s in enumerate(t.tool_steps)
    ]
    rng = random.Random(f"delegation:{seed}")
    steps: list[Step] = []
    probes: list[Probe] = []
    task_list: list[Task] = []
    learned: list[tuple[int, Fact]] = []
    for j in range(1, tasks + 1):
        chunk = pool[(j - 1) * LOOKUPS_PER_TASK : j * LOOKUPS_PER_TASK]
        text = (
            f"Task {j}: run these {len(chunk)} lookups ({', '.join(lk.name for lk, _ in chunk)}) "
            "and report every id, amount, name and date that matters, exactly."
        )
        first = len(steps)
        inputs: tuple[BaseMessage, ...] = (HumanMessage(text, id=f"d{j}-task"),)
        for k, (lookup, _) in enumerate(chunk):
            call = _call(lookup, f"d{j}-call{k}")
            steps.append(Step(str(call.id), inputs, call, j))
            result_id = f"d{j}-result{k}"
            inputs = (
                ToolMessage(
                    lookup.result, tool_call_id=lookup.call_id, name=lookup.name, id=result_id
                ),
            )
        facts = [f for _, f in chunk if f is not None]
        steps.append(
            Step(f"d{j}-answer", inputs, AIMessage(_answer(j, facts), id=f"d{j}-answer"), j)
        )
        task_list.append(Task(text, first, len(steps) - 1, tuple(lk for lk, _ in chunk)))
        learned += [(j, f) for f in facts]
        asked = {p.id for p in probes}
        ready = [f for t, f in learned if t <= j - 2 and f.key not in asked]
        if ready and rng.random() < 0.6:
            fact = rng.choice(ready)
            reply = AIMessage(f"{fact.question.rstrip('?')}: {fact.value}.", id=f"d{j}-probe")
            steps.append(
                Step(str(reply.id), (HumanMessage(fact.question, id=f"d{j}-ask"),), reply, j)
            )
            probes.append(Probe(fact.key, (fact.value,), at=str(reply.id)))
    return Session("delegation", tuple(steps), tuple(probes), tasks=tuple(task_list))


def _tools(task: Task) -> list[BaseTool]:
    """Tools that answer the task's lookups from their planned results."""
    planned = {(lk.name, json.dumps(lk.args, sort_keys=True)): lk.result for lk in task.lookups}

    def make(name: str) -> BaseTool:
        def run(**kwargs: Any) -> str:
            return planned.get((name, json.dumps(kwargs, sort_keys=True)), '{"error": "unknown"}')

        schema = {"type": "object", "properties": {}, "additionalProperties": True}
        return StructuredTool.from_function(
            run, name=name, description=f"Look up {name}.", args_schema=schema
        )

    return [make(n) for n in dict.fromkeys(lk.name for lk in task.lookups)]


def delegate(session: Session) -> tuple[Session, int]:
    """Each task run by a real sub-agent; the parent's steps carry only its capped result.

    Returns the parent's session and the tokens the children consumed (their
    prompts and replies over all their calls, as their provider reports them).
    """
    steps: list[Step] = []
    consumed = 0
    by_first = {t.first: t for t in session.tasks}
    i = 0
    while i < len(session.steps):
        task = by_first.get(i)
        if task is None:
            steps.append(session.steps[i])
            i += 1
            continue
        head, answer = session.steps[i], session.steps[task.last].reply
        calls = [_call(lk, f"child-{k}") for k, lk in enumerate(task.lookups)]
        spec = SubAgentSpec(
            name="researcher",
            kind="analysis",
            description="runs record lookups and reports the values that matter",
            system_prompt="Run the lookups you are given and report ids, amounts, names and "
            "dates exactly as the tools returned them.",
            tools=_tools(task),
            model=ScriptedChatModel(responses=[*calls, AIMessage(answer.text)]),
        )
        subagents = SubAgents([spec])
        result = subagents.run("researcher", task.text, {}, {"configurable": {"thread_id": "c"}})
        consumed += result.tokens_consumed
        text, _ = subagents.render(result)
        call_id = f"delegate-{i}"
        call = {
            "name": "delegate",
            "args": {"agent": "researcher", "task": task.text},
            "id": call_id,
            "type": "tool_call",
        }
        steps.append(
            Step(head.id, head.inputs, AIMessage("", tool_calls=[call], id=head.id), head.turn)
        )
        back = ToolMessage(text, tool_call_id=call_id, name="delegate", id=f"{answer.id}-result")
        steps.append(Step(str(answer.id), (back,), answer, head.turn))
        i = task.last + 1
    return replace(session, steps=tuple(steps), tasks=()), consumed
