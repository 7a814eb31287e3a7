"""Drives an AdaCoM session on SQLite: in a subprocess that may be SIGKILLed in the
middle of an edit (``python -m tests.adacom_worker``), or in-process to resume it.

Every turn brings a user message and a tool exchange; the offline manager runs
every round, extracting large results and dropping stale ones, so nearly every
turn edits. ``--kill-after N`` kills the process right after the Nth archive
write: the originals are archived, the rewrite is not yet checkpointed.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, call_llm_node
from langgraph_ctx.storage.archive import SQLiteArchive
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.strategies import AdaptiveContextManager
from langgraph_ctx.strategies.adacom.offline import OfflinePolicy
from langgraph_ctx.testing import ScriptedChatModel

TURNS = 8
THREAD = "adacom-crash"
TASK = "Audit order ORD-7731: the supplier must ship before 2026-03-01 and cost under $500."


class KillingArchive(SQLiteArchive):
    """An archive that kills its process after its ``kill_after``-th write."""

    def __init__(self, path: str, kill_after: int | None) -> None:
        super().__init__(path)
        self.kill_after, self.writes = kill_after, 0

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        super().put(thread_id, messages, reason=reason, namespace=namespace)
        self.writes += 1
        if self.writes == self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)


def turn(i: int) -> dict[str, Any]:
    big = i % 3 == 0
    result = " ".join(
        f"Row R-{i}-{k}: part P-{k:03d} costs ${k + i}." for k in range(80 if big else 6)
    )
    call = {"name": "lookup", "args": {"page": i}, "id": f"call{i}"}
    sent: list[BaseMessage] = [HumanMessage(f"Step {i}: check page {i}.", id=f"t{i}-user")]
    if i == 0:
        sent.insert(0, HumanMessage(TASK, id="task"))
    sent += [
        AIMessage("", id=f"t{i}-call", tool_calls=[call]),
        ToolMessage(result, tool_call_id=f"call{i}", id=f"t{i}-result"),
    ]
    return {"messages": sent, "session": {"turns": i + 1}}


@contextmanager
def session(dir: str, kill_after: int | None = None) -> Iterator[tuple[Any, SQLiteArchive]]:
    archive = KillingArchive(os.path.join(dir, "archive.sqlite"), kill_after)
    with checkpointer_from_url(f"sqlite:///{dir}/checkpoints.sqlite") as saver:
        adacom = AdaptiveContextManager(
            manager=OfflinePolicy(stale_rounds=2),
            archive=archive,
            every=1,
            extract_threshold=300,
            extract_tokens=80,
        )
        builder = StateGraph(ContextState)
        agent = ScriptedChatModel(default="noted", report_usage=False)
        builder.add_node("call_llm", call_llm_node(agent))
        builder.add_edge(START, "call_llm")
        pipeline = Pipeline([PreflightCheck(), adacom], budget=Budget.for_window(16_000))
        yield pipeline.attach(builder).compile(checkpointer=saver), archive


def drive(graph: Any, upto: int = TURNS) -> None:
    """Resume the thread from its last checkpoint and run it to ``upto`` turns."""
    config = {"configurable": {"thread_id": THREAD}}
    if graph.get_state(config).tasks:  # died mid-step: finish that step first
        graph.invoke(None, config)
    done = int((graph.get_state(config).values.get("session") or {}).get("turns", 0))
    for i in range(done, upto):
        graph.invoke(turn(i), config)


def drive_user_turns(graph: Any, thread: str, turn: Any, upto: int) -> None:
    """Resume ``thread`` from its last checkpoint and run it to ``upto`` user turns
    (``turn(i)`` is turn i's input). Each step is checkpointed before the next starts,
    so a kill lands at a known step; a turn a kill cut short is finished first."""
    config = {"configurable": {"thread_id": thread}}
    if graph.get_state(config).tasks:
        graph.invoke(None, config, durability="sync")
    messages = graph.get_state(config).values.get("messages") or []
    done = sum(1 for m in messages if m.type == "human")
    for i in range(done, upto):
        graph.invoke(turn(i), config, durability="sync")


def run_killed(module: str, dir: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m module --dir dir *args`` from the repo root, to be SIGKILLed."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-m", module, "--dir", dir, *args]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)


def worker_main(session: Any, drive: Any) -> None:
    """A worker's entry point: ``--dir`` and ``--kill-after``, then drive the session."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--kill-after", type=int)
    args = parser.parse_args()
    with session(args.dir, args.kill_after) as (graph, _):
        drive(graph)


def main() -> None:
    worker_main(session, drive)


if __name__ == "__main__":
    main()
