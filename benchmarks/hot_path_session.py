"""Does a call cost more late in a session than early? Per quarter of 1,000 turns.

The long-horizon workload (``benchmarks.harness.synthetic.long_session``, seed
0, ~1,500 tokens a turn, every turn calls tools) replayed one ``invoke`` per
model call on a compiled ``StateGraph(ContextState)`` with a SQLite
checkpointer, ``Pipeline([PreflightCheck(), TieredCompression()])`` in a 128K
window, the extractive summarizer prepared ahead. The node returns the
scripted reply at once (no model latency: only our time is of interest).

A managed history is a sawtooth: it grows to the red line, is compressed, grows
again. What a call costs depends on where on the tooth it is (in the yellow
zone compression plans the next cut; a crossing call swaps a summary in), so
"the first 100 turns against the last 100" compares different phases, and
before the first compression a different regime. Here every quarter of the
session after the first compression is compared: the pipeline's own time per
call (wall and CPU of the thread running it), the messages it saw, and how many
calls compressed. Run from the repo root:
``python benchmarks/hot_path_session.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import hot_path_crossing
from _common import emit, header, table
from harness.synthetic import long_session

TURNS, QUICK_TURNS = 1_000, 300
WINDOW = 128_000


def _quarters(n: int, start: int) -> list[tuple[int, int]]:
    size = (n - start) // 4
    return [(start + q * size, start + (q + 1) * size) for q in range(4)]


def session_section(*, quick: bool) -> list[str]:
    turns = QUICK_TURNS if quick else TURNS
    session = long_session(0, turns)
    hot_path_crossing.WINDOW = WINDOW
    with tempfile.TemporaryDirectory() as tmp:
        replay = hot_path_crossing.Replay(
            "extractive-prepared", Path(tmp) / "s.sqlite", slow=False, prepare=True
        )
        replay.latency = 0.0
        sizes: list[int] = []
        for i, step in enumerate(session.steps):
            replay.step(list(step.inputs), step.reply)
            sizes.append(len(replay.graph.get_state(replay.config).values["messages"]))
            print(f"step {i + 1}/{len(session.steps)}", file=sys.stderr, end="\r")
        replay.conn.close()
    calls = replay.calls
    first = next((i for i, c in enumerate(calls) if c[1]), len(calls))
    rows, medians = [], []
    for q, (lo, hi) in enumerate(_quarters(len(calls), first + 1), start=1):
        part = calls[lo:hi]
        own = [c[0] * 1000 for c in part]
        cpu = [c[3] * 1000 for c in part]
        medians.append((statistics.median(own), statistics.median(cpu)))
        rows.append(
            [
                f"Q{q}",
                f"{lo + 1:,}-{hi:,}",
                f"{sum(c[1] for c in part)}",
                f"{statistics.median(sizes[lo:hi]):,.0f}",
                f"{max(sizes[lo:hi]):,}",
                f"{statistics.median(own):.2f}",
                f"{sorted(own)[int(0.9 * len(own))]:.2f}",
                f"{statistics.median(cpu):.2f}",
            ]
        )
    wall = medians[-1][0] / medians[0][0]
    cpu_ratio = medians[-1][1] / medians[0][1]
    return [
        f"### {turns:,} turns ({len(calls):,} model calls), 128K window",
        "",
        f"The first compression came at call {first + 1}; the quarters split the calls "
        "after it. Wall and CPU are the pipeline's own (the wrapped node minus the node), "
        "in ms; `messages` is the history the call ended with.",
        "",
        *table(
            [
                "quarter",
                "calls",
                "compressions",
                "messages (median)",
                "messages (max)",
                "own wall p50",
                "own wall p90",
                "own CPU p50",
            ],
            rows,
        ),
        "",
        f"Last quarter against the first: **{wall:.2f}x** wall, **{cpu_ratio:.2f}x** CPU "
        "(median per call). The history stays within the window, so the work per call does "
        "too: what grows with the session is the archive (written at compressions, "
        "searched only by recall); the ledger in the state keeps its last entries only.",
        "",
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    cpu = time.process_time()
    body = session_section(quick=args.quick)
    lines = header("Cost per call across a long session (issue #15)")
    lines += [
        f"`python benchmarks/hot_path_session.py{' --quick' if args.quick else ''}`; the run "
        f"took {(time.perf_counter() - started) / 60:.1f} min wall, "
        f"{(time.process_time() - cpu) / 60:.1f} min CPU.",
        "",
        *body,
    ]
    emit("hot_path_session", lines)


if __name__ == "__main__":
    main()
