"""Drives ``create_context_agent(..., checkpointer=URL, keep_checkpoints=N)`` in a process
of its own (``python -m tests.retention_worker``), for checkpoint retention across real
process deaths.

Each user turn asks for a tool call (a page of filler comes back, so the strategy
compresses) and then a reply. ``--kill-at K`` SIGKILLs the process from inside the
model call that follows turn K's tool result: the turn's checkpoints up to the tool
result are committed, its last model call is not. ``--resume`` first finishes what a
killed run left pending (``invoke(None, config)``). On exit it prints, as JSON, the
ids of the messages in the thread's state.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent

WINDOW = 8_000
FILLER = " ".join(f"row {k}: pallets stacked and wrapped, aisle {k % 7}." for k in range(30))


@tool
def manifest(page: int) -> str:
    """Read one page of the manifest."""
    return f"Manifest page {page}: {FILLER}"


def turn(i: int) -> HumanMessage:
    return HumanMessage(f"Read manifest page {i} and note crate {i}.", id=f"u{i}")


def reply_for(kill_at: int | None) -> Any:
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        asked = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        i = int(str(asked.id)[1:]) if str(asked.id).startswith("u") else -1
        if not isinstance(messages[-1], ToolMessage):
            call = {"name": "manifest", "args": {"page": i}, "id": f"c{i}"}  # its result: t{i}
            return AIMessage("", tool_calls=[call], id=f"call-{i}")
        if i == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return AIMessage(f"Noted crate {i}.", id=f"a{i}")

    return reply


def agent(url: str, strategy: str, keep: str, kill_at: int | None) -> Any:
    from langgraph_ctx.testing import ScriptedChatModel

    model = ScriptedChatModel(default=reply_for(kill_at), report_usage=False)
    return create_context_agent(
        model,
        [manifest],
        checkpointer=url,
        keep_checkpoints=None if keep == "all" else int(keep),
        always_include=["manifest"],
        strategy=strategy,
        recall=True,
        think=False,
        budget=Budget.for_window(WINDOW),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--strategy", default="tiered")
    parser.add_argument("--keep", default="5")
    parser.add_argument("--thread", default="t")
    parser.add_argument("--turns", default="0:0", help="A:B, the user turns to run")
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    graph = agent(args.url, args.strategy, args.keep, args.kill_at)
    config = {"configurable": {"thread_id": args.thread}}
    if args.resume:
        graph.invoke(None, config)
    start, stop = (int(x) for x in args.turns.split(":"))
    for i in range(start, stop):
        graph.invoke({"messages": [turn(i)]}, config)
    values = graph.get_state(config).values
    print(json.dumps({"ids": [str(m.id) for m in values.get("messages", [])]}))


if __name__ == "__main__":
    main()
