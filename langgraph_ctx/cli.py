"""The ``langgraph-ctx`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="langgraph-ctx", description="Context-window management for LangGraph agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser(
        "demo",
        help="run a long simulated session (scripted model, SQLite checkpoint, no network)",
        description="Run a long simulated agent session through a real LangGraph graph. "
        "Run it again with the same --thread-id to resume that session.",
    )
    demo.add_argument("--turns", type=int, default=150, help="user turns in the session")
    demo.add_argument("--thread-id", default="demo", help="session to run or resume")
    demo.add_argument(
        "--db", type=Path, default=Path("langgraph-ctx-demo.sqlite"), help="SQLite checkpoint file"
    )
    demo.add_argument("--seed", type=int, default=0, help="workload seed")
    demo.add_argument("--window", type=int, default=32_000, help="model context window, tokens")
    demo.add_argument(
        "--plot", type=Path, default=Path("langgraph-ctx-demo.png"), help="PNG of utilization"
    )
    demo.add_argument("--quiet", action="store_true", help="no progress bar")

    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo(args)
    parser.error(f"unknown command {args.command}")  # pragma: no cover
    return 2


def _demo(args: argparse.Namespace) -> int:
    from langgraph_ctx.demo import ProgressBar, format_report, run_demo

    if args.turns < 1:
        print("langgraph-ctx demo: --turns must be at least 1", file=sys.stderr)
        return 2
    print(
        f"demo: {args.turns} turns, window {args.window:,} tokens, "
        f"thread {args.thread_id!r}, checkpoints in {args.db}",
        file=sys.stderr,
    )
    report = run_demo(
        turns=args.turns,
        thread_id=args.thread_id,
        db=args.db,
        seed=args.seed,
        window=args.window,
        progress=None if args.quiet else ProgressBar(),
    )
    print(format_report(report))
    if report.utilization:
        try:
            from langgraph_ctx.plot import plot_utilization

            plot_utilization(
                args.plot,
                {
                    "sent to the model": report.utilization,
                    "measured by pre-flight": report.measured,
                },
                marks=report.compression_calls,
                title=f"langgraph-ctx demo: {report.turns_total} turns, window {args.window:,}",
            )
            print(f"plot: {args.plot}")
        except ImportError as exc:
            print(f"no plot ({exc})", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
