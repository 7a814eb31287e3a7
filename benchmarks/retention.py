"""Retention under a tight message budget: what survives in the context the model receives.

Replays real sessions (BFCL v4 memory, tau-bench airline) turn by turn under 2K and 4K token
message budgets: our pipeline, LangChain's SummarizationMiddleware, ``trim_messages``, langmem's
``summarize_messages`` and no management, all with the same offline extractive summarizer.
Run from the repo root: ``python benchmarks/retention.py [--first-trial]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from _common import data_dir, emit, header, table
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langmem.short_term import summarize_messages
from pydantic import Field

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, TieredCompression
from langgraph_ctx.nodes import call_llm_node
from langgraph_ctx.summarizers import ExtractiveSummarizer, entities
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter, message_text

BUDGETS = (2_000, 4_000)
SCENARIOS = ("customer", "finance", "healthcare", "notetaker", "student")
CFG = {"configurable": {"thread_id": "replay"}}
COUNTER = TokenCounter()
_COUNTS: dict[tuple[str, str], int] = {}
Steps = list[tuple[list[BaseMessage], AIMessage]]


def count(messages: Sequence[BaseMessage]) -> int:
    """Exact tiktoken tokens (text, tool calls, 3 per message); every strategy uses it."""
    total = 0
    for m in messages:
        key = (m.type, message_text(m)[0])
        if key not in _COUNTS:
            _COUNTS[key] = COUNTER.count_message(m)
        total += _COUNTS[key]
    return total


@dataclass
class Session:
    name: str
    system: str | None  # a fixed policy: pinned by every strategy, outside the budget
    steps: Steps  # per model call: the new input messages, then the (scripted) reply
    probes: list[tuple[str, list[str], str]]  # (id, accepted answers, source sentence)


@dataclass
class Result:
    final: list[BaseMessage]  # the prompt of the last model call
    prompts: list[int]  # tokens of every prompt sent over the replay, policy included
    summaries: list[str]  # every summary written


class CountingSummarizer(ExtractiveSummarizer):
    def __init__(self) -> None:
        super().__init__(COUNTER)
        self.log: list[str] = []

    def summarize(self, messages: Any, *, previous: str | None = None, max_tokens: int) -> str:
        self.log.append(super().summarize(messages, previous=previous, max_tokens=max_tokens))
        return self.log[-1]


_LANGMEM = re.compile(r"This is summary of the conversation so far: (.*)\n\nExtend this summ", re.S)
_INSTRUCTIONS = ("Create a summary of the conversation above", "This is summary of the conv")


class ExtractiveChatModel(BaseChatModel):
    """The peers' summary model: our extractive summarizer behind the chat-model interface."""

    max_tokens: int
    summarizer: Any = Field(default_factory=CountingSummarizer)

    @property
    def _llm_type(self) -> str:
        return "extractive"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if messages[-1].text.startswith(_INSTRUCTIONS):  # langmem's instruction: not conversation
            prior = _LANGMEM.match(messages[-1].text)
            messages = ([SystemMessage(prior.group(1))] if prior else []) + messages[:-1]
        text = self.summarizer.summarize(messages, max_tokens=self.max_tokens)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def _scripted(s: Session) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[reply for _, reply in s.steps], default="ok")


def _head(s: Session) -> list[BaseMessage]:
    return [SystemMessage(s.system, id="policy")] if s.system else []


def _from_calls(model: ScriptedChatModel, summaries: list[str]) -> Result:
    calls = model.calls
    return Result(list(calls[-1].messages), [count(c.messages) for c in calls], summaries)


def run_ours(s: Session, budget: int) -> Result:
    """Messages allocation = budget, red line (85% of the window) = pinned policy + budget."""
    system = count(_head(s))
    window = math.ceil((system + budget) / 0.85)
    spare = window - system - budget
    sizes = {"system": system, "messages": budget, "tools": 0, "auxiliary": 0}
    limits = Budget(
        window=window, **sizes, output_reserve=spare - spare // 3, safety_margin=spare // 3
    )
    model, summarizer = _scripted(s), CountingSummarizer()
    pipeline = Pipeline([PreflightCheck(), TieredCompression(summarizer=summarizer)], budget=limits)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", END)
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    for i, (inputs, _) in enumerate(s.steps):
        graph.invoke({"messages": [*_head(s), *inputs] if i == 0 else inputs}, CFG)
    return _from_calls(model, summarizer.log)


def run_summarization_mw(s: Session, budget: int, keep_tokens: bool = False) -> Result:
    model, summary_model = _scripted(s), ExtractiveChatModel(max_tokens=budget // 4)
    keep = ("tokens", budget // 2) if keep_tokens else ("messages", 20)
    mw = SummarizationMiddleware(
        summary_model,  # counts with `count`; summarizes with the same model, on the raw messages
        trigger=("tokens", budget),
        keep=keep,
        token_counter=count,
        summarizer=lambda messages: summary_model.invoke(messages).text,
    )
    saver = InMemorySaver()
    agent = create_agent(model, [], system_prompt=s.system, middleware=[mw], checkpointer=saver)
    for inputs, _ in s.steps:
        agent.invoke({"messages": inputs}, CFG)
    return _from_calls(model, summary_model.summarizer.log)


def _stateless(s: Session, prompt_for: Callable[[list[BaseMessage]], list[BaseMessage]]) -> Result:
    history, prompt, sizes = _head(s), [], []
    for inputs, reply in s.steps:
        history.extend(inputs)
        prompt = prompt_for(history)
        sizes.append(count(prompt))
        history.append(reply)
    return Result(prompt, sizes, [])


def run_trim(s: Session, budget: int) -> Result:
    limit = budget + count(_head(s))
    options = {"strategy": "last", "start_on": "human", "include_system": True}
    return _stateless(s, partial(trim_messages, max_tokens=limit, token_counter=count, **options))


def run_langmem(s: Session, budget: int) -> Result:
    model, state = ExtractiveChatModel(max_tokens=budget // 4), {"running": None}
    options = {"model": model, "max_tokens": budget + count(_head(s)), "token_counter": count}
    options |= {"max_tokens_before_summary": budget, "max_summary_tokens": budget // 4}

    def prompt_for(history: list[BaseMessage]) -> list[BaseMessage]:
        result = summarize_messages(history, running_summary=state["running"], **options)
        state["running"] = result.running_summary
        return result.messages

    result = _stateless(s, prompt_for)
    result.summaries = model.summarizer.log
    return result


STRATEGIES: dict[str, Callable[[Session, int], Result]] = {
    "ours (Preflight + TieredCompression)": run_ours,
    "SummarizationMiddleware, keep 20 msgs": run_summarization_mw,
    "SummarizationMiddleware, keep b/2 tokens": partial(run_summarization_mw, keep_tokens=True),
    "trim_messages (last)": run_trim,
    "langmem summarize_messages": run_langmem,
    "no management (ceiling)": lambda s, b: _stateless(s, list),
}


def _jsonl(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def bfcl_sessions() -> list[Session]:
    """One session per scenario: all its prerequisite conversations in file order."""
    base = data_dir() / "bfcl-memory"
    answers = {a["id"]: a for a in _jsonl(base / "BFCL_v4_memory_answer.json")}
    questions = _jsonl(base / "BFCL_v4_memory.json")
    sessions = []
    for scenario in SCENARIOS:
        steps: Steps = []
        for conv in _jsonl(base / f"memory_{scenario}.json"):
            for turn in conv["question"]:
                n = len(steps)
                user = [HumanMessage(m["content"], id=f"u{n}.{k}") for k, m in enumerate(turn)]
                steps.append((user, AIMessage("ok", id=f"a{n}")))
        gold = [answers[q["id"]] for q in questions if q["scenario"] == scenario]
        probes = [(a["id"], a["ground_truth"], a["source"]) for a in gold]
        sessions.append(Session(scenario, None, steps, probes))
    return sessions


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [] if isinstance(value, bool) or value is None or value == "" else [str(value)]


def _call(c: dict[str, Any]) -> dict[str, Any]:
    function = c["function"]
    return {"name": function["name"], "args": json.loads(function["arguments"]), "id": c["id"]}


def tau_sessions(all_trials: bool) -> list[Session]:
    """The original assistant messages are the scripted model's replies, in order."""
    data = json.loads((data_dir() / "tau-bench" / "gpt-4o-airline.json").read_text("utf-8"))
    sessions = []
    for traj in data:
        values = sorted(set(_scalars([a["kwargs"] for a in traj["info"]["task"]["actions"]])))
        if not values or (traj["trial"] != 0 and not all_trials):
            continue
        steps: Steps = []
        pending: list[BaseMessage] = []
        for i, m in enumerate(traj["traj"][1:], 1):
            if m["role"] == "assistant":
                calls = [_call(c) for c in m.get("tool_calls") or ()]
                steps.append((pending, AIMessage(m["content"] or "", tool_calls=calls, id=f"m{i}")))
                pending = []
            elif m["role"] == "tool":
                call_id, tool = m["tool_call_id"], m.get("name")
                pending.append(
                    ToolMessage(m["content"], tool_call_id=call_id, name=tool, id=f"m{i}")
                )
            else:
                pending.append(HumanMessage(m["content"], id=f"m{i}"))
        if pending:  # what the user or a tool said last: one more call, answered "ok"
            steps.append((pending, AIMessage("ok", id="final")))
        name = f"task {traj['task_id']} trial {traj['trial']}"
        probes = [(f"{name}: {v}", [v], "") for v in values]
        sessions.append(Session(name, traj["traj"][0]["content"], steps, probes))
    return sessions


def _text(messages: Sequence[BaseMessage], system: str | None) -> str:
    return "\n".join(message_text(m)[0] for m in messages if m.text != system).casefold()


def _has(text: str, answers: list[str], whole_word: bool) -> bool:
    if not whole_word:
        return any(a.casefold() in text for a in answers)
    return any(
        re.search(rf"(?<![a-z0-9]){re.escape(a.casefold())}(?![a-z0-9])", text) for a in answers
    )


def _full(s: Session) -> list[BaseMessage]:
    """The whole conversation as of the last model call (the policy aside)."""
    return [m for inputs, reply in s.steps for m in (*inputs, reply)][:-1]


def _tally(s: Session, r: Result, budget: int, whole_word: bool, explain: bool) -> Counter[str]:
    policy, text, history = count(_head(s)), _text(r.final, s.system), _text(_full(s), None)
    found = [_has(text, a, whole_word) for _, a, _ in s.probes]
    reach = [_has(history, a, whole_word) for _, a, _ in s.probes]
    n = Counter(hits=sum(found), reach=sum(reach), probes=len(found), calls=len(r.prompts))
    n["kept"] = sum(f and h for f, h in zip(found, reach, strict=True))
    n["word"] = sum(_has(text, a, True) for _, a, _ in s.probes)
    n["hist"], n["ctx"] = count(_full(s)), count(r.final) - policy
    n["over"] = sum(p - policy > budget for p in r.prompts)
    n["sent"], n["summ"] = sum(r.prompts), len(r.summaries)
    if explain:
        _explain(s, r, found, budget)
    return n


def evaluate(sessions: list[Session], whole_word: bool, label: str) -> list[list[str]]:
    rows = []
    for budget in BUDGETS:
        for name, run in STRATEGIES.items():
            n, ours = Counter[str](), name.startswith("ours")
            for s in sessions:
                n += _tally(s, run(s, budget), budget, whole_word, ours and not whole_word)
            shares = [n["hits"] / n["probes"], n["kept"] / n["reach"], n["word"] / n["probes"]]
            row = [f"{budget:,}", name, *(f"{x:.1%}" for x in shares[: 2 + (not whole_word)])]
            row += [f"{n['ctx'] / len(sessions):,.0f}", f"{n['hist'] / n['ctx']:.1f}:1"]
            rows.append([*row, f"{n['over'] / n['calls']:.0%}", f"{n['sent']:,}", str(n["summ"])])
            print(f"{label} {budget:,} {name}: {n['hits']}/{n['probes']}", file=sys.stderr)
    return rows


LOSSES: Counter[str] = Counter()
_PARTS = re.compile(r"[\s/]+")


def _explain(s: Session, r: Result, found: list[bool], budget: int) -> None:
    """Why ours lost an answer the full history holds: tallied, with examples on stderr."""
    turns = [m.text for m in _full(s) if m.type == "human"]
    for (qid, answers, source), ok in zip(s.probes, found, strict=True):
        src = next((t for t in turns if _has(t.casefold(), answers, False)), None)
        if ok or src is None:
            continue
        ents = {e.casefold() for e in entities(src)}
        if any(_has(t.casefold(), answers, False) for t in r.summaries):
            why = "kept by an earlier summary, lost when summaries were re-summarized"
        elif any(len(p := _PARTS.split(a.casefold())) > 1 and ents >= set(p) for a in answers):
            why = "a multi-part value, kept only in pieces ('Also mentioned: Goldman; Sachs')"
        elif any(a.casefold() in ents for a in answers):
            why = "an entity, dropped with its line for room when the summary was full"
        elif any(a[:1].isupper() and a in src for a in answers):
            why = "a capitalized name the entity regex misses: line dropped"
        else:
            why = "no entity (plain words): line dropped for room when the summary was full"
        LOSSES[f"{budget:,}: {why}"] += 1
        print(f"  LOST {budget} {qid} {answers[:2]} ({why}): {source[:80]!r}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--first-trial", action="store_true", help="tau-bench trial 0 only")
    args = parser.parse_args()
    logging.getLogger("langgraph_ctx.compression").setLevel(logging.ERROR)  # see "over budget"
    bfcl, tau = bfcl_sessions(), tau_sessions(not args.first_trial)
    cols = ["final context (mean tokens)", "compression", "calls over budget", "tokens sent"]
    cols += ["summarizer calls"]
    lines = header("Retention under a tight message budget")
    lines += ["### BFCL v4 memory: accepted answers in the final context", ""]
    head = ["budget", "strategy", "answers present", "of those in history", "whole word"]
    lines += table([*head, *cols], evaluate(bfcl, False, "bfcl"), left=2)
    lines += ["", "Why ours lost answers that the full history holds:", ""]
    lines += [f"- {why}: {k}" for why, k in sorted(LOSSES.items())]
    lines += ["", "### tau-bench airline: gold-action argument values in the final context", ""]
    head = ["budget", "strategy", "values present", "of those in history"]
    lines += table([*head, *cols], evaluate(tau, True, "tau"), left=2)
    over = ", ".join(f"{sum(count(_full(s)) > b for s in tau)} over {b:,}" for b in BUDGETS)
    trials = "trial 0" if args.first_trial else "all 4 trials"
    turns, questions = sum(len(s.steps) for s in bfcl), sum(len(s.probes) for s in bfcl)
    values = sum(len(s.probes) for s in tau)
    lines += ["", f"BFCL: {len(bfcl)} sessions, {turns} user turns, {questions} questions."]
    lines += [f"tau-bench: {len(tau)} trajectories ({trials}, with gold actions; {over} tokens), "]
    lines[-1] += f"{values:,} argument values. Method and settings: benchmarks/README.md."
    emit("retention", lines)


if __name__ == "__main__":
    main()
