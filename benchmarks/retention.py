"""Retention under a tight message budget: what survives in the context the model receives.

Replays real sessions (BFCL v4 memory, tau-bench airline) turn by turn under 2K and 4K token
message budgets: our pipeline, LangChain's SummarizationMiddleware, ``trim_messages``, langmem's
``summarize_messages`` and no management, all with the same offline extractive summarizer.
Then ours alone on BFCL from 1K to 8K: the retention / compression frontier. The sessions
and the summarizer are the harness's (``benchmarks.harness``).
Run from the repo root: ``python benchmarks/retention.py [--first-trial]``.

With ``--recall`` (issue 14) it writes ``results/retention_recall.md`` instead: each
question asked as the user message at its point (forked from the end of the replay),
ours with and without recall from the archive, the peers beside them.
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from _common import emit, header, table
from harness.realdata import (
    bfcl_questions,
    bfcl_sessions,
    bfcl_sources,
    data_dir,
    tau_questions,
    tau_sessions,
)
from harness.session import Session, TokenTally, holds, prompt_text
from harness.summaries import (
    Clock,
    CountingSummarizer,
    ExtractiveChatModel,
    SummaryLog,
)
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, trim_messages
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langmem.short_term import summarize_messages

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, TieredCompression
from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.compression import entities
from langgraph_ctx.errors import BudgetExceededError, ConfigurationError
from langgraph_ctx.middleware import MemoryRecall
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.testing import ScriptedChatModel

BUDGETS = (2_000, 4_000)
FRONTIER = (1_000, 2_000, 3_000, 4_000, 6_000, 8_000)  # ours alone, on BFCL
CFG = {"configurable": {"thread_id": "replay"}}


count = TokenTally()  # one for every strategy and session
SOURCES: dict[str, str] = {}  # BFCL question id -> the excerpt its answer is in (for stderr)


@dataclass
class Result:
    final: list[BaseMessage]  # the prompt of the last model call
    prompts: list[int]  # tokens of every prompt sent over the replay, policy included
    summaries: list[str]  # every summary written


def _summarizer() -> CountingSummarizer:
    """The extractive summarizer, with a fresh log of what it writes."""
    return CountingSummarizer(SummaryLog(count, Clock()))


def _summary_model(max_tokens: int) -> ExtractiveChatModel:
    """The peers' summary model: the same summarizer behind the chat-model interface."""
    return ExtractiveChatModel(max_tokens=max_tokens, summarizer=_summarizer())


def _scripted(s: Session) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[step.reply for step in s.steps], default="ok")


def _head(s: Session) -> list[BaseMessage]:
    return [SystemMessage(s.system, id="policy")] if s.system else []


def _from_calls(model: ScriptedChatModel, summaries: list[str]) -> Result:
    calls = model.calls
    return Result(list(calls[-1].messages), [count(c.messages) for c in calls], summaries)


def limits_for(s: Session, budget: int) -> Budget:
    """Messages allocation = budget, red line (85% of the window) = pinned policy + budget."""
    system = count(_head(s))
    window = math.ceil((system + budget) / 0.85)
    spare = window - system - budget
    sizes = {"system": system, "messages": budget, "tools": 0, "auxiliary": 0}
    return Budget(
        window=window, **sizes, output_reserve=spare - spare // 3, safety_margin=spare // 3
    )


def run_ours(s: Session, budget: int) -> Result:
    """Ours under :func:`limits_for`'s budget."""
    limits = limits_for(s, budget)
    model, summarizer = _scripted(s), _summarizer()
    pipeline = Pipeline([PreflightCheck(), TieredCompression(summarizer=summarizer)], budget=limits)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", END)
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    for i, step in enumerate(s.steps):
        _refusable(graph, {"messages": [*(_head(s) if i == 0 else ()), *step.inputs]}, CFG)
    return _from_calls(model, summarizer.log.texts)


def run_summarization_mw(s: Session, budget: int, keep_tokens: bool = False) -> Result:
    model, summary_model = _scripted(s), _summary_model(budget // 4)
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
    for step in s.steps:
        agent.invoke({"messages": list(step.inputs)}, CFG)
    return _from_calls(model, summary_model.summarizer.log.texts)


def _stateless(s: Session, prompt_for: Callable[[list[BaseMessage]], list[BaseMessage]]) -> Result:
    history, prompt, sizes = _head(s), [], []
    for step in s.steps:
        history.extend(step.inputs)
        prompt = prompt_for(history)
        sizes.append(count(prompt))
        history.append(step.reply)
    return Result(prompt, sizes, [])


def run_trim(s: Session, budget: int) -> Result:
    limit = budget + count(_head(s))
    options = {"strategy": "last", "start_on": "human", "include_system": True}
    return _stateless(s, partial(trim_messages, max_tokens=limit, token_counter=count, **options))


def run_langmem(s: Session, budget: int) -> Result:
    model, state = _summary_model(budget // 4), {"running": None}
    options = {"model": model, "max_tokens": budget + count(_head(s)), "token_counter": count}
    options |= {"max_tokens_before_summary": budget, "max_summary_tokens": budget // 4}

    def prompt_for(history: list[BaseMessage]) -> list[BaseMessage]:
        result = summarize_messages(history, running_summary=state["running"], **options)
        state["running"] = result.running_summary
        return result.messages

    result = _stateless(s, prompt_for)
    result.summaries = model.summarizer.log.texts
    return result


STRATEGIES: dict[str, Callable[[Session, int], Result]] = {
    "ours (Preflight + TieredCompression)": run_ours,
    "SummarizationMiddleware, keep 20 msgs": run_summarization_mw,
    "SummarizationMiddleware, keep b/2 tokens": partial(run_summarization_mw, keep_tokens=True),
    "trim_messages (last)": run_trim,
    "langmem summarize_messages": run_langmem,
    "no management (ceiling)": lambda s, b: _stateless(s, list),
}


def _full(s: Session) -> list[BaseMessage]:
    """The whole conversation as of the last model call (the policy aside)."""
    return s.history(len(s.steps))


def _tally(s: Session, r: Result, budget: int, explain: bool) -> Counter[str]:
    policy, text, history = count(_head(s)), prompt_text(r.final, s.system), prompt_text(_full(s))
    found = [holds(text, p.answers, p.whole_word) for p in s.probes]
    reach = [holds(history, p.answers, p.whole_word) for p in s.probes]
    n = Counter(hits=sum(found), reach=sum(reach), probes=len(found), calls=len(r.prompts))
    n["kept"] = sum(f and h for f, h in zip(found, reach, strict=True))
    n["word"] = sum(holds(text, p.answers, True) for p in s.probes)
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
                n += _tally(s, run(s, budget), budget, ours and not whole_word)
                n["refused"] += REFUSED.pop("calls", 0)
            shares = [n["hits"] / n["probes"], n["kept"] / n["reach"], n["word"] / n["probes"]]
            row = [f"{budget:,}", name, *(f"{x:.1%}" for x in shares[: 2 + (not whole_word)])]
            row += [f"{n['ctx'] / len(sessions):,.0f}", f"{n['hist'] / n['ctx']:.1f}:1"]
            rows.append([*row, f"{n['over'] / n['calls']:.0%}", f"{n['sent']:,}", str(n["summ"])])
            print(f"{label} {budget:,} {name}: {n['hits']}/{n['probes']}", file=sys.stderr)
            if n["refused"]:
                print(f"  ({name}: {n['refused']} calls refused by the ceiling)", file=sys.stderr)
                rows[-1][1] += f" ({n['refused']} calls refused)"
    return rows


def frontier(sessions: list[Session]) -> list[list[str]]:
    """Ours alone at every budget of ``FRONTIER``: answers kept against compression."""
    rows = []
    for budget in FRONTIER:
        n = Counter[str]()
        for s in sessions:
            n += _tally(s, run_ours(s, budget), budget, False)
        shares = (f"{x:.1%}" for x in (n["hits"] / n["probes"], n["kept"] / n["reach"]))
        ratio = f"{n['hist'] / n['ctx']:.1f}:1"
        rows.append([f"{budget:,}", *shares, f"{n['ctx'] / len(sessions):,.0f}", ratio])
        print(f"frontier {budget:,}: {n['hits']}/{n['probes']}", file=sys.stderr)
    return rows


LOSSES: Counter[str] = Counter()
_PARTS = re.compile(r"[\s/]+")


def _explain(s: Session, r: Result, found: list[bool], budget: int) -> None:
    """Why ours lost an answer the full history holds: tallied, with examples on stderr."""
    turns = [m.text for m in _full(s) if m.type == "human"]
    for probe, ok in zip(s.probes, found, strict=True):
        answers = probe.answers
        src = next((t for t in turns if holds(t.casefold(), answers, False)), None)
        if ok or src is None:
            continue
        ents = {e.casefold() for e in entities(src)}
        if any(holds(t.casefold(), answers, False) for t in r.summaries):
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
        example = f"{probe.id} {list(answers[:2])} ({why}): {SOURCES.get(probe.id, '')[:80]!r}"
        print(f"  LOST {budget} {example}", file=sys.stderr)


# -- the question asked at its point, with and without recall (issue 14) -------------

RECALL_SHARE = 4
"""With recall, a quarter of the budget is the recall block's, the rest the messages'."""


def asked_budget(s: Session, budget: int, recall: bool) -> Budget:
    """Messages (and recall) within ``budget``; ``Budget.for_messages`` semantics: the
    message allocation is a hard cap, the trigger and the target."""
    system = count(_head(s))
    aux = budget // RECALL_SHARE if recall else 0
    window = math.ceil((system + budget) / 0.85)
    spare = window - system - budget
    sizes = {"system": system, "messages": budget - aux, "tools": 0, "auxiliary": aux}
    return Budget(
        window=window,
        **sizes,
        output_reserve=spare - spare // 3,
        safety_margin=spare // 3,
        messages_cap=True,
    )


def run_asked(
    s: Session, budget: int, questions: list[str], recall: bool
) -> tuple[list[list[BaseMessage]], list[int]]:
    """Replay ``s``, then ask each question as the next user message, each from the end
    of the replay (a fork of its last checkpoint): the prompt of each, and of every call."""
    archive, model = InMemoryArchive(), _scripted(s)
    layers: list[Any] = [
        PreflightCheck(),
        TieredCompression(summarizer=_summarizer(), archive=archive),
    ]
    layers += [MemoryRecall(archive=archive)] if recall else []
    pipeline = Pipeline(layers, budget=asked_budget(s, budget, recall))
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", END)
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    for i, step in enumerate(s.steps):
        _refusable(graph, {"messages": [*(_head(s) if i == 0 else ()), *step.inputs]}, CFG)
    end = graph.get_state(CFG).config
    prompts = []
    for n, question in enumerate(questions):
        calls = len(model.calls)
        _refusable(graph, {"messages": [HumanMessage(question, id=f"question-{n}")]}, end)
        prompts.append(list(model.calls[-1].messages) if len(model.calls) > calls else [])
    return prompts, [count(c.messages) for c in model.calls]


REFUSED = Counter[str]()


def _refusable(graph: Any, inputs: dict[str, Any], config: Any) -> None:
    """One invoke; a call refused by the hard ceiling (``BudgetExceededError``: nothing
    sent, nothing found) is counted, and the replay goes on from the last checkpoint."""
    try:
        graph.invoke(inputs, config)
    except BudgetExceededError:
        REFUSED["calls"] += 1


def evaluate_asked(
    sessions: list[Session], questions: dict[str, str], whole_word: bool, label: str
) -> list[list[str]]:
    """Ours without and with recall, each question asked at its point: answers present."""
    rows = []
    for budget in BUDGETS:
        for recall in (False, True):
            n = Counter[str]()
            for s in sessions:
                # BFCL: one question per probe; tau-bench: one per trajectory, all its values.
                per_probe = s.probes[0].id in questions
                asked = [questions[p.id] for p in s.probes] if per_probe else [questions[s.name]]
                prompts, sizes = run_asked(s, budget, asked, recall)
                policy, history = count(_head(s)), prompt_text(_full(s))
                for k, p in enumerate(s.probes):
                    prompt = prompts[k if per_probe else 0]
                    found = holds(prompt_text(prompt, s.system), p.answers, p.whole_word)
                    reach = holds(history, p.answers, p.whole_word)
                    n += Counter(hits=found, reach=reach, kept=found and reach, probes=1)
                refused = REFUSED.pop("calls", 0)
                n["calls"] += len(sizes) + refused
                n["refused"] += refused
                n["over"] += sum(size - policy > budget for size in sizes)
                n["asked"] += sum(count(p) - policy for p in prompts)
                n["questions"] += len(prompts)
            name = "ours + recall from the archive" if recall else "ours, no recall"
            shares = (n["hits"] / n["probes"], n["kept"] / n["reach"])
            rows.append(
                [
                    f"{budget:,}",
                    name,
                    *(f"{x:.1%}" for x in shares),
                    f"{n['asked'] / n['questions']:,.0f}",
                    f"{n['over']} of {n['calls']:,}",
                    str(n["refused"]),
                ]
            )
            print(f"{label} asked {budget:,} {name}: {n['hits']}/{n['probes']}", file=sys.stderr)
    return rows


def recall_section(bfcl: list[Session], tau: list[Session], base: Any, trials: str) -> None:
    lines = header("Recall from the archive: the question asked at its point, within B")
    lines += [
        "Command: `python benchmarks/retention.py --recall` (issue 14). Each BFCL question is",
        "asked as the next user message after its scenario's session, each from the end of the",
        "replay (a fork of its last checkpoint); for tau-bench one question per trajectory names",
        "the gold actions and their argument names (never the values): what the agent is about",
        "to do when it needs them. What the model receives, messages plus the recall block, is",
        "within B: with recall the messages get 3B/4 and the block B/4 (`messages_cap=True`, the",
        "semantics of `Budget.for_messages`); without, the messages get B. Recall searches the",
        "thread's archive (in memory, BM25) with the question. The summarizer is the offline",
        "extractive one for every strategy; the peers get it too (as a chat model). The peers'",
        "rows are the retention replay (answers in the last prompt, no question asked), run in",
        "the same process. A call the hard ceiling refuses (`BudgetExceededError`: the prompt",
        "cannot fit even with every tool result cut) sends nothing and finds nothing; the",
        "replay goes on from the last checkpoint (counted: 'calls refused'; main's ceiling",
        "refuses a few tau-bench calls at 2K, with or without this change).",
        "",
    ]
    head = ["budget", "strategy", "answers present", "of those in history"]
    head += ["prompt at the question (mean tokens)", "calls over B", "calls refused"]
    peers = ["budget", "strategy", "answers present", "of those in history", "whole word"]
    peers += ["final context (mean tokens)", "compression", "calls over budget", "tokens sent"]
    peers += ["summarizer calls"]
    lines += ["### BFCL v4 memory: accepted answers in the prompt of the question", ""]
    lines += table(head, evaluate_asked(bfcl, bfcl_questions(base), False, "bfcl"), left=2)
    lines += ["", "The peers, same sessions (last prompt):", ""]
    lines += table(peers, evaluate(bfcl, False, "bfcl"), left=2)
    lines += [
        "",
        "### tau-bench airline: gold-action argument values in the prompt of the question",
        "",
    ]
    lines += table(head, evaluate_asked(tau, tau_questions(base), True, "tau"), left=2)
    lines += ["", "The peers, same trajectories (last prompt):", ""]
    lines += table(peers[:4] + peers[5:], evaluate(tau, True, "tau"), left=2)
    questions = sum(len(s.probes) for s in bfcl)
    lines += ["", f"BFCL: {len(bfcl)} sessions, {questions} questions. tau-bench: {len(tau)} "]
    lines[-1] += f"trajectories ({trials}), {sum(len(s.probes) for s in tau):,} argument values."
    emit("retention_recall", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--first-trial", action="store_true", help="tau-bench trial 0 only")
    parser.add_argument("--recall", action="store_true", help="issue 14: questions and recall")
    args = parser.parse_args()
    logging.getLogger("langgraph_ctx.compression").setLevel(logging.ERROR)  # see "over budget"
    try:
        base = data_dir()
    except ConfigurationError as exc:
        sys.exit(str(exc))
    bfcl, tau = bfcl_sessions(base), tau_sessions(base, first_trial_only=args.first_trial)
    SOURCES.update(bfcl_sources(base))
    if args.recall:
        recall_section(bfcl, tau, base, "trial 0" if args.first_trial else "all 4 trials")
        return
    cols = ["final context (mean tokens)", "compression", "calls over budget", "tokens sent"]
    cols += ["summarizer calls"]
    lines = header("Retention under a tight message budget")
    lines += ["### BFCL v4 memory: accepted answers in the final context", ""]
    head = ["budget", "strategy", "answers present", "of those in history", "whole word"]
    lines += table([*head, *cols], evaluate(bfcl, False, "bfcl"), left=2)
    lines += ["", "Why ours lost answers that the full history holds:", ""]
    lines += [f"- {why}: {k}" for why, k in sorted(LOSSES.items())]
    lines += ["", "### BFCL v4 memory: ours from 1,000 to 8,000 tokens", ""]
    rows, head = frontier(bfcl), ["budget", "answers present", "of those in history"]
    (b0, kept0, _, _, ratio0), (b1, kept1, _, _, ratio1) = rows[0], rows[-1]
    lines += ["Retention against compression (ours alone, same replay and measures as above): "]
    lines[-1] += f"{kept0} of the answers at {b0} tokens ({ratio0}), {kept1} at {b1} ({ratio1})."
    lines += ["", *table([*head, cols[0], cols[1]], rows)]
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
