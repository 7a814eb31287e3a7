"""Memory over one long session: what a process holds as a thread's turns go by.

The agent users build (``create_context_agent``) on a SQLite checkpointer file,
one ``invoke`` per turn of the demo's seeded workload (tool calls, 1,200-6,000
character results), the scripted model answering. Resident size (RSS, after
``gc.collect()``) at a few turn counts, and the growth per turn between the
first and the last: what the package, LangGraph and the checkpointer keep. The
history itself grows (every turn adds messages the state holds), so some growth
is expected; the question is whether anything grows faster than the history.

Rows: the default agent with recall (``recall=True``: compression, the archive in
memory, recall each call); PACE (``strategy="pace"``: ``DeltaContextState``,
``DeltaReadCache``, the default scorer); and the default agent again with the
scripted model keeping its call log (``keep_calls=None``, the stand-in's test
default), which is how the growth was found: each record holds a whole prompt.

Each row runs in its own process, one after the other. Run from the repo root::

    python benchmarks/session_memory.py [--turns 2000]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from typing import Any

from _common import emit, header, rss_bytes, table

ROWS = {
    "default": ("`create_context_agent(recall=True)`", {"recall": True}, 0),
    "pace": ('`create_context_agent(strategy="pace")`', {"strategy": "pace"}, 0),
    "default-log": (
        "`create_context_agent(recall=True)`, the model keeping every call",
        {"recall": True},
        None,
    ),
}


def child(row: str, turns: int, marks: list[int]) -> dict[str, Any]:
    """One session in this process: RSS at each mark, wall seconds."""
    from langchain_core.messages import HumanMessage

    from langgraph_ctx.agent import create_context_agent
    from langgraph_ctx.cli.demo import workload_tools
    from langgraph_ctx.testing import ScriptedChatModel
    from langgraph_ctx.testing.workloads import generate_session

    _, options, keep = ROWS[row]
    workload = generate_session(turns, seed=0, result_chars=(1_200, 6_000))
    model = ScriptedChatModel(default=workload.responder(), keep_calls=keep)
    with tempfile.TemporaryDirectory() as tmp:
        agent = create_context_agent(
            model,
            workload_tools(workload),
            checkpointer=f"sqlite:///{tmp}/session.db",
            think=False,
            **options,
        )
        config = {"configurable": {"thread_id": "long"}}
        at: dict[int, float] = {}
        start = time.perf_counter()
        for turn in workload.turns:
            user = HumanMessage(turn.user, id=f"t{turn.index:05d}-user")
            agent.invoke({"messages": [user]}, config)
            done = turn.index + 1
            if done in marks:
                gc.collect()
                at[done] = rss_bytes() / 1e6
                print(f"  {row}: {done} turns, {at[done]:.0f} MB", file=sys.stderr, flush=True)
        messages = len(agent.get_state(config).values["messages"])
        return {"rss": at, "seconds": time.perf_counter() - start, "messages": messages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2_000)
    parser.add_argument("--log-turns", type=int, default=1_000, help="the call-log row's")
    parser.add_argument("--child", nargs=2, metavar=("ROW", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        turns = int(args.child[1])
        marks = sorted({m for m in (100, 500, 1_000, 2_000, 5_000, turns) if m <= turns})
        print(json.dumps(child(args.child[0], turns, marks)))
        return
    marks_all = sorted({m for m in (100, 500, 1_000, 2_000, 5_000, args.turns) if m <= args.turns})
    results = {}
    for row in ROWS:
        turns = args.log_turns if row == "default-log" else args.turns
        out = subprocess.run(
            [sys.executable, __file__, "--child", row, str(turns)],
            check=True,
            capture_output=True,
            text=True,
        )
        sys.stderr.write(out.stderr)
        results[row] = json.loads(out.stdout.strip().splitlines()[-1])
    head = ["agent", *[f"RSS MB at {m:,} turns" for m in marks_all]]
    head += ["MB per turn (first mark to last)", "messages at the end", "run min"]
    rows = []
    for row, (label, _, _) in ROWS.items():
        got = results[row]
        rss = {int(k): v for k, v in got["rss"].items()}
        first, last = min(rss), max(rss)
        slope = (rss[last] - rss[first]) / max(1, last - first)
        rows.append(
            [
                label,
                *[f"{rss[m]:,.0f}" if m in rss else "not run" for m in marks_all],
                f"{slope:.3f}",
                f"{got['messages']:,}",
                f"{got['seconds'] / 60:.1f}",
            ]
        )
    command = f"python benchmarks/session_memory.py --turns {args.turns}"
    if args.log_turns != 1_000:
        command += f" --log-turns {args.log_turns}"
    lines = header(f"Memory over one long session ({args.turns:,} turns)")
    lines += [
        "One thread, one `invoke` per turn of the demo's seeded workload (tool calls, "
        "results of 1,200-6,000 characters), SQLite checkpointer file, the scripted model "
        "(`keep_calls=0` unless said), `think=False`; resident size after `gc.collect()`, "
        "each row in a process of its own. The history the state holds grows with the "
        "turns, so some growth per turn is the history's own.",
        "",
        *table(head, rows),
        "",
        f"Command: `{command}`.",
    ]
    emit("session_memory", lines)


if __name__ == "__main__":
    main()
