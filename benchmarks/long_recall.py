"""Where the long-horizon probes are lost: one run of the long session, every probe
traced through recall's stages.

Run from the repo root::

    python benchmarks/long_recall.py [--turns 10000] [--seed 0] [--every-call] [--dump F]
    python benchmarks/long_recall.py --replay F   # the probes of a dump, re-ranked offline
    python benchmarks/long_recall.py --cost 1000 5000 10000   # search CPU per call
    python benchmarks/long_recall.py --sql-cost 2000   # SQLite: name alone vs within it

The session, the graph and the middleware are the harness's ``ours+recall`` on the
``long`` workload (synthetic.long_session, 128K window, in-memory archive and
checkpointer). Recall is ephemeral: what it injects is never checkpointed nor
archived, so the history, the archive and every summary at a probe's call are the
same whether or not recall ran on the calls before. So by default recall runs only
on the calls where a probe is due (``--every-call`` runs it on all, as the harness
does; the probes kept must come out the same). For every probe the stage where its
value was lost is recorded, in the order recall meets them:

- ``kept``: the value is in the prompt;
- ``in history``: the message that stated it is still in the active history;
- ``not archived``: neither in the history nor in the archive (a summary lost it);
- ``not searched up``: archived, but not among the archive searches' hits;
- ``ranked out``: among the hits, but not in the best ``archive_hits`` by passage;
- ``snippet cut``: shown, but its snippet left the value out;
- ``over budget``: ranked in, but the auxiliary budget had no room for its line.
"""

from __future__ import annotations

import argparse
import pickle
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import emit, header, table
from harness.recorder import Recorder
from harness.runner import replay
from harness.session import TokenTally, holds, prompt_text
from harness.strategies import Replay, Setup, Strategy, TimedPipeline, _one_node
from harness.summaries import CountingSummarizer
from harness.synthetic import LONG_RESULT_CHARS, long_session

from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.markers import KEY
from langgraph_ctx.middleware import MemoryRecall, PreflightCheck
from langgraph_ctx.middleware.recall import _ranked
from langgraph_ctx.pipeline import CallContext, Hook, View
from langgraph_ctx.storage.archive import ArchiveHit, InMemoryArchive
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.testing.workloads import generate_session

STAGES = (
    "kept",
    "in history",
    "not archived",
    "not searched up",
    "ranked out",
    "snippet cut",
    "over budget",
)
DEEP = 5_000
"""How deep a second search looks for a fact not among recall's hits (diagnosis only)."""


@dataclass
class Trace:
    """One probe at its call: where its fact's message was and what recall did with it."""

    probe: str
    turn: int
    fact_turn: int
    stage: str = ""
    search_rank: int | None = None
    """The fact message's place in a deep search for the question (1 = first)."""
    ranked_at: int | None = None
    """Its place among the candidates after re-ranking by passage."""
    held: bool = False
    """The value is in the prompt without the recall block (a summary kept it)."""


class TracedRecall(MemoryRecall):
    """:class:`MemoryRecall` that traces the probes due at the call (benchmark only)."""

    def __init__(
        self, recorder: Recorder, facts: dict[str, tuple[str, str, int]], archive: InMemoryArchive
    ) -> None:
        super().__init__(archive=archive)
        self.memory = archive
        self.recorder, self.facts, self.every_call = recorder, facts, False
        self.traces: dict[str, Trace] = {}
        self.states: dict[str, tuple[Any, frozenset[str], int]] = {}
        """Each probe's request, active ids and archive size: for an offline replay."""

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        if not self.every_call and self.recorder.step not in self.recorder.due:
            return view
        return (yield from super().before(view, ctx))

    def _inject(
        self, view: View, ctx: CallContext, r: Any, found: Any, active: Any, *a: Any
    ) -> View:
        out = super()._inject(view, ctx, r, found, active, *a)
        for probe in self.recorder.due.get(self.recorder.step, ()):
            assert self.archive is not None
            size = len(self.memory._rows.get((r.thread, r.namespace), {}))
            self.states[probe.id] = (r, active, size)
            self.traces[probe.id] = self._trace(probe.id, view, ctx, r, found, active, out)
        return out

    def _trace(
        self, pid: str, view: View, ctx: CallContext, r: Any, found: Any, active: Any, out: View
    ) -> Trace:
        source, value, fact_turn = self.facts[pid]
        trace = Trace(pid, int(pid.split()[2]), fact_turn)
        assert self.archive is not None and r.thread is not None
        prompt = [m for m in out.get("messages") or () if m.id != "lgctx-recall"]
        trace.held = holds(prompt_text(prompt), (value,), False)
        if holds(prompt_text(list(out.get("messages") or ())), (value,), False):
            trace.stage = "kept"
        elif source in active:
            trace.stage = "in history"
        elif self.archive.get(r.thread, source, namespace=r.namespace) is None:
            trace.stage = "not archived"
        deep = self.archive.search(r.thread, r.query, limit=DEEP, namespace=r.namespace)
        ids = [h.message_id for h in deep]
        trace.search_rank = ids.index(source) + 1 if source in ids else None
        if trace.stage:
            return trace
        hits: list[ArchiveHit] = found[2]
        hits = [h for h in hits if h.kind == "tool_result" or h.message_id not in active]
        hits = [h for h in hits if h.kind != "summary"]
        if source not in {h.message_id for h in hits}:
            trace.stage = "not searched up"
            return trace
        items = _ranked([], hits, r.query, len(hits), self.snippet_tokens, ctx)
        order = [item.message_id for _, item in items if isinstance(item, ArchiveHit)]
        trace.ranked_at = order.index(source) + 1
        if trace.ranked_at > self.archive_hits:
            trace.stage = "ranked out"
            return trace
        block = next((m for m in out.get("messages") or () if m.id == "lgctx-recall"), None)
        shown = (block.additional_kwargs[KEY]["recall"]["ids"]) if block is not None else []
        trace.stage = "snippet cut" if source in shown else "over budget"
        return trace


def build(
    setup: Setup, facts: dict[str, tuple[str, str, int]], every_call: bool
) -> tuple[Replay, TracedRecall]:
    archive = InMemoryArchive()
    assert setup.model._recorder is not None
    recall = TracedRecall(setup.model._recorder, facts, archive=archive)
    recall.every_call = every_call
    middleware = [
        PreflightCheck(),
        TieredCompression(summarizer=CountingSummarizer(setup.log), archive=archive),
        recall,
    ]
    pipeline = TimedPipeline(middleware, budget=setup.budget, clock=setup.clock)
    graph = _one_node(setup, call_llm_node(setup.model), pipeline)
    return Replay(graph, setup, setup.policy), recall


def fact_sources(seed: int, turns: int) -> dict[str, tuple[str, str, int]]:
    """Each probe's id -> (the id of the message stating its fact, its value, its turn)."""
    script = generate_session(
        turns, seed=seed, tool_rate=1.0, result_chars=LONG_RESULT_CHARS, probe_rate=0.05
    )
    out = {}
    for t in script.turns:
        if t.probe is None:
            continue
        f = t.probe
        source = f"t{f.turn:04d}-user" if f.where == "user" else f"t{f.turn:04d}-tool-0"
        out[f"long: turn {t.index} {f.key}"] = (source, f.value, f.turn)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dump", type=Path, help="pickle the archive and probe states here")
    parser.add_argument("--every-call", action="store_true", help="recall on every call")
    parser.add_argument("--replay", type=Path, help="re-rank a --dump's probes, print stages")
    parser.add_argument("--cost", type=int, nargs="+", help="search CPU at these turn counts")
    parser.add_argument("--sql-cost", type=int, help="SQLite searches, before/after, at N turns")
    args = parser.parse_args(argv)
    if args.sql_cost:
        print(sql_search_cost(args.sql_cost, args.seed))
        return 0
    if args.cost:
        for turns in args.cost:
            print(f"{turns:,} turns archived: {search_cost(turns, args.seed):.1f} ms CPU a call")
        return 0
    if args.replay is not None:
        stages = replay_dump(args.replay)
        print(", ".join(f"{s}: {stages.get(s, 0)}" for s in STAGES))
        return 0
    session = long_session(args.seed, args.turns)
    facts = fact_sources(args.seed, args.turns)
    built: list[TracedRecall] = []

    def make(setup: Setup) -> Replay:
        graph, recall = build(setup, facts, args.every_call)
        built.append(recall)
        return graph

    strategy = Strategy("ours+recall", "ours + recall from the archive", make)
    start, cpu = time.perf_counter(), time.process_time()
    run = replay(
        strategy,
        session,
        lambda s, model, clock, log: Setup(
            s, 128_000, model, _saver(), clock, log, TokenTally(), "long"
        ),
        window=128_000,
        tally=TokenTally(),
        cut=2.0,
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    traces = built[-1].traces
    kept = sum(run.probes.values())
    stages = Counter(t.stage for t in traces.values())
    # A probe the harness scored kept is kept, whatever the trace saw before placement.
    lines = header(f"Where the long-horizon probes are lost ({args.turns:,} turns)")
    mode = "every call" if args.every_call else "the probe calls only"
    command = f"python benchmarks/long_recall.py --turns {args.turns}" + (
        " --every-call" if args.every_call else ""
    )
    lines += [
        f"Command: `{command}` (recall on {mode}; {wall / 60:.1f} min wall, "
        f"{cpu / 60:.1f} min CPU).",
        "",
        f"- Probes kept (the harness's test, the value in the prompt): **{kept}/{len(run.probes)} "
        f"({kept / max(1, len(run.probes)):.0%})**",
        f"- Own time per call (the pipeline's, the model's taken out): "
        f"{1000 * sum(run.managed_seconds) / max(1, run.calls):.1f} ms over {run.calls:,} calls",
        "",
        *table(
            ["stage where the probe is lost", "probes"],
            [[s, str(stages.get(s, 0))] for s in STAGES]
            + [["not traced", str(len(run.probes) - len(traces))]],
        ),
        "",
    ]
    ranks = [t.search_rank for t in traces.values() if t.stage == "not searched up"]
    if ranks:
        found = sorted(r for r in ranks if r is not None)
        lines += [
            f"Not searched up: the fact's message in a search {DEEP:,} deep for the question: "
            f"{len(found)} of {len(ranks)} found, at rank median "
            f"{found[len(found) // 2] if found else '-'}.",
            "",
        ]
    emit("long_recall_stages", lines)
    if args.dump is not None:
        recall = built[-1]
        rows = list(recall.memory._rows.get(("long", ""), {}).values())
        with args.dump.open("wb") as f:
            pickle.dump((rows, recall.states, facts, run.probes, traces), f)
    return 0


def replay_dump(path: Path) -> Counter[str]:
    """The stages of every probe of a ``--dump``, recall's searches and ranking re-run
    with this checkout's code: the archive rebuilt in its order, each probe searched
    when it held as many messages as at the probe's call (it only grows), with the
    request (query, budget) and the history's ids the run saw. Seconds, not a run."""
    from types import SimpleNamespace

    from langgraph_ctx.middleware.recall import _union, searches, select
    from langgraph_ctx.tokens import TokenCounter

    with path.open("rb") as f:
        rows, states, facts, _, traces = pickle.load(f)
    rows.sort(key=lambda row: row.position)
    calibration = SimpleNamespace(apply=lambda tokens: tokens)  # the replay has no usage
    ctx: Any = SimpleNamespace(
        counter=TokenCounter(), session=SimpleNamespace(calibration=calibration)
    )
    archive, done, stages = InMemoryArchive(), 0, Counter[str]()
    for pid in sorted(states, key=lambda p: states[p][2]):
        r, active, size = states[pid]
        for row in rows[done:size]:
            archive.put("long", [row.message], reason=row.reason)
        done = max(done, size)
        source, value, _ = facts[pid]
        trace = traces[pid]
        if trace.stage in ("in history", "not archived") or getattr(trace, "held", False):
            stages["kept" if getattr(trace, "held", False) else trace.stage] += 1
            continue
        limit = 8 * 4 + min(len(active), 4 * 8)  # as MemoryRecall.before asks
        found = [
            archive.search("long", r.query, limit=n, within=w)
            for w, n in searches(r.query, limit, 8)
        ]
        hits = [h for h in _union(found) if h.kind == "tool_result" or h.message_id not in active]
        hits = [h for h in hits if h.kind != "summary"]
        items = _ranked([], hits, r.query, 8, 160, ctx)
        lines, chosen, _ = select(None, items, r.budget, ctx)
        order = [item.message_id for _, item in items if isinstance(item, ArchiveHit)]
        if value.casefold() in "\n".join(lines).casefold():
            stages["kept"] += 1
        elif source not in order:
            stages["not searched up"] += 1
        elif order.index(source) >= 8:
            stages["ranked out"] += 1
        elif source in {c.message_id for c in chosen if isinstance(c, ArchiveHit)}:
            stages["snippet cut"] += 1
        else:
            stages["over budget"] += 1
    return stages


def search_cost(turns: int, seed: int = 0, calls: int = 80) -> float:
    """CPU ms of recall's archive searches and re-ranking per call, the long session's
    first ``turns`` turns all archived, for the user messages of the next ``calls``
    turns (outside the graph: what grows with the archive, if anything)."""
    from langgraph_ctx.middleware.recall import _union, names_in, searches
    from langgraph_ctx.retrieval.passages import PassageRanking

    script = generate_session(
        turns + calls, seed=seed, tool_rate=1.0, result_chars=LONG_RESULT_CHARS, probe_rate=0.05
    )
    messages, archive = script.messages(turns), InMemoryArchive()
    for at in range(0, len(messages), 50):  # as compression archives: a batch at a time
        archive.put("t", messages[at : at + 50], reason="compressed into summary #1")
    queries = [t.user for t in script.turns[turns:]]
    start = time.process_time()
    for q in queries:
        found = [archive.search("t", q, limit=n, within=w) for w, n in searches(q, 64, 8)]
        PassageRanking(q, [h.text for h in _union(found)], names_in(q)).order()
    return (time.process_time() - start) / len(queries) * 1000


def sql_search_cost(turns: int, seed: int = 0) -> str:
    """Wall ms of the archive searches of one recall on a SQLite archive of the long
    session's first ``turns`` turns, for the probe questions of the next 200 turns and
    40 plain turns: the question, then each name in it alone (as recall searched before
    ``within``) against the question within each name, interleaved in one process."""
    import os
    import statistics
    import tempfile

    from langgraph_ctx.middleware.recall import names_in
    from langgraph_ctx.storage.archive import SQLiteArchive

    script = generate_session(
        turns + 200, seed=seed, tool_rate=1.0, result_chars=LONG_RESULT_CHARS, probe_rate=0.05
    )
    messages = script.messages(turns)
    later = script.turns[turns:]
    queries = [t.user for t in later if t.probe is not None]
    queries += [t.user for t in later[:40] if t.probe is None]
    took: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp, SQLiteArchive(os.path.join(tmp, "a.db")) as archive:
        for at in range(0, len(messages), 500):
            archive.put("t", messages[at : at + 500], reason="compressed into summary #1")
        for q in queries:
            for within in (False, True, False, True):
                start = time.perf_counter()
                archive.search("t", q, limit=64)
                for name in names_in(q):
                    if within:
                        archive.search("t", q, limit=32, within=name)
                    else:
                        archive.search("t", name, limit=32)
                took[within].append((time.perf_counter() - start) * 1000)

    def p95(xs: list[float]) -> float:
        return sorted(xs)[int(0.95 * (len(xs) - 1))]

    old, new = took[False], took[True]
    return (
        f"{len(messages):,} messages, {len(queries)} questions: the name alone p50 "
        f"{statistics.median(old):.1f} ms, p95 {p95(old):.1f}; within the name p50 "
        f"{statistics.median(new):.1f} ms, p95 {p95(new):.1f}"
    )


def _saver() -> Any:
    # The latest checkpoint per thread only: a plain InMemorySaver keeps every
    # version of the history, about 1.5 MB a turn here (15 GB at 10,000 turns).
    from harness.savers import TallySaver

    return TallySaver()


if __name__ == "__main__":
    raise SystemExit(main())
