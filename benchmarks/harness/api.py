"""``run``: workloads x strategies, measured side by side in one process."""

from __future__ import annotations

import gc
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from langgraph_ctx.errors import ConfigurationError

from .metrics import measure
from .report import Results, WorkloadResult
from .runner import Plan, run_pair, run_pairs
from .session import Session, TokenTally
from .strategies import STRATEGIES, Strategy
from .workloads import WORKLOADS, Workload

DEFAULT_WORKLOADS = tuple(WORKLOADS)
DEFAULT_STRATEGIES = tuple(STRATEGIES)


class ProgressLine:
    """One line on a terminal stream: which run, how far, the last utilization."""

    def __init__(self, label: str, total: int, stream: TextIO = sys.stderr) -> None:
        self.label, self.total, self.stream = label, max(total, 1), stream
        self.start = self.shown = time.perf_counter()

    def __call__(self, done: int, utilization: float) -> None:
        now = time.perf_counter()
        if now - self.shown < 0.25 and done < self.total:
            return
        self.shown = now
        filled = 24 * min(done, self.total) // self.total
        self.stream.write(
            f"\r{self.label:<30} [{'#' * filled}{'-' * (24 - filled)}] {done:,}/{self.total:,} "
            f"calls  util {utilization:.2f}  {now - self.start:,.0f} s "
        )
        self.stream.flush()

    def close(self) -> None:
        self.stream.write(f"  done in {time.perf_counter() - self.start:,.1f} s\n")
        self.stream.flush()


def _pick(names: Sequence[str | Strategy], known: dict[str, Strategy]) -> list[Strategy]:
    out = []
    for n in names:
        if isinstance(n, Strategy):
            out.append(n)
        elif n in known:
            out.append(known[n])
        else:
            raise ConfigurationError("strategies", f"unknown strategy {n!r}; one of {list(known)}")
    return out


def _planned(workload: Workload, plan: Plan) -> int:
    cap = plan.max_turns
    return sum(sum(1 for s in x.steps if cap is None or s.turn < cap) for x in workload.sessions)


def run(
    workloads: Sequence[str | Workload] = DEFAULT_WORKLOADS,
    strategies: Sequence[str | Strategy] = DEFAULT_STRATEGIES,
    *,
    seed: int = 0,
    quick: bool = False,
    data_dir: Path | None = None,
    progress: bool = False,
) -> Results:
    """Replay every workload through every strategy and measure them side by side.

    Args:
        workloads: names from :data:`WORKLOADS` (built with ``seed`` and ``quick``)
            or :class:`Workload` objects.
        strategies: names from :data:`STRATEGIES` or :class:`Strategy` objects.
            Ratios to no management need ``"none"`` among them.
        seed: names the synthetic sessions; the same seed gives the same sessions.
        quick: fewer and shorter sessions, for a smoke run.
        data_dir: the shared real data (default: ``$LANGGRAPH_CTX_DATA`` or
            ``../shared/data``).
        progress: a progress line per run on stderr.
    """
    chosen = _pick(strategies, STRATEGIES)
    for w in workloads:
        if isinstance(w, str) and w not in WORKLOADS:
            raise ConfigurationError(
                "workloads", f"unknown workload {w!r}; one of {list(WORKLOADS)}"
            )
    order = sorted(chosen, key=lambda s: s.name != "none")  # the baseline first
    started = time.perf_counter()
    quiet = logging.getLogger("langgraph_ctx.compression")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # budget warnings on tiny windows are expected here
    results: list[WorkloadResult] = []
    try:
        for w in workloads:
            workload = WORKLOADS[w](seed, quick, data_dir) if isinstance(w, str) else w
            results.append(_run_workload(workload, order, chosen, progress))
    finally:
        quiet.setLevel(level)
    return Results(seed, quick, results, time.perf_counter() - started)


def _warm_up(workload: Workload, strategies: list[Strategy], tally: TokenTally) -> None:
    """A few untimed calls per strategy first: imports and first compiles cost nobody."""
    first = workload.sessions[0]
    head = Session(first.name, first.steps[:4], (), first.system)
    for strategy in strategies:
        if strategy.prepare is None:
            run_pair(strategy, [head], window=workload.window, backend="memory", tally=tally)


def _run_workload(
    workload: Workload, order: list[Strategy], chosen: list[Strategy], progress: bool
) -> WorkloadResult:
    tally = TokenTally()
    has_tasks = any(s.tasks for s in workload.sessions)
    runnable = [s for s in order if has_tasks or not s.needs_tasks]
    plans = [Plan(s, workload.turns_for(s.name)) for s in runnable]
    extra = None
    if workload.peer_turns is not None and "ours" in {s.name for s in runnable}:
        # Ours over the span the others replay too: the like-for-like row.
        extra = Plan(
            STRATEGIES["ours"], workload.peer_turns, f"ours, first {workload.peer_turns:,} turns"
        )
        plans.append(extra)
    _warm_up(workload, runnable, tally)
    bar = ProgressLine(
        f"{workload.name} ({len(plans)} runs)", sum(_planned(workload, p) for p in plans)
    )
    gc.collect()
    gc.freeze()  # the sessions: not rescanned by every collection during the runs
    try:
        pairs = run_pairs(
            plans,
            workload.sessions,
            window=workload.window,
            backend=workload.backend,
            tally=tally,
            cut=workload.cut,
            progress=bar if progress else None,
        )
    finally:
        gc.unfreeze()
    if progress:
        bar.close()
    result = WorkloadResult(workload, pairs)
    baseline = pairs.get("none")
    for plan in [p for s in chosen for p in plans if p.strategy is s and p is not extra]:
        same = plan.strategy.prepare is None
        result.metrics[plan.key] = measure(
            pairs[plan.key], workload.window, baseline, same_steps=same
        )
        if extra is not None and plan.key == "ours":
            result.metrics[extra.key] = measure(pairs[extra.key], workload.window, baseline)
    return result
