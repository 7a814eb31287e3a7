"""The ``langgraph-ctx`` command: ``demo``, ``migrate``, ``inspect``, ``export``.

Exit codes: 0 done; 1 ``migrate --status`` found work to do, or ``inspect``
found no such thread; 2 a usage or configuration error (a bad URL, an
unreachable server, a changed migration), printed as one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from argparse import ArgumentParser as Parser
from collections.abc import Callable, Sequence
from inspect import getdoc
from pathlib import Path
from typing import TypeAlias

from langgraph_ctx.errors import ContextError

URL_ENV = "LANGGRAPH_CTX_DATABASE_URL"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except ContextError as exc:
        print(f"langgraph-ctx {args.command}: {exc}", file=sys.stderr)
        return 2
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="langgraph-ctx", description="Context-window management for LangGraph agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_demo(commands)
    _add_migrate(commands)
    _add_inspect(commands)
    _add_export(commands)
    return parser


_Commands: TypeAlias = "argparse._SubParsersAction[Parser]"


def _subcommand(commands: _Commands, run: Callable[[argparse.Namespace], int]) -> Parser:
    """The subcommand ``run`` implements, named after it (``_demo``: ``demo``).

    Its docstring is its help: the first line in ``langgraph-ctx --help``, the
    whole in ``langgraph-ctx demo --help``.
    """
    doc = getdoc(run) or ""
    summary = doc.split("\n", 1)[0].rstrip(".")
    parser: Parser = commands.add_parser(
        run.__name__.lstrip("_"), help=summary[0].lower() + summary[1:], description=doc
    )
    parser.set_defaults(run=run)
    return parser


def _database_url(parser: argparse.ArgumentParser, *aliases: str) -> None:
    parser.add_argument(
        "--database-url",
        *aliases,
        dest="database_url",
        default=os.environ.get(URL_ENV),
        help=f"postgresql://..., sqlite:///path or memory:// (default: ${URL_ENV}, "
        "else the SQLite file under $LANGGRAPH_CTX_HOME or the user data directory)",
    )


# -- demo ------------------------------------------------------------------


def _add_demo(commands: _Commands) -> None:
    demo = _subcommand(commands, _demo)
    demo.add_argument(
        "--turns", type=int, default=150, help="user turns in the session (default: %(default)s)"
    )
    demo.add_argument(
        "--thread-id", default="demo", help="session to run or resume (default: %(default)s)"
    )
    demo.add_argument(
        "--db",
        type=Path,
        default=Path("langgraph-ctx-demo.sqlite"),
        help="SQLite checkpoint file (default: %(default)s)",
    )
    demo.add_argument("--seed", type=int, default=0, help="workload seed (default: %(default)s)")
    demo.add_argument(
        "--window",
        type=int,
        default=32_000,
        help="model context window, tokens (default: %(default)s)",
    )
    demo.add_argument(
        "--plot",
        type=Path,
        default=Path("langgraph-ctx-demo.png"),
        help="PNG of utilization (default: %(default)s)",
    )
    demo.add_argument("--quiet", action="store_true", help="no progress output")


def _demo(args: argparse.Namespace) -> int:
    """Run a long simulated session (scripted model, SQLite checkpoint, no network).

    The session runs through a real LangGraph graph. Run it again with the same
    --thread-id to resume that session.
    """
    from langgraph_ctx.budget import Budget
    from langgraph_ctx.cli.demo import ProgressBar, format_report, run_demo

    if args.turns < 1:
        print("langgraph-ctx demo: --turns must be at least 1", file=sys.stderr)
        return 2
    budget = Budget.for_window(args.window)  # a bad --window fails before anything runs
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
            from langgraph_ctx.cli.plot import plot_utilization

            plot_utilization(
                args.plot,
                {
                    "sent to the model": report.utilization,
                    "measured by pre-flight": report.measured,
                },
                budget=budget,
                marks=report.compression_calls,
                title=f"langgraph-ctx demo: {report.turns_total} turns, window {args.window:,}",
            )
            print(f"plot: {args.plot}")
        except ImportError as exc:
            print(f"no plot ({exc})", file=sys.stderr)
    return 0


# -- migrate ---------------------------------------------------------------


def _add_migrate(commands: _Commands) -> None:
    migrate = _subcommand(commands, _migrate)
    _database_url(migrate)
    migrate.add_argument(
        "--status", action="store_true", help="only show what is applied (exit 1 if not all)"
    )
    migrate.add_argument("--json", action="store_true", help="machine-readable output")


def _migrate(args: argparse.Namespace) -> int:
    """Create or upgrade the database tables (ours and LangGraph's).

    The package's pending SQL migrations, in order, each in its own
    transaction, then LangGraph's checkpoint setup; safe to run from many
    processes at once. Refuses if an applied migration's file has changed.
    """
    from langgraph_ctx.storage.migrations import migrate, migration_status

    status = migration_status(args.database_url) if args.status else migrate(args.database_url)
    if args.json:
        print(json.dumps(status.to_json(), indent=2))
    else:
        print(f"database: {status.database}")
        for m in status.migrations:
            now = " (applied now)" if m.version in status.applied_now else ""
            when = f"  {m.applied_at}" if m.applied_at else ""
            print(f"  {m.version:04d}_{m.name:<24} {m.state}{now}{when}")
        print(f"langgraph: {status.langgraph}")
    return 0 if status.up_to_date else 1


# -- inspect ---------------------------------------------------------------


def _add_inspect(commands: _Commands) -> None:
    inspect = _subcommand(commands, _inspect)
    inspect.add_argument("thread_id", help="the session's thread id")
    _database_url(inspect)
    inspect.add_argument("--json", action="store_true", help="machine-readable output")


def _inspect(args: argparse.Namespace) -> int:
    """Show what happened to one session's context.

    Utilization per LLM call, compressions with ratio and entity retention,
    current summaries, evicted tools, recall timeouts, archive size.
    """
    from langgraph_ctx.cli.inspect import format_inspection, inspect_session

    result = inspect_session(args.database_url, args.thread_id)
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        print(format_inspection(result))
    return 0 if result.found else 1


# -- export ----------------------------------------------------------------


def _add_export(commands: _Commands) -> None:
    export = _subcommand(commands, _export)
    _database_url(export, "--db")
    export.add_argument("--thread", help="only this thread (default: every thread)")
    export.add_argument(
        "--since", help="only decisions at or after this time: Unix seconds or ISO (UTC)"
    )
    export.add_argument(
        "--out", type=Path, help="write the JSON lines to this file (default: stdout)"
    )
    export.add_argument(
        "--format",
        choices=("decisions", "chat"),
        default="decisions",
        help="decisions: one record per decision; chat: the decisions that wrote text in "
        "place of messages, as system/user/assistant messages for a trainer "
        "(default: %(default)s)",
    )


def _export(args: argparse.Namespace) -> int:
    """Export the context decisions of a thread or a whole database as JSON lines.

    One record per decision (an edit, a compression, a fold, a manager call, a
    PACE view): what it saw, what it did, what followed (tokens saved, removed
    messages later glimpsed or recalled). Schema: docs/decisions.md
    (schema_version 1); datasets.load_dataset("json", data_files=...) reads it.
    """
    from langgraph_ctx.cli.export import export_chat, export_decisions, parse_since, write_jsonl

    since = parse_since(args.since)
    export = export_chat if args.format == "chat" else export_decisions
    records = export(args.database_url, thread_id=args.thread, since=since)
    if args.out is None:
        n = write_jsonl(records, sys.stdout)
    else:
        with args.out.open("w", encoding="utf-8") as out:
            n = write_jsonl(records, out)
    print(f"exported {n} decisions", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
