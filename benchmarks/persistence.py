"""PostgreSQL persistence: storage after N steps, and what archive + event writes cost per step.

(a) Storage. The same seeded session as ``checkpoint_size.py`` (whose model,
workload and plain-LangGraph graph this reuses), on a throw-away PostgreSQL:
plain LangGraph with no management vs ours with the archive of originals and
the event log in PostgreSQL too (``PostgresArchive`` / ``PostgresEventSink``
on the checkpointer's pool), so every byte is counted in one database.

(b) Latency. Two graphs on one ``PostgresSaver``, identical except for where
archived originals and events go: in memory / nowhere, or into PostgreSQL.
They run the same session on two threads, alternating turn by turn, so the
machine's noise hits both alike; the ratio of their per-step medians is the
cost of the writes.

Run from the repo root: ``python benchmarks/persistence.py [--steps 1000] [--latency-steps 300]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _common import emit, header, table
from checkpoint_size import PG_TABLES, WINDOW, WORKLOAD, LeanModel, build, postgres_server
from langchain_core.messages import HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.budget import Budget
from langgraph_ctx.cli.demo import workload_tools
from langgraph_ctx.middleware import PreflightCheck
from langgraph_ctx.pipeline import EventSink
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.state import ContextState
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.testing.workloads import Workload, generate_session

OUR_TABLES = ("lgctx_archive", "lgctx_events")
PLAIN_1000_MB = 1183.8
"""Plain LangGraph on PostgreSQL after 1,000 steps of this workload (checkpoint_size.md):
quadratic, so not re-run here by default."""


def ours(workload: Workload, saver: Any, archive: MessageArchive, events: EventSink | None) -> Any:
    """``checkpoint_size.build("ours", ...)``, plus an event sink."""
    model = LeanModel(default=workload.responder(), report_usage=False)
    tools = workload_tools(workload)
    builder: Any = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model, tools=tools))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "call_llm")
    builder.add_conditional_edges("call_llm", tools_condition)
    builder.add_edge("tools", "call_llm")
    middleware = [PreflightCheck(), TieredCompression(archive=archive)]
    pipeline = Pipeline(middleware, budget=Budget.for_window(WINDOW), tools=tools, events=events)
    return pipeline.attach(builder).compile(checkpointer=saver)


def fresh_db(server: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    return urlunsplit(urlsplit(server)._replace(path="/" + name))


def turn(workload: Workload, i: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(workload.turns[i].user, id=f"t{i:04d}-user")]}


def sizes(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        out = {}
        for t in (*PG_TABLES, *OUR_TABLES):
            conn.execute(f"VACUUM ANALYZE {t}")  # type: ignore[arg-type]
            row = conn.execute("SELECT pg_total_relation_size(%s::regclass)", (t,)).fetchone()
            out[t] = int(row[0]) if row else 0
        rows = conn.execute(
            "SELECT (SELECT count(*) FROM lgctx_archive), (SELECT count(*) FROM lgctx_events)"
        ).fetchone()
        out["archive_rows"], out["event_rows"] = (int(rows[0]), int(rows[1])) if rows else (0, 0)
    return out


def storage(server: str, strategy: str, workload: Workload) -> dict[str, Any]:
    url = fresh_db(server)
    config: Any = {"configurable": {"thread_id": "bench"}, "recursion_limit": 100}
    with checkpointer_from_url(url) as saver:
        pool: Any = saver.conn  # type: ignore[attr-defined]
        if strategy == "plain":
            graph = build("plain", workload, saver, InMemoryArchive())  # type: ignore[arg-type]
        else:
            graph = ours(workload, saver, PostgresArchive(pool), PostgresEventSink(pool))
        start = time.perf_counter()
        for i in range(len(workload.turns)):
            graph.invoke(turn(workload, i), config)
            if (i + 1) % 100 == 0:
                print(f"    {strategy}: {i + 1} steps, {time.perf_counter() - start:.0f} s",
                      file=sys.stderr)  # fmt: skip
        seconds = time.perf_counter() - start
    return {"seconds": seconds, **sizes(url)}


def latency(server: str, workload: Workload) -> dict[str, list[float]]:
    url = fresh_db(server)
    times: dict[str, list[float]] = {"without": [], "with": []}
    with checkpointer_from_url(url) as saver:
        pool: Any = saver.conn  # type: ignore[attr-defined]
        graphs = {
            "without": ours(workload, saver, InMemoryArchive(), None),
            "with": ours(workload, saver, PostgresArchive(pool), PostgresEventSink(pool)),
        }
        for i in range(len(workload.turns)):
            order = ("without", "with") if i % 2 == 0 else ("with", "without")
            for name in order:
                config: Any = {"configurable": {"thread_id": name}, "recursion_limit": 100}
                start = time.perf_counter()
                graphs[name].invoke(turn(workload, i), config)
                times[name].append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", default="200,1000", help="user turns for (a), comma-separated")
    parser.add_argument(
        "--plain-max",
        type=int,
        default=200,
        help="run plain LangGraph only up to this many steps: it grows quadratically "
        "(checkpoint_size.md has it at 1,000)",
    )
    parser.add_argument("--latency-steps", type=int, default=300, help="user turns for (b)")
    args = parser.parse_args()
    steps = [int(n) for n in args.steps.split(",") if n]
    stored: dict[tuple[str, int], dict[str, Any]] = {}
    with postgres_server() as server:
        for n in steps:
            workload = generate_session(n, **WORKLOAD)  # type: ignore[arg-type]
            for strategy in ("plain", "ours") if n <= args.plain_max else ("ours",):
                print(f"(a) {strategy}, {n} steps", file=sys.stderr)
                stored[(strategy, n)] = storage(server, strategy, workload)
        print(f"(b) latency, {args.latency_steps} steps x 2", file=sys.stderr)
        timed = latency(server, generate_session(args.latency_steps, **WORKLOAD))  # type: ignore[arg-type]
    report(args, stored, timed)


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f}"


def report(
    args: argparse.Namespace,
    stored: dict[tuple[str, int], dict[str, Any]],
    timed: dict[str, list[float]],
) -> None:
    lines = header("PostgreSQL persistence: storage and the cost of archive + event writes")
    lines += [
        f"Command: `python benchmarks/persistence.py --steps {args.steps} --plain-max "
        f"{args.plain_max} --latency-steps {args.latency_steps}`. Workload and model as in "
        "checkpoint_size (`generate_session(N, seed=0, result_chars=(1200, 3000), "
        "tool_rate=0.6)`, one `invoke` per user turn = one step, a scripted model); ours: "
        f"`Budget.for_window({WINDOW:_})`, extractive summaries, archive and events in "
        "PostgreSQL on the checkpointer's pool.",
        "",
        "### (a) Storage after N steps",
        "",
        "`pg_total_relation_size` (heap, TOAST, indexes) after VACUUM, MB; everything in one "
        f"database. Plain LangGraph is run up to {args.plain_max:,} steps (it grows "
        "quadratically; checkpoint_size.md has it at 1,000 steps too).",
        "",
    ]
    head = ["strategy", "steps", "checkpoint tables", "lgctx_archive", "lgctx_events", "total",
            "vs plain", "archive rows", "event rows", "time s"]  # fmt: skip
    totals = {k: sum(r[t] for t in (*PG_TABLES, *OUR_TABLES)) for k, r in stored.items()}
    rows = []
    for (name, n), r in stored.items():
        plain_total = totals.get(("plain", n), 0)
        ckpt, total = sum(r[t] for t in PG_TABLES), totals[(name, n)]
        rows.append([
            "plain LangGraph" if name == "plain" else "ours (archive + events in PostgreSQL)",
            f"{n:,}", mb(ckpt), mb(r["lgctx_archive"]), mb(r["lgctx_events"]), mb(total),
            f"{total / plain_total:.3f}" if plain_total else "n/a",
            f"{r['archive_rows']:,}", f"{r['event_rows']:,}", f"{r['seconds']:.0f}",
        ])  # fmt: skip
    lines += table(head, rows, left=1) if rows else ["(not run)"]
    if ("ours", 1000) in stored and ("plain", 1000) not in stored:
        ours_mb = totals[("ours", 1000)] / 1e6
        lines += [
            "",
            f"At 1,000 steps: ours, everything included, {ours_mb:,.1f} MB = "
            f"**{ours_mb / PLAIN_1000_MB:.3f}** of plain LangGraph's {PLAIN_1000_MB:,} MB "
            "(checkpoint_size.md).",
        ]
    without, with_ = timed["without"], timed["with"]
    med_a, med_b = statistics.median(without), statistics.median(with_)
    ratios = sorted(b / a for a, b in zip(without, with_, strict=True))
    lines += [
        "",
        f"### (b) Per-step latency of archive + event writes ({len(without)} steps each)",
        "",
        "Both graphs on one `PostgresSaver` (the same pool), the same session on two "
        "threads, alternating turn by turn (order flipped every turn). *Without*: archive in "
        "memory, no event sink. *With*: `PostgresArchive` + `PostgresEventSink`.",
        "",
    ]
    lines += table(
        ["", "median ms/step", "mean ms/step", "p90 ms/step"],
        [
            [
                name,
                f"{statistics.median(t):.1f}",
                f"{statistics.mean(t):.1f}",
                f"{statistics.quantiles(t, n=10)[-1]:.1f}",
            ]
            for name, t in (("without", without), ("with", with_))
        ],
    )
    lines += [
        "",
        f"Ratio with/without: **{med_b / med_a:.3f}** (of medians); per-step pairs: median "
        f"{statistics.median(ratios):.3f}, p90 {ratios[int(0.9 * len(ratios))]:.3f}. "
        f"Added: {med_b - med_a:+.1f} ms per step (median).",
    ]
    emit("persistence", lines)


if __name__ == "__main__":
    main()
