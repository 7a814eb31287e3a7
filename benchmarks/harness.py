"""The benchmark harness: every workload through every strategy, side by side.

Writes ``benchmarks/results/harness.md`` and ``benchmarks/results/harness-*.png``.
Run from the repo root: ``python benchmarks/harness.py [--quick] [--seed N]``; the same
as ``langgraph-ctx bench --out benchmarks/results``, with this directory's header.
Method and settings: benchmarks/README.md and ``langgraph_ctx.bench``.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version

from _common import RESULTS_DIR, data_dir, emit, header

from langgraph_ctx.bench import DEFAULT_STRATEGIES, DEFAULT_WORKLOADS, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter sessions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workloads", nargs="+", default=list(DEFAULT_WORKLOADS))
    parser.add_argument("--strategies", nargs="+", default=list(DEFAULT_STRATEGIES))
    args = parser.parse_args()
    results = run(
        args.workloads,
        args.strategies,
        seed=args.seed,
        quick=args.quick,
        data_dir=data_dir(),
        progress=True,
    )
    lines = header("Benchmark harness: strategies side by side")
    lines[-2] += "".join(f", {p} {version(p)}" for p in ("langmem", "matplotlib"))
    lines.insert(-1, f"- Seed: {args.seed}{' (--quick)' if args.quick else ''}")
    command = "python benchmarks/harness.py" + (" --quick" if args.quick else "")
    lines += [f"Command: `{command}` (or `langgraph-ctx bench --out benchmarks/results`).", ""]
    emit("harness", results.markdown(header=lines).splitlines())
    for path in results.plots(RESULTS_DIR):
        print(f"plot: {path.relative_to(RESULTS_DIR.parent.parent)}", file=sys.stderr)


if __name__ == "__main__":
    main()
