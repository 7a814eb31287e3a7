"""The hot path in a real checkpointed graph (issue #15).

Three measurements, each side by side in one process:

1. cost per turn: a compiled ``StateGraph(ContextState)`` with a real
   checkpointer (SQLite file, PostgreSQL), one ``invoke`` per turn, at 100,
   1,000, 10,000 and 100,000 messages. Per turn, in rotating order: the bare
   checkpointed step; the same graph with the pipeline (pre-flight, compression
   not compressing, tool eviction), then with memory recall over 1,000
   memories (their own time: the wrapped node minus the node inside it); and,
   inside a node of a third graph (so on the same freshly loaded messages),
   LangChain's ``SummarizationMiddleware.before_model`` (default token counter,
   never triggering) and ``count_tokens_approximately``. CPU time
   (``time.process_time``) beside wall time.
2. RSS per idle session: 20 threads of 2,000 messages through one attached
   pipeline vs the same graph without it, each in a fresh subprocess.
The latency of the call that crosses the red line is ``hot_path_crossing.py``.

Run from the repo root: ``python benchmarks/hot_path.py [--quick] [--no-pg]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _common import emit, header, rss_bytes, table
from checkpoint_size import postgres_server
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from preflight_cost import message_stream

from langgraph_ctx import Budget, Pipeline, tokens
from langgraph_ctx._workers import POOL
from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.middleware.recall import MemoryRecall
from langgraph_ctx.middleware.tool_eviction import ToolEviction
from langgraph_ctx.pipeline import CallContext
from langgraph_ctx.retrieval.memory import MemoryBank
from langgraph_ctx.state import ContextState
from langgraph_ctx.strategies.tiered.middleware import TieredCompression
from langgraph_ctx.testing.catalog import catalog_tools
from langgraph_ctx.tokens import ACTIVE_SESSIONS
from langgraph_ctx.tools import ToolRegistry

SIZES = (100, 1_000, 10_000, 100_000)
TURNS = {100: 40, 1_000: 30, 10_000: 12, 100_000: 4}
QUICK_TURNS = {100: 8, 1_000: 6, 10_000: 3, 100_000: 2}
WINDOW = 2_000_000_000  # never compresses: this measures the path that does not
MEMORIES = 1_000
_node_cpu: list[float] = []  # the node inside the pipeline: taken out of its time
_pool_cpu = [0.0]  # CPU the package's worker pool spent (recall's search runs there)


def _count_pool_cpu() -> None:
    """Add the CPU time of every job of the package's pool to ``_pool_cpu``.

    Our own time is the CPU of the thread running the node plus that of the
    jobs it hands the pool: not the process's, which also counts LangGraph's
    background thread writing the previous checkpoint meanwhile (the default
    ``durability="async"``)."""
    submit = POOL.submit

    def counted(fn: Any) -> Any:
        def run() -> Any:
            start = time.thread_time()
            try:
                return fn()
            finally:
                _pool_cpu[0] += time.thread_time() - start

        return submit(run)

    POOL.submit = counted  # type: ignore[method-assign]


def _cpu() -> float:
    """This thread's CPU time plus the pool's (see :func:`_count_pool_cpu`)."""
    return time.thread_time() + _pool_cpu[0]


class TimedPipeline(Pipeline):
    """A pipeline that times its own part of each call: session lookup, the
    layers and the merge, minus the node it wraps."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.samples: list[tuple[float, float]] = []  # (cpu, wall) seconds

    def invoke_node(self, ctx: CallContext, inner: Any) -> Any:
        cpu, wall = self._start
        _node_cpu.clear()
        out = super().invoke_node(ctx, inner)
        node_cpu, node_wall = _node_cpu or [(0.0, 0.0)]
        self.samples.append((_cpu() - cpu - node_cpu, time.perf_counter() - wall - node_wall))
        return out

    def context_for(self, *args: Any, **kwargs: Any) -> CallContext:
        self._start = _cpu(), time.perf_counter()  # the session lookup is ours too
        return super().context_for(*args, **kwargs)


def _time_preflight(pipeline: Pipeline) -> list[tuple[float, float]]:
    """Time pre-flight alone inside ``pipeline``: its whole ``before`` hook (the
    history's token total, the tool-pair check, the usage report)."""
    samples: list[tuple[float, float]] = []
    mw = next(
        ly.middleware for ly in pipeline._registered if isinstance(ly.middleware, PreflightCheck)
    )
    before = mw.before

    def timed(view: Any, ctx: CallContext) -> Any:
        cpu, wall = _cpu(), time.perf_counter()
        out = before(view, ctx)
        samples.append((_cpu() - cpu, time.perf_counter() - wall))
        return out

    mw.before = timed  # type: ignore[method-assign]
    return samples


def _reply(state: Any) -> dict[str, Any]:
    cpu, wall = _cpu(), time.perf_counter()
    out = {"messages": [AIMessage("ok", id=str(uuid.uuid4()))]}
    _node_cpu[:] = [_cpu() - cpu, time.perf_counter() - wall]
    return out


def _graph(saver: BaseCheckpointSaver[Any], pipeline: Pipeline | None = None) -> Any:
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", _reply)
    builder.add_edge("__start__", "call_llm")
    if pipeline is not None:
        pipeline.attach(builder)
    return builder.compile(checkpointer=saver)


def _pipeline(recall: bool) -> TimedPipeline:
    registry = ToolRegistry(catalog_tools(60))
    layers: list[Any] = [PreflightCheck(), TieredCompression(), ToolEviction(registry)]
    if recall:
        bank = MemoryBank()
        words = [
            "invoice",
            "refund",
            "flight",
            "booking",
            "deploy",
            "server",
            "budget",
            "customer",
            "ledger",
        ]
        for i in range(MEMORIES):
            text = f"memory {i}: the {words[i % len(words)]} note number {i * 7919 % 10007}"
            bank.remember(("alice",), text)
        layers.append(MemoryRecall(bank))
    return TimedPipeline(layers, budget=Budget.for_window(WINDOW), tools=registry.bound)


class Peers:
    """Runs inside a node, on the messages the checkpointer just loaded."""

    def __init__(self) -> None:
        never = ("tokens", 10**12)
        self.summ = SummarizationMiddleware(model=FakeListChatModel(responses=["-"]), trigger=never)
        self.samples: dict[str, list[tuple[float, float]]] = {"summ": [], "approx": []}

    def node(self, state: Any) -> dict[str, Any]:
        peers = [
            ("summ", lambda: self.summ.before_model(state, None)),  # type: ignore[arg-type]
            ("approx", lambda: count_tokens_approximately(state["messages"])),
        ]
        # Whoever touches the freshly loaded messages first pays their cache misses:
        # the two take turns, as pre-flight (always first in its graph) does not.
        if len(self.samples["summ"]) % 2:
            peers.reverse()
        for name, fn in peers:
            cpu, wall = _cpu(), time.perf_counter()
            fn()
            self.samples[name].append((_cpu() - cpu, time.perf_counter() - wall))
        return {"messages": [AIMessage("ok", id=str(uuid.uuid4()))]}


def cost_at(saver: BaseCheckpointSaver[Any], size: int, turns: int) -> dict[str, Any]:
    """One size on one checkpointer: every contestant on its own thread, interleaved."""
    history = _whole(message_stream(seed=size, prefix=f"h{size}-"), size)
    ours, recall, peers = _pipeline(False), _pipeline(True), Peers()
    preflight = _time_preflight(ours)
    pb = StateGraph(ContextState)
    pb.add_node("call_llm", peers.node)
    pb.add_edge("__start__", "call_llm")
    graphs: dict[str, Any] = {
        "bare": _graph(saver),
        "ours": _graph(saver, ours),
        "ours+recall": _graph(saver, recall),
        "peers": pb.compile(checkpointer=saver),
    }
    run = uuid.uuid4().hex[:8]
    configs = {
        name: {"configurable": {"thread_id": f"{name}-{size}-{run}", "user_id": "alice"}}
        for name in graphs
    }
    for name, graph in graphs.items():  # the history, then one untimed turn each
        graph.update_state(configs[name], {"messages": history}, as_node="call_llm")
        graph.invoke({"messages": [HumanMessage("warm up", id=f"w-{name}")]}, configs[name])
    ours.samples.clear()
    preflight.clear()
    recall.samples.clear()
    for k in peers.samples:
        peers.samples[k].clear()
    steps: dict[str, list[tuple[float, float]]] = {name: [] for name in graphs}
    fresh = _turn_inputs(message_stream(seed=size + 1, prefix=f"n{size}-"))
    names = list(graphs)
    for t in range(turns):
        new = next(fresh)
        shift = t % len(names)
        for name in names[shift:] + names[:shift]:
            inputs = [m.model_copy(update={"id": f"{m.id}-{name}"}) for m in new]
            gc.collect()
            cpu, wall = time.process_time(), time.perf_counter()
            graphs[name].invoke({"messages": inputs}, configs[name])
            steps[name].append((time.process_time() - cpu, time.perf_counter() - wall))
    return {
        "bare step": steps["bare"],
        "step with ours": steps["ours"],
        "pre-flight": preflight,
        "ours": ours.samples,
        "ours + recall": recall.samples,
        "SummarizationMiddleware": peers.samples["summ"],
        "count_tokens_approximately": peers.samples["approx"],
    }


def _take(it: Iterator[BaseMessage], n: int) -> Iterator[BaseMessage]:
    for _ in range(n):
        yield next(it)


def _whole(it: Iterator[BaseMessage], n: int) -> list[BaseMessage]:
    """About ``n`` messages, ending where no tool call waits for its result."""
    history = list(_take(it, n))
    while getattr(history[-1], "tool_calls", None):
        history.append(next(it))
    return history


def _turn_inputs(it: Iterator[BaseMessage]) -> Iterator[list[BaseMessage]]:
    """One turn's input: the stream's messages up to and including the next user
    message (a tool call arrives with its result, as an agent's loop makes them),
    so the node's reply never lands between a call and its result."""
    turn: list[BaseMessage] = []
    for message in it:
        turn.append(message)
        if message.type == "human":
            yield turn
            turn = []


@contextmanager
def sqlite_saver(tmp: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(tmp / f"{uuid.uuid4().hex}.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@contextmanager
def postgres_saver(url: str) -> Iterator[BaseCheckpointSaver[Any]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    db_url = urlunsplit(urlsplit(url)._replace(path="/" + name))
    kwargs: Any = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with psycopg.connect(db_url, **kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        yield saver


def _med(samples: list[tuple[float, float]], i: int) -> float:
    return statistics.median(s[i] for s in samples) * 1000 if samples else float("nan")


def cost_section(results: dict[tuple[str, int], dict[str, Any]]) -> list[str]:
    rows = []
    for (backend, size), r in results.items():
        step_cpu, step_wall = _med(r["bare step"], 0), _med(r["bare step"], 1)
        approx = _med(r["count_tokens_approximately"], 0)
        for name in (
            "pre-flight",
            "ours",
            "ours + recall",
            "SummarizationMiddleware",
            "count_tokens_approximately",
            "step with ours",
        ):
            cpu, wall = _med(r[name], 0), _med(r[name], 1)
            rows.append(
                [
                    backend,
                    f"{size:,}",
                    name,
                    f"{cpu:.2f}",
                    f"{wall:.2f}",
                    f"{100 * cpu / step_cpu:.1f}%",
                    f"{cpu / approx:.2f}x",
                ]
            )
        rows.append(
            [backend, f"{size:,}", "**bare checkpointed step**", f"{step_cpu:.2f}",
             f"{step_wall:.2f}", "100%", f"{step_cpu / approx:.2f}x"]
        )  # fmt: skip
    return table(
        ["checkpointer", "messages", "contestant", "CPU ms", "wall ms", "CPU / bare step",
         "CPU / count_tokens_approximately"],
        rows,
        left=3,
    )  # fmt: skip


# -- RSS per idle session ----------------------------------------------------------


def rss_child(attached: bool, threads: int, size: int) -> None:
    """In a fresh process: RSS growth after ``threads`` sessions of ``size`` messages."""
    with tempfile.TemporaryDirectory() as tmp, sqlite_saver(Path(tmp)) as saver:
        pipeline = Pipeline([PreflightCheck(), TieredCompression()],
                            budget=Budget.for_window(WINDOW)) if attached else None  # fmt: skip
        graph = _graph(saver, pipeline)
        stream = message_stream(seed=7, prefix="r-")
        graph.invoke(
            {"messages": [HumanMessage("x", id="x")]}, {"configurable": {"thread_id": "0"}}
        )
        gc.collect()
        tracemalloc.start()
        base = rss_bytes()
        for t in range(threads):
            config = {"configurable": {"thread_id": f"t{t}"}}
            history = [m.model_copy(update={"id": f"{t}-{m.id}"}) for m in _take(stream, size)]
            graph.update_state(config, {"messages": history}, as_node="call_llm")
            for turn in range(2):
                graph.invoke(
                    {"messages": [HumanMessage(f"turn {turn}", id=f"{t}-q{turn}")]}, config
                )
            del history
        gc.collect()
        grown = rss_bytes() - base
        live = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        idle: list[int] = []
        active: list[int] = []
        if pipeline is not None:
            for session in pipeline._sessions.values():
                held = active if id(session.cache) in tokens.cache._active else idle
                held.append(session.cache.nbytes())
        print(json.dumps({"rss": grown, "live": live, "idle": idle, "active": active}))


def rss_section(threads: int, size: int) -> list[str]:
    out = {}
    for attached in (False, True):
        proc = subprocess.run(
            [sys.executable, __file__, "--rss-child", "1" if attached else "0",
             "--threads", str(threads), "--size", str(size)],
            capture_output=True, text=True, check=True, cwd=Path(__file__).parent,
        )  # fmt: skip
        out[attached] = json.loads(proc.stdout.strip().splitlines()[-1])
    extra = out[True]["rss"] - out[False]["rss"]
    live = out[True]["live"] - out[False]["live"]
    idle, active = out[True]["idle"], out[True]["active"]
    return [
        f"{threads} threads of {size:,} messages, 2 turns each, one process per row "
        "(RSS growth from the first invoke to the end, after `gc.collect()`):",
        "",
        *table(
            ["graph", "RSS growth MB", "live Python heap MB"],
            [
                [
                    "without the pipeline",
                    f"{out[False]['rss'] / 1e6:.1f}",
                    f"{out[False]['live'] / 1e6:.2f}",
                ],
                [
                    "with the pipeline",
                    f"{out[True]['rss'] / 1e6:.1f}",
                    f"{out[True]['live'] / 1e6:.2f}",
                ],
            ],
        ),
        "",
        "Token caches, their own accounting (`MessageTokenCache.nbytes`): "
        f"{len(idle)} idle sessions hold {statistics.mean(idle) / 1e3:.2f} KB each "
        "(block hashes and running totals, the last partial block: no message object, no "
        f"memo); the {len(active)} active ones (the {ACTIVE_SESSIONS} most recently used in "
        f"the process) {statistics.mean(active) / 1e3:.0f} KB each, their key -> count memo "
        "included. Live heap held by the pipeline (traced allocations still alive at the "
        f"end, `tracemalloc`): {live / 1e6:.2f} MB, {live / threads / 1e3:.0f} KB per "
        "session on average (besides the caches: each session's calibration, scratch and "
        "lock, and the pipeline's shared count memos). RSS grew "
        f"{extra / 1e6:.1f} MB more with the pipeline ({extra / threads / 1e3:.0f} KB per "
        "session); RSS is page-granular and keeps what the allocator freed but did not "
        "return, so the traced heap is the measure of what is held.",
    ]


# -- main ----------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--pg-max", type=int, default=100_000, help="largest size on PostgreSQL")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--rss-child", default=None)
    ap.add_argument("--threads", type=int, default=20)
    ap.add_argument("--size", type=int, default=2_000)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: cost,rss")
    args = ap.parse_args()
    if args.rss_child is not None:
        rss_child(args.rss_child == "1", args.threads, args.size)
        return
    skip = set(args.skip.split(",")) - {""}
    _count_pool_cpu()
    turns = QUICK_TURNS if args.quick else TURNS
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.perf_counter()
    lines = header("The hot path in a checkpointed graph (issue #15)")
    lines += [
        f"`python benchmarks/hot_path.py{' --quick' if args.quick else ''}`; "
        "the run took {minutes} min.",
        "",
    ]
    if "cost" not in skip:
        results: dict[tuple[str, int], dict[str, Any]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for size in sizes:
                with sqlite_saver(Path(tmp)) as saver:
                    results[("SQLite", size)] = cost_at(saver, size, turns[size])
                print(f"sqlite {size} done", file=sys.stderr)
        if not args.no_pg:
            with postgres_server() as url:
                for size in [s for s in sizes if s <= args.pg_max]:
                    with postgres_saver(url) as saver:
                        results[("PostgreSQL", size)] = cost_at(saver, size, turns[size])
                    print(f"postgres {size} done", file=sys.stderr)
        order = sorted(results, key=lambda k: (k[0] != "SQLite", k[1]))
        lines += [
            "### Cost per turn, one `invoke` per turn",
            "",
            "Medians over "
            + ", ".join(f"{turns[s]} turns at {s:,}" for s in sizes)
            + " messages. `ours`: PreflightCheck + TieredCompression (not compressing) + "
            "ToolEviction (60-tool registry, `tools=registry.bound`); `ours + recall` adds "
            f"MemoryRecall over {MEMORIES:,} memories (lexical, in-memory store). Each turn "
            "brings the next user message with the tool exchange before it, so tool pairs "
            "stay whole. CPU is the CPU time of the thread running the node plus that of the "
            "jobs it hands the package's pool (recall's search): not the process's, which "
            "also counts LangGraph's background thread writing the previous checkpoint "
            "meanwhile. Pre-flight: its whole `before` hook (the history's token total, the "
            "tool-pair check, the usage report). `ours`: the wrapped node minus the node "
            "inside it (session lookup, every layer, the merge). The peers run inside a "
            "node of their own graph, on the messages the checkpointer just loaded, taking "
            "turns at touching them first (the first to touch freshly loaded messages pays "
            "their cache misses; pre-flight is always first in its graph). The bare step is "
            "the whole `invoke` (process CPU); `step with ours` is the whole `invoke` of the "
            "graph with `ours`."
            + (f" PostgreSQL up to {args.pg_max:,} messages." if not args.no_pg else ""),
            "",
            *cost_section({k: results[k] for k in order}),
            "",
        ]
    if "rss" not in skip:
        lines += ["### Memory per idle session", "", *rss_section(args.threads, args.size), ""]
    minutes = (time.perf_counter() - started) / 60
    lines[len(header("x"))] = lines[len(header("x"))].replace("{minutes}", f"{minutes:.1f}")
    emit("hot_path", lines)


if __name__ == "__main__":
    main()
