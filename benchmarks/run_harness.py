"""The benchmark harness: every workload through every strategy, side by side.

Run from the repo root::

    python benchmarks/run_harness.py [--quick] [--seed N] [--workloads ...] [--strategies ...]

With no ``--out`` it writes ``benchmarks/results/harness.md`` (with this directory's
header, for RESULTS.md) and ``benchmarks/results/harness-*.png``. Method and
settings: benchmarks/README.md and the ``harness`` package beside this file.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path

from _common import RESULTS_DIR, emit, header
from harness import DEFAULT_STRATEGIES, DEFAULT_WORKLOADS, run

from langgraph_ctx.errors import ConfigurationError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter sessions")
    parser.add_argument("--seed", type=int, default=0, help="names the synthetic sessions")
    parser.add_argument("--workloads", nargs="+", default=list(DEFAULT_WORKLOADS))
    parser.add_argument("--strategies", nargs="+", default=list(DEFAULT_STRATEGIES))
    parser.add_argument("--out", type=Path, help="write harness.md and plots here instead")
    parser.add_argument("--data", type=Path, help="the shared data directory")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    try:
        results = run(
            args.workloads,
            args.strategies,
            seed=args.seed,
            quick=args.quick,
            # None: a workload that reads the shared data finds it itself (and says
            # so if it cannot), after every name is checked; synthetic ones need none.
            data_dir=args.data,
            progress=not args.quiet,
        )
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "harness.md").write_text(results.markdown(), encoding="utf-8")
        for path in results.plots(args.out):
            print(f"plot: {path}", file=sys.stderr)
        return 0
    lines = header("Benchmark harness: strategies side by side")
    lines[-2] += "".join(f", {p} {version(p)}" for p in ("langmem", "matplotlib"))
    lines.insert(-1, f"- Seed: {args.seed}{' (--quick)' if args.quick else ''}")
    command = "python benchmarks/run_harness.py" + (" --quick" if args.quick else "")
    lines += [f"Command: `{command}`.", ""]
    emit("harness", results.markdown(header=lines).splitlines())
    for path in results.plots(RESULTS_DIR):
        print(f"plot: {path.relative_to(RESULTS_DIR.parent.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
