"""Each paper's preset against our defaults: answers kept, prompt tokens and time, on
answers_kept's runs (issue 35).

Run from the repo root::

    python benchmarks/presets.py [--windows 2000 4000 8000] [--strategies adacom pace ...]
        [--workloads conversations bfcl tau] [--full] [--workers N]

The cells are :mod:`answers_kept`'s (its workloads, its scripted model playing the
recorded assistant, ``think`` on, a SQLite checkpointer, the question asked as the
next user turn), recall off, run twice: ``preset="default"`` and ``preset="paper"``.
Without ``--full`` the workloads are answers_kept's ``--quick`` ones. No manager
model is given (``summary_model`` unset), as in answers_kept: each strategy runs its
offline manager, so a difference the paper's preset makes only for a model
(ARC's first checklist, a BACM or AdaCoM model reading whole steps) does not show
here; the table says which settings a cell exercises. ARC is left out by default:
offline, its paper preset is its default (``--strategies arc`` runs it anyway).
The section is written again after each workload, so a run stopped part-way keeps
the workloads it finished.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _common import emit, header
from answers_kept import Cell, Workload, bfcl, conversations, pct, run_cell, tau

from langgraph_ctx.strategies.registry import PRESETS

PAPER_STRATEGIES = tuple(name for name, names in PRESETS.items() if "paper" in names)
RUN = tuple(s for s in PAPER_STRATEGIES if s != "arc")
"""What runs by default: ARC's preset changes nothing without a manager model."""
WINDOWS = (2_000, 4_000, 8_000)
EXERCISED = {
    "adacom": "every=1, extract_for_task (offline); preview_chars needs a model",
    "arc": "none offline: the first checklist by model needs one",
    "bacm": "budget_line=before; preview_chars needs a model",
    "pace": "query_steps=2, pressure_budget=128K, condense_when_fits, headroom=0",
}


def _task(args: tuple[Workload, str, str, int]) -> Cell:
    workload, strategy, preset, window = args
    with tempfile.TemporaryDirectory() as folder:
        cell = run_cell(workload, strategy, False, window, Path(folder), False, preset)
    print(
        f"{workload.name} {window:,} {strategy} {preset}: {cell.kept}/{cell.probes} "
        f"{cell.error or ''} ({cell.wall:.0f} s)",
        file=sys.stderr,
        flush=True,
    )
    return cell


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument("--strategies", nargs="+", default=list(RUN))
    parser.add_argument(
        "--workloads", nargs="+", default=["conversations", "bfcl", "tau"],
        choices=["conversations", "bfcl", "tau"],
    )  # fmt: skip
    parser.add_argument("--full", action="store_true", help="answers_kept's full workloads")
    parser.add_argument("--seed", type=int, default=0, help="the conversations' seed")
    parser.add_argument("--workers", type=int, default=2, help="cells run in parallel")
    parser.add_argument("--data", type=Path, help="the shared data (default ../shared/data)")
    parser.add_argument("--out", default="presets", help="results file stem")
    args = parser.parse_args(argv)
    bad = sorted(set(args.strategies) - set(PAPER_STRATEGIES))
    if bad:
        parser.error(f"{bad[0]!r} has no paper preset; choose from {list(PAPER_STRATEGIES)}")
    quick = not args.full
    loads = []
    for name in args.workloads:
        if name == "conversations":
            loads.append(conversations(quick, args.seed))
        else:
            from harness.realdata import data_dir

            data = data_dir(args.data)
            loads.append(bfcl(quick, data) if name == "bfcl" else tau(quick, data))
    started = time.perf_counter()
    lines = header("Each paper's preset against our defaults (answers kept)")
    lines += [
        "`create_context_agent(model, tools, budget=Budget.for_window(W), strategy=S, "
        "preset=P)` on answers_kept's runs (recall off, `think` on, no manager model: each "
        "strategy's offline manager). Each cell: default → paper, answers kept of the "
        "questions asked, and the wall seconds of both (one run each; PACE's background "
        "summaries and scorer make its cells depend on the machine's load). What the "
        "paper's preset changes that the offline runs exercise:",
        "",
        *(f"- {s}: {EXERCISED[s]}." for s in args.strategies),
        "",
    ]
    command = "python benchmarks/presets.py"
    if argv:
        command += " " + " ".join(argv)
    for load in loads:
        tasks = [
            (load, s, preset, w)
            for w in args.windows
            for s in args.strategies
            for preset in ("default", "paper")
        ]
        if args.workers > 1:
            with ProcessPoolExecutor(args.workers) as pool:
                results = list(pool.map(_task, tasks))
        else:
            results = [_task(t) for t in tasks]
        cells = {(t[1], t[2], t[3]): c for t, c in zip(tasks, results, strict=True)}
        lines += [f"### {load.title}", "", load.note + ".", ""]
        lines += [*_table(cells, args.strategies, args.windows), ""]
        elapsed = time.perf_counter() - started
        done = f"Command: `{command}` ({elapsed / 60:.1f} minutes, {args.workers} worker(s))."
        emit(args.out, [*lines, done])
    return 0


def _table(cells: dict[tuple[str, str, int], Cell], strategies: Sequence[str],
           windows: Sequence[int]) -> list[str]:  # fmt: skip
    heads = [f"{w // 1000}K" for w in windows]
    out = ["| strategy | " + " | ".join(heads) + " |"]
    out += ["| --- | " + " | ".join("---" for _ in heads) + " |"]
    for s in strategies:
        row = []
        for w in windows:
            ours, paper = cells[(s, "default", w)], cells[(s, "paper", w)]
            row.append(
                f"{pct(ours)} → {pct(paper)} ({ours.kept}/{ours.probes} → "
                f"{paper.kept}/{paper.probes}; {ours.wall:.0f} s → {paper.wall:.0f} s)"
            )
        out += [f"| {s} | " + " | ".join(row) + " |"]
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
