"""Storage per thread against turns, with checkpoint retention and without (issue 36).

The prebuilt agent (``create_context_agent`` with recall, on a SQLite file) runs one
thread; each user turn calls a tool that returns a page of about 2 KB, then replies.
At each milestone it records the SQLite file's size, what ``langgraph-ctx inspect``
says the thread keeps (checkpoint rows and their bytes) and the median wall time of
a turn since the last milestone. ``tiered`` keeps its history in ``add_messages``
(``ContextState``); ``pace`` in a delta channel (``DeltaContextState``).
A SQLite file never shrinks by itself (freed pages are reused), so with retention its
size stops growing rather than falling.

Run from the repo root: ``python benchmarks/checkpoint_retention.py
[--turns 50,100,200] [--window 32000] [--keep 10] [--strategies tiered,pace]``, or
``--runs tiered:all:2000,pace:10:2000`` for chosen (strategy, keep, last turn) runs
(keeping every checkpoint of a long session takes gigabytes and hours).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, header, table
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.inspect import inspect_session
from langgraph_ctx.testing import ScriptedChatModel

PAGE = " ".join(
    f"row {k}: pallets stacked and wrapped, aisle {k % 7}, bay {k % 13}." for k in range(40)
)


@tool
def manifest(page: int) -> str:
    """Read one page of the manifest."""
    return f"Manifest page {page} (crate {page} carries code K{page * 7919 % 10_000:04d}): {PAGE}"


def reply(messages: list[BaseMessage]) -> AIMessage:
    asked = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    i = int(str(asked.id)[1:])
    if not isinstance(messages[-1], ToolMessage):
        return AIMessage("", tool_calls=[{"name": "manifest", "args": {"page": i}, "id": f"c{i}"}])
    return AIMessage(f"Noted crate {i}.", id=f"a{i}")


def file_size(path: Path) -> int:
    """The database file and its write-ahead log (where recent pages live until a checkpoint)."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def run(strategy: str, keep: int | None, turns: list[int], window: int) -> list[list[str]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.sqlite"
        url = f"sqlite:///{path}"
        graph = create_context_agent(
            ScriptedChatModel(default=reply, report_usage=False),
            [manifest],
            checkpointer=url,
            keep_checkpoints=keep,
            always_include=["manifest"],
            strategy=strategy,
            recall=True,
            think=False,
            budget=Budget.for_window(window),
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        times: list[float] = []
        done = 0
        for goal in turns:
            for i in range(done, goal):
                start = time.perf_counter()
                graph.invoke({"messages": [HumanMessage(f"Read page {i}.", id=f"u{i}")]}, config)
                times.append(time.perf_counter() - start)
            done = goal
            seen = inspect_session(url, "t")
            rows.append(
                [
                    strategy,
                    "all" if keep is None else str(keep),
                    str(goal),
                    f"{file_size(path) / 1e6:.2f}",
                    str(seen.checkpoints),
                    f"{seen.checkpoint_bytes / 1e6:.2f}",
                    f"{seen.archive_rows:,}",
                    f"{statistics.median(times) * 1000:.0f}",
                ]
            )
            times = []
            print(" | ".join(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", default="50,100,200")
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--strategies", default="tiered,pace")
    parser.add_argument("--runs", help="strategy:keep:last turn,... instead of the product")
    args = parser.parse_args()
    turns = [int(t) for t in args.turns.split(",")]
    plan: list[tuple[str, int | None, int]] = [
        (strategy, keep, max(turns))
        for strategy in args.strategies.split(",")
        for keep in (None, args.keep)
    ]
    if args.runs:
        plan = []
        for item in args.runs.split(","):
            strategy, keep, last = item.split(":")
            plan.append((strategy, None if keep == "all" else int(keep), int(last)))
    rows: list[list[str]] = []
    for strategy, keep, last in plan:
        rows += run(strategy, keep, [t for t in turns if t <= last], args.window)
        report(args, rows)  # after each run: a run stopped later keeps what it measured


def report(args: argparse.Namespace, rows: list[list[str]]) -> None:
    command = (
        f"python benchmarks/checkpoint_retention.py --turns {args.turns} --window {args.window}"
    )
    command += (
        f" --runs {args.runs}"
        if args.runs
        else f" --keep {args.keep} --strategies {args.strategies}"
    )
    lines = header("Checkpoint retention: storage per thread against turns")
    lines += [
        f"Command: `{command}`. One thread of the prebuilt agent with recall at a "
        f"{args.window:,}-token window, each turn a tool page of about 2 KB and a reply. "
        "`keep` all is LangGraph's behaviour (every checkpoint); a number is the retention "
        "policy. File: the SQLite file with its write-ahead log (never shrinks; freed "
        "pages are reused). Kept: "
        "checkpoint rows and their bytes with their writes, as `langgraph-ctx inspect` "
        "reports them. Archived: messages in the archive (every original a compression "
        "replaced, by design kept whatever the retention; with the event table, what "
        "makes the file grow once the checkpoints stop). ms/turn: median wall time of "
        "the turns since the row before.",
        "",
        *table(
            [
                "strategy",
                "keep",
                "turns",
                "file MB",
                "checkpoints",
                "kept MB",
                "archived",
                "ms/turn",
            ],
            rows,
            left=2,
        ),
    ]
    emit("checkpoint_retention", lines)


if __name__ == "__main__":
    main()
