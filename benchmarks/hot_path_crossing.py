"""The call that crosses the red line, with and without a summary prepared ahead.

The long-horizon workload (``benchmarks.harness.synthetic.long_session``: every
turn calls tools, ~1,500 tokens a turn) replayed one ``invoke`` per model call
on a compiled ``StateGraph(ContextState)`` with a SQLite checkpointer and
``Pipeline([PreflightCheck(), TieredCompression(...)])``. The node plays the
model: it returns the scripted reply after sleeping for the model's latency,
which is when a prepared summary is made. Four graphs, replayed side by side
(each step goes through all four, in rotating order):

- extractive summarizer, preparation off / on (model latency 0.5 s);
- a scripted chat-model summarizer that takes 2 s, off / on (model latency 1 s).

Per call: the pipeline's own wall time (the wrapped node minus the node), and
whether it compressed. Run from the repo root:
``python benchmarks/hot_path_crossing.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import hot_path
from _common import emit, header, table
from harness.synthetic import long_session
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph

from langgraph_ctx import Budget
from langgraph_ctx.middleware.compression import TieredCompression
from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.state import ContextState
from langgraph_ctx.testing import ScriptedChatModel

WINDOW = 32_000
TURNS, QUICK_TURNS = 60, 30
SUMMARIZER_SECONDS = 2.0


class SlowSummarizerModel(ScriptedChatModel):
    """A summarizer model that takes ``SUMMARIZER_SECONDS`` a call."""

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(SUMMARIZER_SECONDS)
        return super()._generate(messages, *args, **kwargs)


def _digest(messages: list[BaseMessage]) -> str:
    # The head of the transcript: real entities, shorter than what it summarizes.
    return " ".join(messages[-1].text.split()[:300])


class Replay:
    """One graph replaying the session, its pipeline timed."""

    def __init__(self, name: str, db: Path, *, slow: bool, prepare: bool) -> None:
        self.name = name
        self.latency = 1.0 if slow else 0.5
        summarizer = SlowSummarizerModel(default=_digest, report_usage=False) if slow else None
        self.compression = TieredCompression(
            summarizer=summarizer, prepare_ahead=prepare, summarizer_timeout=30.0
        )
        self.pipeline = hot_path.TimedPipeline(
            [PreflightCheck(), self.compression], budget=Budget.for_window(WINDOW)
        )
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", self._node)
        builder.add_edge("__start__", "call_llm")
        self.pipeline.attach(builder)
        self.conn = sqlite3.connect(db, check_same_thread=False)
        self.graph = builder.compile(checkpointer=SqliteSaver(self.conn))
        self.config: Any = {"configurable": {"thread_id": name}}
        self.reply: AIMessage | None = None
        self.calls: list[tuple[float, bool, str, float]] = []  # (wall s, compressed, path, CPU s)
        self.seen = 0

    def _node(self, state: Any) -> dict[str, Any]:
        cpu, wall = hot_path._cpu(), time.perf_counter()
        time.sleep(self.latency)  # the model thinking: when a summary is prepared
        hot_path._node_cpu[:] = [hot_path._cpu() - cpu, time.perf_counter() - wall]
        return {"messages": [self.reply]}

    def step(self, inputs: list[BaseMessage], reply: AIMessage) -> None:
        self.reply = reply
        self.graph.invoke({"messages": inputs}, self.config)
        ledger = self.graph.get_state(self.config).values.get("context_ledger", [])
        compressions = [e for e in ledger if e["kind"] == "compression"]
        seq = max((e["data"]["seq"] for e in compressions), default=0)
        last = compressions[-1]["data"] if compressions else {}
        path = f"{last.get('path')}: {last.get('prepared')}" if seq > self.seen else ""
        cpu, own = self.pipeline.samples[-1]
        self.calls.append((own, seq > self.seen, path, cpu))
        self.seen = seq


def _p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def crossing_section(*, quick: bool) -> list[str]:
    turns = QUICK_TURNS if quick else TURNS
    session = long_session(0, turns)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        replays = [
            Replay(f"{kind}-{mode}", Path(tmp) / f"{kind}-{mode}.sqlite",
                   slow=kind == "slow", prepare=mode == "prepared")
            for kind in ("extractive", "slow") for mode in ("synchronous", "prepared")
        ]  # fmt: skip
        for i, step in enumerate(session.steps):
            shift = i % len(replays)
            for replay in replays[shift:] + replays[:shift]:
                replay.step(list(step.inputs), step.reply)
            print(f"step {i + 1}/{len(session.steps)}", file=sys.stderr, end="\r")
        for replay in replays:
            replay.conn.close()
    for replay in replays:
        calm = [own * 1000 for own, crossed, _, _ in replay.calls if not crossed]
        crossing = [own * 1000 for own, crossed, _, _ in replay.calls if crossed]
        calm_cpu = [cpu * 1000 for _, crossed, _, cpu in replay.calls if not crossed]
        crossing_cpu = [cpu * 1000 for _, crossed, _, cpu in replay.calls if crossed]
        paths = [path for _, crossed, path, _ in replay.calls if crossed]
        kind, mode = replay.name.split("-")
        summarizer = "extractive" if kind == "extractive" else f"model, {SUMMARIZER_SECONDS:g} s"
        rows.append(
            [
                summarizer,
                "on" if mode == "prepared" else "off",
                f"{len(crossing)}",
                ", ".join(f"{n} {p}" for p, n in sorted(Counter(paths).items())),
                f"{statistics.median(calm):.1f}",
                f"{_p(calm, 0.95):.1f}",
                f"{statistics.median(crossing):.1f}" if crossing else "-",
                f"{_p(crossing, 0.95):.1f}",
                f"{max(crossing):.1f}" if crossing else "-",
                f"{_p(crossing, 0.95) / _p(calm, 0.95):.2f}x",
                f"{_p(calm_cpu, 0.95):.1f}",
                f"{_p(crossing_cpu, 0.95):.1f}",
            ]
        )
    return [
        "### The call that crosses the red line",
        "",
        f"The long-horizon workload (seed 0), its first {turns} turns "
        f"({len(session.steps)} model calls), in a {WINDOW // 1000}K window (not the "
        "harness's 128K: a compression every few turns instead of every ~21, so that a "
        "run of minutes crosses the red line often enough for a p95). One `invoke` per "
        "model call, SQLite checkpointer; the node sleeps for the model's latency (0.5 s "
        "with the extractive summarizer, 1 s with the 2 s one): that is when a summary "
        "is prepared. The four graphs replay the same steps side by side, in rotating "
        "order. Times are the pipeline's own wall time per call (the wrapped node minus "
        "the node), in ms, and its CPU time (of the thread running the node: a summary "
        "prepared ahead runs in the package's preparation pool, off the call, and is not "
        "in it); a crossing call is one that compressed. `path: why` is the "
        "ledger's account of each crossing: `prepared: ready` applied a summary made "
        "ahead, `prepared: waited` waited for the rest of one under way, `synchronous: "
        "none` had nothing prepared, `prepared: short` applied one covering a turn or two "
        "less than the synchronous plan would (at least 75% of its tokens, or enough to "
        "leave the messages at most halfway from the goal to the red line), "
        "`synchronous: span_mismatch` had one covering too little of what the crossing "
        "needed (the turn that crossed moved the protected window past it).",
        "",
        *table(
            [
                "summarizer",
                "prepare ahead",
                "crossing calls",
                "path: why",
                "other calls p50",
                "other p95",
                "crossing p50",
                "crossing p95",
                "crossing max",
                "p95 crossing / p95 other",
                "other p95 CPU",
                "crossing p95 CPU",
            ],
            rows,
            left=4,
        ),
        "",
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    lines = header("The call that crosses the red line (issue #15)")
    body = crossing_section(quick=args.quick)
    minutes = (time.perf_counter() - started) / 60
    lines += [
        f"`python benchmarks/hot_path_crossing.py{' --quick' if args.quick else ''}`; "
        f"the run took {minutes:.1f} min.",
        "",
        *body,
    ]
    emit("hot_path_crossing", lines)


if __name__ == "__main__":
    main()
