"""Real sessions, read at run time from the shared data directory (never packaged).

- BFCL v4 memory: each scenario's prerequisite conversations, in file order, make
  one session; every user turn is one call, answered ``ok``. The scenario's
  questions are asked after it: an accepted answer must be in the last prompt.
- tau-bench airline: each trajectory with gold actions. The non-assistant messages
  since the previous assistant turn are one call's input; the original assistant
  message (tool calls included) is the reply. Every gold-action argument value
  must be in the last prompt, as a whole word. The policy is pinned, not searched.

``benchmarks/retention.py`` replays these same sessions, so the numbers compare.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx.errors import ConfigurationError

from .session import Probe, Session, Step

SCENARIOS = ("customer", "finance", "healthcare", "notetaker", "student")
DATA_ENV = "LANGGRAPH_CTX_DATA"


def data_dir(override: Path | None = None) -> Path:
    """``override``, else ``$LANGGRAPH_CTX_DATA``, else ``../shared/data`` from the working
    directory or from the repository this package is checked out in."""
    env = os.environ.get(DATA_ENV)
    candidates = [override] if override else [Path(env)] if env else []
    if not candidates:
        candidates = [
            Path.cwd().parent / "shared" / "data",
            Path(__file__).resolve().parents[3] / "shared" / "data",
        ]
    for path in candidates:
        if path.is_dir():
            return path
    raise ConfigurationError(
        "data", f"no data directory at {', '.join(map(str, candidates))}; set ${DATA_ENV}"
    )


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigurationError("data", f"missing data file {path}")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def bfcl_sessions(base: Path) -> list[Session]:
    """One session per scenario, its questions probed against the last prompt."""
    base = base / "bfcl-memory"
    answers = {a["id"]: a for a in _jsonl(base / "BFCL_v4_memory_answer.json")}
    questions = _jsonl(base / "BFCL_v4_memory.json")
    sessions = []
    for scenario in SCENARIOS:
        steps: list[Step] = []
        for conv in _jsonl(base / f"memory_{scenario}.json"):
            for turn in conv["question"]:
                n = len(steps)
                user = tuple(HumanMessage(m["content"], id=f"u{n}.{k}") for k, m in enumerate(turn))
                steps.append(Step(f"a{n}", user, AIMessage("ok", id=f"a{n}"), n))
        gold = [answers[q["id"]] for q in questions if q["scenario"] == scenario]
        probes = tuple(Probe(a["id"], tuple(a["ground_truth"])) for a in gold)
        sessions.append(Session(f"bfcl {scenario}", tuple(steps), probes))
    return sessions


def bfcl_questions(base: Path) -> dict[str, str]:
    """Each BFCL question's text, by id: what the user asks at the end of the session."""
    questions = _jsonl(base / "bfcl-memory" / "BFCL_v4_memory.json")
    return {
        q["id"]: " ".join(m["content"] for turn in q["question"] for m in turn) for q in questions
    }


def tau_questions(base: Path) -> dict[str, str]:
    """Per trajectory (by session name), what the agent is about to do when it needs the
    gold values: the gold actions by name and argument names, never their values."""
    path = base / "tau-bench" / "gpt-4o-airline.json"
    out = {}
    for traj in json.loads(path.read_text("utf-8")):
        actions = traj["info"]["task"]["actions"]
        calls = "; ".join(f"{a['name']}({', '.join(a['kwargs'])})" for a in actions)
        out[f"task {traj['task_id']} trial {traj['trial']}"] = f"Now do: {calls}."
    return out


def bfcl_sources(base: Path) -> dict[str, str]:
    """Each BFCL question's ``source``: the excerpt of the conversation its answer is in."""
    answers = _jsonl(base / "bfcl-memory" / "BFCL_v4_memory_answer.json")
    return {a["id"]: a["source"] for a in answers}


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [] if isinstance(value, bool) or value is None or value == "" else [str(value)]


def _call(c: dict[str, Any]) -> dict[str, Any]:
    function = c["function"]
    return {"name": function["name"], "args": json.loads(function["arguments"]), "id": c["id"]}


def tau_sessions(base: Path, *, first_trial_only: bool = False) -> list[Session]:
    """Every trajectory with gold actions (all four trials unless told otherwise)."""
    path = base / "tau-bench" / "gpt-4o-airline.json"
    if not path.is_file():
        raise ConfigurationError("data", f"missing data file {path}")
    sessions = []
    for traj in json.loads(path.read_text("utf-8")):
        values = sorted(set(_scalars([a["kwargs"] for a in traj["info"]["task"]["actions"]])))
        if not values or (first_trial_only and traj["trial"] != 0):
            continue
        steps: list[Step] = []
        pending: list[BaseMessage] = []
        for i, m in enumerate(traj["traj"][1:], 1):
            if m["role"] == "assistant":
                calls = [_call(c) for c in m.get("tool_calls") or ()]
                reply = AIMessage(m["content"] or "", tool_calls=calls, id=f"m{i}")
                steps.append(Step(f"m{i}", tuple(pending), reply, len(steps)))
                pending = []
            elif m["role"] == "tool":
                call_id, tool = m["tool_call_id"], m.get("name")
                pending.append(
                    ToolMessage(m["content"], tool_call_id=call_id, name=tool, id=f"m{i}")
                )
            else:
                pending.append(HumanMessage(m["content"], id=f"m{i}"))
        if pending:  # what the user or a tool said last: one more call, answered "ok"
            steps.append(Step("final", tuple(pending), AIMessage("ok", id="final"), len(steps)))
        name = f"task {traj['task_id']} trial {traj['trial']}"
        probes = tuple(Probe(f"{name}: {v}", (v,), whole_word=True) for v in values)
        sessions.append(Session(name, tuple(steps), probes, system=traj["traj"][0]["content"]))
    return sessions
