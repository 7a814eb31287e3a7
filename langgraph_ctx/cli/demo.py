"""The demo: a long simulated session through a real compiled graph.

A seeded workload drives a :class:`~langgraph_ctx.testing.ScriptedChatModel`;
tools answer from the same workload; a SQLite checkpointer records every
step. Running it again with the same thread id resumes where it stopped,
because the turn counter lives in the checkpointed state, not in the process.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_ctx import ledger
from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.budget import Budget
from langgraph_ctx.cli._render import sparkline, zone_counts
from langgraph_ctx.ledger import event_data
from langgraph_ctx.middleware import PreflightCheck
from langgraph_ctx.pipeline import EventSink, Middleware
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.state import ContextState
from langgraph_ctx.storage.archive import SQLiteArchive
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.storage.events import SQLiteEventSink
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import Workload, generate_session


def workload_tools(workload: Workload) -> list[BaseTool]:
    """Tools that answer from the workload's planned results."""

    def make(name: str) -> BaseTool:
        def run(**kwargs: Any) -> str:
            return workload.tool_result(name, kwargs)

        # A JSON-schema dict is passed through unvalidated: the arguments
        # arrive exactly as the (scripted) model wrote them.
        schema = {"type": "object", "properties": {}, "additionalProperties": True}
        return StructuredTool.from_function(
            run, name=name, description=f"Demo tool {name}.", args_schema=schema
        )

    return [make(n) for n in workload.tool_names]


def build_graph(
    workload: Workload,
    *,
    budget: Budget,
    checkpointer: Any,
    middleware: Sequence[Middleware] = (),
    events: EventSink | None = None,
) -> tuple[CompiledStateGraph[Any, Any, Any, Any], ScriptedChatModel]:
    """The demo agent: call_llm <-> tools, with the pipeline on call_llm.

    ``events``: where every ledger event is also written (the event table).
    """
    # keep_calls=0: nothing reads the call log, and it would hold every prompt.
    model = ScriptedChatModel(default=workload.responder(), keep_calls=0)
    tools = workload_tools(workload)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model, tools=tools))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "call_llm")
    builder.add_conditional_edges("call_llm", tools_condition)
    builder.add_edge("tools", "call_llm")
    pipeline = Pipeline([PreflightCheck(), *middleware], budget=budget, tools=tools, events=events)
    return pipeline.attach(builder).compile(checkpointer=checkpointer), model


@dataclass
class DemoReport:
    """What one demo run did: utilization per LLM call, across resumes."""

    thread_id: str
    turns_done: int
    turns_total: int
    resumed_at: int = 0
    """Turns already done when this run started (0 for a fresh session)."""
    utilization: list[float] = field(default_factory=list)
    """Utilization of each prompt sent to the model (after compression)."""
    measured: list[float] = field(default_factory=list)
    """Utilization pre-flight measured before compression, per call."""
    zones: list[str] = field(default_factory=list)
    compression_calls: list[int] = field(default_factory=list)
    """Index (into ``utilization``) of each call that compressed."""
    events: dict[str, int] = field(default_factory=dict)
    details: list[dict[str, Any]] = field(default_factory=list)
    """Data of every event other than utilization (compressions, ...)."""

    def add(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        self.events[kind] = self.events.get(kind, 0) + 1
        if (use := event_data(event, ledger.Utilization)) is not None:
            self.measured.append(use["utilization"])
            self.utilization.append(use["utilization"])
            self.zones.append(use["zone"])
        else:
            self.details.append({"kind": kind, **event["data"]})
        if (run := event_data(event, ledger.Compression)) is not None:
            self.compression_calls.append(len(self.utilization) - 1)
            if self.utilization:
                # What was sent is what compression left, not what pre-flight measured.
                self.utilization[-1] = run["utilization_after"]


def run_demo(
    *,
    turns: int = 150,
    thread_id: str = "demo",
    db: Path = Path("langgraph-ctx-demo.sqlite"),
    seed: int = 0,
    window: int = 32_000,
    progress: Callable[[int, int, float, str], None] | None = None,
    stop_after: int | None = None,
) -> DemoReport:
    """Run (or resume) the demo session; ``stop_after`` turns at most in this call."""
    # Tool results of 1-6 KB: the size that makes real agents outgrow their window.
    workload = generate_session(turns, seed=seed, result_chars=(1_200, 6_000))
    budget = Budget.for_window(window)
    # One file holds the checkpoints, the context events (for `langgraph-ctx
    # inspect`) and the archived originals; all three are closed on the way out.
    with (
        checkpointer_from_url(f"sqlite:///{db}") as saver,
        SQLiteEventSink(db) as events,
        SQLiteArchive(str(db)) as archive,
    ):
        compression = TieredCompression(archive=archive)
        graph, _ = build_graph(
            workload, budget=budget, checkpointer=saver, middleware=[compression], events=events
        )
        config: Any = {"configurable": {"thread_id": thread_id}, "recursion_limit": 100}
        snapshot = graph.get_state(config)
        if snapshot.tasks:
            # The last run died mid-turn: finish that turn from its last checkpoint first.
            # (Not `.next`: it omits tasks whose writes were saved before the crash.)
            graph.invoke(None, config)
            snapshot = graph.get_state(config)
        values = snapshot.values
        done = int((values.get("session") or {}).get("demo_turns", 0))
        report = DemoReport(
            thread_id=thread_id, turns_done=done, turns_total=turns, resumed_at=done
        )
        for turn in workload.turns[done:]:
            if stop_after is not None and report.turns_done - report.resumed_at >= stop_after:
                break
            update = {
                "messages": [HumanMessage(turn.user, id=f"t{turn.index:04d}-user")],
                "session": {"demo_turns": turn.index + 1, "task": workload.turns[0].user},
            }
            # The custom stream carries every ledger event, including those the
            # bounded ledger in the checkpoint has already let go of.
            for chunk in graph.stream(update, config, stream_mode="custom"):
                event = chunk.get("langgraph_ctx") if isinstance(chunk, dict) else None
                if event is not None:
                    report.add(event)
            report.turns_done = turn.index + 1
            if progress is not None:
                last = report.utilization[-1] if report.utilization else 0.0
                # The zone of what was sent, not pre-flight's zone from before compressing.
                progress(report.turns_done, turns, last, budget.zone(round(last * budget.window)))
    return report


class ProgressBar:
    """The demo's progress on ``stream`` (default: stderr).

    On a terminal, a bar redrawn in place; anywhere else (a log file, a pipe,
    CI) a plain line every ``every`` turns and at the end, so that no log
    fills with carriage-return frames.
    """

    def __init__(self, stream: TextIO | None = None, width: int = 30, every: int = 10) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.every = every
        self.terminal = self.stream.isatty()

    def __call__(self, done: int, total: int, utilization: float, zone: str) -> None:
        status = f"{done}/{total} turns  utilization {utilization:.2f} ({zone})"
        if self.terminal:
            filled = self.width * done // max(total, 1)
            bar = "#" * filled + "-" * (self.width - filled)
            self.stream.write(f"\r[{bar}] {status}  " + ("\n" if done >= total else ""))
        elif done % self.every == 0 or done >= total:
            self.stream.write(f"turn {status}\n")
        self.stream.flush()


def format_report(report: DemoReport) -> str:
    util = report.utilization
    lines = [
        f"thread {report.thread_id!r}: {report.turns_done}/{report.turns_total} turns, "
        f"{len(util)} LLM calls in this run"
        + (f" (resumed after turn {report.resumed_at})" if report.resumed_at else ""),
    ]
    if report.turns_done == report.resumed_at and report.resumed_at >= report.turns_total:
        lines.append(
            f"  nothing to run: the session already has its {report.resumed_at} turns; "
            f"--turns {report.resumed_at + 50} continues it, another --thread-id starts anew"
        )
    if util:
        lines += [
            f"utilization per call, as sent (max per column): |{sparkline(util)}|",
            f"  mean {sum(util) / len(util):.3f}  peak {max(util):.3f}  last {util[-1]:.3f}",
            # Zones are pre-flight's, before compressing: "red 11" beside "peak 0.827"
            # read as a contradiction when neither said which prompt it counted.
            f"  {zone_counts(report.zones)} (measured before compressing: red ones compress)",
        ]
    runs = [d for d in report.details if d["kind"] == "compression"]
    if runs:
        ratio = sum(d["ratio"] for d in runs) / len(runs)
        retention = sum(d["entity_retention"] for d in runs) / len(runs)
        lines.append(
            f"  compressions: {len(runs)}, mean ratio {ratio:.1f}:1, "
            f"mean entity retention {retention:.0%}, peak before compressing "
            f"{max(report.measured):.3f}"
        )
    others = {
        k: v for k, v in sorted(report.events.items()) if k not in ("utilization", "compression")
    }
    if others:
        lines.append("  events: " + ", ".join(f"{k} {v}" for k, v in others.items()))
    return "\n".join(lines)
