"""Timeouts that end the work (#16): how long a process takes to exit once its
graphs returned, with a summarizer and an AdaCoM manager that never answer,
against the same process that ran nothing (interpreter teardown alone).

The script run is the one ``tests/test_timeouts.py`` runs (30 ``ainvoke`` and 30
``invoke`` calls on a graph whose summarizer hangs, 10 and 10 on one whose
manager hangs, each call cut off by its 0.1 s timeout); the test checks that it
exits and leaves no non-daemon thread, this measures how long the exit takes.

Run: python benchmarks/timeouts.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, header, table
from tests.test_timeouts import SCRIPT

ROOT = Path(__file__).resolve().parents[1]

BASELINE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from tests.test_timeouts import HangingManagerModel, HangingModel, adacom_graph
    from tests.middleware.test_compression import cfg, events, make_graph, turn
    print("returned", flush=True)
    """
)


def exit_seconds(script: str) -> float:
    """Seconds from the script's ``returned`` line to its exit (wall time)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script.format(root=str(ROOT))],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    returned = None
    for line in proc.stdout:
        if line.strip() == "returned":
            returned = time.perf_counter()
            break
    code = proc.wait(timeout=60)
    if returned is None or code != 0:
        raise SystemExit(f"the script failed (exit code {code})")
    return time.perf_counter() - returned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for label, script in (
        ("hung summarizer and manager (60 + 20 calls timed out)", SCRIPT),
        ("nothing run (imports only)", BASELINE),
    ):
        # Interleaved would be fairer still; these are seconds, not microseconds.
        samples = [exit_seconds(script) for _ in range(args.runs)]
        rows.append(
            [label, f"{statistics.median(samples):.2f}", f"{max(samples):.2f}", str(args.runs)]
        )
    lines = [
        *header("Timeouts: the process exits once the graph returns"),
        f"Command: `python benchmarks/timeouts.py --runs {args.runs}` (wall seconds from the "
        "line the script prints after its last graph call to the process's exit; load "
        f"average {os.getloadavg()[0]:.1f} on the shared 2-core machine at the end).",
        "",
        *table(["script", "exit, median (s)", "exit, max (s)", "runs"], rows),
        "",
        "Before #16 the first script never exited: the hung calls held threads of a",
        "`ThreadPoolExecutor` and of the event loop's default executor, both joined at",
        "exit. Now they hold daemon threads of the package's bounded pool (at most 4, 2",
        "for summaries prepared ahead); what is left is the interpreter's own teardown,",
        "which the second script measures: the difference is what the hung calls cost",
        "at exit.",
    ]
    emit("timeouts", lines)


if __name__ == "__main__":
    main()
