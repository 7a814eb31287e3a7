"""Seeded synthetic sessions: the paper's four session types and the long-horizon run.

All are cut from :func:`~langgraph_ctx.testing.workloads.generate_session`, whose facts are
planted in user messages and tool results and probed by later questions. A
probe survives if the fact's value is in the prompt of the call that asks it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_ctx.testing.workloads import Workload as Script
from langgraph_ctx.testing.workloads import generate_session

from .session import Probe, Session, Step


@dataclass(frozen=True, kw_only=True)
class SessionType:
    """One of the paper's session types, as generator settings."""

    title: str
    messages: tuple[int, int]
    """Length of a session, in messages (drawn per session)."""
    tool_rate: float
    result_chars: tuple[int, int]
    probe_rate: float


SESSION_TYPES: dict[str, SessionType] = {
    "qa": SessionType(
        title="simple Q&A",
        messages=(10, 20),
        tool_rate=0.15,
        result_chars=(400, 1_200),
        probe_rate=0.35,
    ),
    "analysis": SessionType(
        title="data analysis",
        messages=(30, 50),
        tool_rate=0.7,
        result_chars=(1_200, 4_000),
        probe_rate=0.15,
    ),
    "workflow": SessionType(
        title="workflow orchestration",
        messages=(50, 80),
        tool_rate=0.8,
        result_chars=(800, 3_000),
        probe_rate=0.15,
    ),
    "exploration": SessionType(
        title="multi-tool exploration",
        messages=(80, 120),
        tool_rate=0.9,
        result_chars=(1_500, 6_000),
        probe_rate=0.1,
    ),
}

LONG_RESULT_CHARS = (2_400, 4_800)
"""Every non-probe turn calls 1-3 tools with results this long: about 1,500 tokens of new
conversation per turn (measured and printed with the results)."""


def steps_from_messages(messages: Sequence[BaseMessage]) -> tuple[list[Step], dict[str, str]]:
    """Cut a recorded history at each assistant message: one step per model call.

    Returns the steps and, for each input message id, the id of its step.
    Turn numbers come from generator ids (``t0042-...``).
    """
    steps: list[Step] = []
    where: dict[str, str] = {}
    pending: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, AIMessage):
            step_id = str(m.id)
            turn = int(step_id[1:5]) if step_id[:1] == "t" and step_id[1:5].isdigit() else 0
            steps.append(Step(step_id, tuple(pending), m, turn))
            where.update((str(p.id), step_id) for p in pending)
            pending = []
        else:
            pending.append(m)
    return steps, where


def script_session(name: str, script: Script, turns: int) -> Session:
    """Turns ``[0, turns)`` of a generated script, with the probes they ask."""
    steps, where = steps_from_messages(script.messages(turns))
    probes = [
        Probe(
            f"{name}: turn {t.index} {t.probe.key}",
            (t.probe.value,),
            at=where[f"t{t.index:04d}-user"],
        )
        for t in script.turns[:turns]
        if t.probe is not None
    ]
    return Session(name, tuple(steps), tuple(probes))


def _turns_for(script: Script, target: int, bounds: tuple[int, int]) -> int:
    """The turn count whose history length, in messages, is nearest ``target`` within ``bounds``."""
    lo, hi = bounds
    count, best, gap = 0, 1, None
    for i, turn in enumerate(script.turns):
        count += 2 + (1 + len(turn.tool_steps) if turn.tool_steps else 0)
        if count > hi:
            break
        if count >= lo and (gap is None or abs(count - target) < gap):
            best, gap = i + 1, abs(count - target)
    return best


def typed_sessions(kind: str, seed: int, count: int) -> list[Session]:
    """``count`` sessions of one type; session k uses generator seed ``seed * 1000 + k``."""
    spec = SESSION_TYPES[kind]
    sessions = []
    for k in range(count):
        script_seed = seed * 1_000 + k
        target = random.Random(f"{kind}:{script_seed}").randint(*spec.messages)
        script = generate_session(
            spec.messages[1],  # a turn holds at least 2 messages: always enough
            seed=script_seed,
            tool_rate=spec.tool_rate,
            result_chars=spec.result_chars,
            probe_rate=spec.probe_rate,
        )
        turns = _turns_for(script, target, spec.messages)
        sessions.append(script_session(f"{kind} #{k}", script, turns))
    return sessions


def long_session(seed: int, turns: int) -> Session:
    """One session of ``turns`` turns, about 1,500 tokens each."""
    script = generate_session(
        turns, seed=seed, tool_rate=1.0, result_chars=LONG_RESULT_CHARS, probe_rate=0.05
    )
    return script_session("long", script, turns)
