"""Storage per thread against turns, with checkpoint retention and without (issue 36).

The prebuilt agent (``create_context_agent`` with recall, on a SQLite file) runs
``--threads`` threads on one file, turn by turn in turn; each user turn calls a tool
that returns a page of about 2 KB, then replies. At each milestone it records the
SQLite file's size, what ``langgraph-ctx inspect`` says the first thread keeps
(checkpoint rows and their bytes), the archive's rows and the median wall time of a
turn since the last milestone. ``tiered``, ``adacom``, ``arc``, ``bacm`` and
``none`` keep their history in ``add_messages`` (``ContextState``); ``pace`` in a
delta channel (``DeltaContextState``). A SQLite file never shrinks by itself (freed
pages are reused), so with retention its size stops growing rather than falling.

After each milestone a fresh process opens the file the way a restarted server would
(the same agent, a new saver) and checks every thread (:func:`verify`); it raises,
and the run stops, if one fails. Every message a thread was sent or made (the user
message, the tool call, the page, the reply) is in its state or its archive with its
text whole; no id is twice in a state; nothing carries another thread's marker; no
step is left pending; and, after the last milestone, each thread plays one more turn
from what was kept and answers it.

Run from the repo root: ``python benchmarks/checkpoint_retention.py
[--turns 50,100,200] [--window 32000] [--keep 10] [--strategies tiered,pace]``, or
``--runs tiered:all:2000,pace:10:2000`` for chosen (strategy, keep, last turn) runs
(keep: a count, ``all``, or ``default``: what the agent keeps when not told, 10 on SQLite)
(keeping every checkpoint of a long session takes gigabytes and hours). ``--out``
names the results file (``results/<out>.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import emit, header, table
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.inspect import inspect_session
from langgraph_ctx.storage.retention import DEFAULT_KEEP
from langgraph_ctx.testing import ScriptedChatModel

PAGE = " ".join(
    f"row {k}: pallets stacked and wrapped, aisle {k % 7}, bay {k % 13}." for k in range(40)
)
MARK = re.compile(r"\[(t\d+)\]")
"""The thread marker a user message and its page carry (``[t0]``), so a stray shows."""
ASKED = re.compile(r"u\d+")
Keep = int | str | None
"""A run's ``keep_checkpoints``: a count, ``"default"`` (10 on SQLite) or ``None`` (all)."""


@tool
def manifest(page: int, reader: str = "") -> str:
    """Read one page of the manifest."""
    mark = f"[{reader}] " if reader else ""
    code = f"K{page * 7919 % 10_000:04d}"
    return f"{mark}Manifest page {page} (crate {page} carries code {code}): {PAGE}"


def ask(thread: str, i: int) -> HumanMessage:
    return HumanMessage(f"[{thread}] Read page {i}.", id=f"u{i}")


def reply(messages: list[BaseMessage]) -> AIMessage:
    # The latest user turn: ARC puts its memory in a user message of its own.
    asked = next(m for m in reversed(messages) if ASKED.fullmatch(str(m.id)))
    i = int(str(asked.id)[1:])
    if not isinstance(messages[-1], ToolMessage):
        found = MARK.search(asked.text)
        args: dict[str, Any] = {"page": i} | ({"reader": found.group(1)} if found else {})
        call = {"name": "manifest", "args": args, "id": f"c{i}"}
        return AIMessage("", tool_calls=[call], id=f"q{i}")
    return AIMessage(f"Noted crate {i}.", id=f"a{i}")


def file_size(path: Path) -> int:
    """The database file and its write-ahead log (where recent pages live until a checkpoint)."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def agent(url: str, strategy: str, keep: Keep, window: int) -> Any:
    return create_context_agent(
        # keep_calls=0: the model's call log would hold every prompt of the session.
        ScriptedChatModel(default=reply, report_usage=False, keep_calls=0),
        [manifest],
        checkpointer=url,
        keep_checkpoints=keep,
        always_include=["manifest"],
        strategy=strategy,
        recall=True,
        think=False,
        budget=Budget.for_window(window),
    )


def config_of(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def planned(thread: str, turns: int) -> list[tuple[str, str, str]]:
    """(type, key, text) of every message turns ``0..turns-1`` made; a tool result's
    key is its call's id (the tool node gives results fresh ids)."""
    out = []
    for i in range(turns):
        page = manifest.invoke({"page": i, "reader": thread})
        out += [
            ("human", f"u{i}", ask(thread, i).text),
            ("ai", f"q{i}", ""),
            ("tool", f"result of c{i}", page),
            ("ai", f"a{i}", f"Noted crate {i}."),
        ]
    return out


def key(message: BaseMessage) -> str:
    call = getattr(message, "tool_call_id", None)
    return f"result of {call}" if message.type == "tool" else str(message.id)


def verify(url: str, strategy: str, keep: Keep, window: int, threads: list[str],
           turns: int, play: bool) -> dict[str, int]:  # fmt: skip
    """Every thread of ``threads`` resumes from the file with all it made (module doc);
    with ``play``, each plays turn ``turns`` too. Raises AssertionError naming what is not."""
    from langgraph_ctx.storage.checkpointers import archive_from_url

    graph = agent(url, strategy, keep, window)
    seen = {"archived": 0, "in_state": 0}
    with archive_from_url(url) as archive:
        for thread in threads:
            state = graph.get_state(config_of(thread))
            assert not state.tasks, f"{thread}: a step left pending: {state.tasks}"
            held: list[BaseMessage] = list(state.values.get("messages") or [])
            kept = archive.list(thread)
            ids = [m.id for m in held]
            assert len(ids) == len(set(ids)), f"{thread}: a message id twice in the state"
            seen["archived"] += len(kept)
            seen["in_state"] += len(held)
            # The archive holds the original where the state holds a shortened copy.
            union = {key(m): m for m in held} | {key(m): m for m in kept}
            for kind, k, text in planned(thread, turns):
                found = union.get(k)
                assert found is not None, f"{thread}: {k} in neither state nor archive"
                assert found.type == kind and found.text.startswith(text), (
                    f"{thread}: {k} changed: {found.text[:120]!r}"
                )
                if k.startswith("q"):
                    calls = [c["id"] for c in getattr(found, "tool_calls", [])]
                    assert calls == [f"c{k[1:]}"], f"{thread}: {k} lost its call: {calls}"
            texts = [m.text for m in held] + [m.text for m in kept]
            strays = {t for text in texts for t in MARK.findall(text) if t != thread}
            assert not strays, f"{thread}: holds text of {sorted(strays)}"
            if play:
                graph.invoke({"messages": [ask(thread, turns)]}, config_of(thread))
                last = graph.get_state(config_of(thread)).values["messages"][-1]
                assert last.text == f"Noted crate {turns}.", f"{thread}: answered {last.text!r}"
    return seen


def verify_elsewhere(url: str, strategy: str, keep: Keep, window: int,
                     threads: list[str], turns: int, play: bool) -> dict[str, int]:  # fmt: skip
    """:func:`verify` in a fresh process: only what the file holds."""
    spec = json.dumps([url, strategy, keep, window, threads, turns, play])
    done = subprocess.run(
        [sys.executable, __file__, "--verify", spec], capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"resume check failed ({strategy}, keep {keep}, {turns} turns):\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(strategy: str, keep: Keep, turns: list[int], window: int, threads: int,
        rows: list[list[str]], done_row: Callable[[], None]) -> None:  # fmt: skip
    """Appends a row to ``rows`` at each milestone, then calls ``done_row``."""
    names = [f"t{k}" for k in range(threads)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.sqlite"
        url = f"sqlite:///{path}"
        graph = agent(url, strategy, keep, window)
        times: list[float] = []
        done, last_size = 0, 0
        for goal in turns:
            for i in range(done, goal):
                for thread in names:
                    start = time.perf_counter()
                    graph.invoke({"messages": [ask(thread, i)]}, config_of(thread))
                    times.append(time.perf_counter() - start)
            seen = inspect_session(url, names[0])
            if keep is not None:  # the bound retention.py states: at most twice keep
                bound = 2 * (DEFAULT_KEEP if keep == "default" else int(keep))
                assert seen.checkpoints <= bound, (strategy, goal, seen.checkpoints)
            checked = verify_elsewhere(
                url, strategy, keep, window, names, goal, play=goal == turns[-1]
            )
            size = file_size(path)
            growth = (size - last_size) / (goal - done) * 1000
            done, last_size = goal, size
            rows.append(
                [
                    strategy,
                    "all" if keep is None else str(keep),
                    f"{goal:,}",
                    f"{size / 1e6:.2f}",
                    f"{growth / 1e6:.2f}",
                    str(seen.checkpoints),
                    f"{seen.checkpoint_bytes / 1e6:.2f}",
                    f"{seen.archive_rows:,}",
                    f"{checked['in_state'] // threads:,}",
                    f"{statistics.median(times) * 1000:.0f}",
                    "yes" + (", +1 turn" if goal == turns[-1] else ""),
                ]
            )
            times = []
            print(" | ".join(rows[-1]), flush=True)
            done_row()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", default="50,100,200")
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--strategies", default="tiered,pace")
    parser.add_argument("--runs", help="strategy:keep:last turn,... instead of the product")
    parser.add_argument("--threads", type=int, default=1, help="threads on the one file")
    parser.add_argument("--out", default="checkpoint_retention", help="results/<out>.md")
    parser.add_argument("--verify", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.verify:
        url, strategy, keep, window, threads, turns, play = json.loads(args.verify)
        print(json.dumps(verify(url, strategy, keep, window, threads, turns, play)), flush=True)
        # Now, not at the interpreter's exit: PACE's scorer may still be loading its model
        # in a daemon thread, and torch aborts the process when one is torn down mid-load.
        os._exit(0)
    turns = [int(t) for t in args.turns.split(",")]
    plan: list[tuple[str, Keep, int]] = [
        (strategy, keep, max(turns))
        for strategy in args.strategies.split(",")
        for keep in (None, args.keep)
    ]
    if args.runs:
        plan = []
        for item in args.runs.split(","):
            strategy, keep, last = item.split(":")
            count = None if keep == "all" else keep if keep == "default" else int(keep)
            plan.append((strategy, count, int(last)))
    rows: list[list[str]] = []
    for strategy, keep, last in plan:
        # The section is written after each row: a run stopped later keeps what it measured.
        goals = [t for t in turns if t <= last]
        run(strategy, keep, goals, args.window, args.threads, rows, lambda: report(args, rows))


def report(args: argparse.Namespace, rows: list[list[str]]) -> None:
    command = (
        f"python benchmarks/checkpoint_retention.py --turns {args.turns} --window {args.window}"
    )
    command += (
        f" --runs {args.runs}"
        if args.runs
        else f" --keep {args.keep} --strategies {args.strategies}"
    )
    if args.threads != 1:
        command += f" --threads {args.threads}"
    if args.out != "checkpoint_retention":
        command += f" --out {args.out}"
    lines = header("Checkpoint retention: storage per thread against turns")
    lines += [
        f"Command: `{command}`. {args.threads} thread(s) of the prebuilt agent with recall "
        f"on one SQLite file at a {args.window:,}-token window, each turn a tool page of "
        "about 2 KB and a reply. `keep` all is LangGraph's behaviour (every checkpoint); a "
        "number is the retention policy (`default`: what the agent keeps when not told, 10 on "
        "SQLite). File: the SQLite file with its write-ahead log (never shrinks; freed pages "
        "are reused), and its growth per 1,000 turns (of each thread) since the row before. "
        "Kept: the first thread's checkpoint rows and their bytes with their writes, as "
        "`langgraph-ctx inspect` reports them. Archived: the first thread's messages in the "
        "archive (every original a compression replaced, by design kept whatever the retention;"
        " with the event table, what makes the file grow once the checkpoints stop). In state: "
        "messages in a thread's latest state. ms/turn: median wall time of the turns since the "
        "row before. Resumed: a fresh process opened the file and found every thread's every "
        "message (user, tool call, page, reply) whole in its state or archive, no id twice, no "
        "other thread's marker, no step pending; '+1 turn': each thread then played and "
        "answered one more turn from what was kept. The script stops if a check fails.",
        "",
        *table(
            [
                "strategy",
                "keep",
                "turns",
                "file MB",
                "file MB / 1k turns",
                "checkpoints",
                "kept MB",
                "archived",
                "in state",
                "ms/turn",
                "resumed",
            ],
            rows,
            left=2,
        ),
    ]
    emit(args.out, lines)


if __name__ == "__main__":
    main()
