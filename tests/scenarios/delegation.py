"""A parent that delegates to a child with two tool steps; the second can block.

Run as a script (``python -m tests.scenarios.delegation DB MARKERS block``) it
blocks inside the child's second tool, so a test can SIGKILL it there; the test
then resumes in-process from the same SQLite file.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_ctx.agent import SubAgents, SubAgentSpec, create_context_agent
from langgraph_ctx.testing import ScriptedChatModel

CONFIG: Any = {"configurable": {"thread_id": "parent"}, "recursion_limit": 50}


def build(db: Path, markers: Path, *, block: bool) -> Any:
    @tool
    def fetch_ledger(account: str) -> str:
        """Fetch the ledger of an account."""
        with (markers / "fetch_ledger.log").open("a") as f:
            f.write("ran\n")
        return f'{{"account": "{account}", "balance": 1250.75}}'

    @tool
    def reconcile(account: str) -> str:
        """Reconcile an account's ledger against the bank statement."""
        with (markers / "reconcile.log").open("a") as f:
            f.write("ran\n")
        if block:
            time.sleep(120)  # the test kills us here
        return f'{{"account": "{account}", "reconciled": true}}'

    def child_reply(messages: Sequence[BaseMessage]) -> AIMessage:
        done = [m.name for m in messages if m.type == "tool"]
        if "fetch_ledger" not in done:
            return AIMessage(
                "", tool_calls=[{"name": "fetch_ledger", "args": {"account": "ACC-1"}, "id": "f1"}]
            )
        if "reconcile" not in done:
            return AIMessage(
                "", tool_calls=[{"name": "reconcile", "args": {"account": "ACC-1"}, "id": "r1"}]
            )
        return AIMessage("ACC-1 reconciled; balance 1250.75.")

    def parent_reply(messages: Sequence[BaseMessage]) -> AIMessage:
        if messages[-1].type == "tool":
            return AIMessage("Done: " + messages[-1].text[:80])
        return AIMessage(
            "",
            tool_calls=[
                {
                    "name": "delegate",
                    "id": "d1",
                    "args": {
                        "agent": "bookkeeper",
                        "task": "Reconcile ACC-1",
                        "inputs": {"account": "ACC-1"},
                    },
                }
            ],
        )

    spec = SubAgentSpec(
        name="bookkeeper",
        kind="tool",
        description="reconciles accounts",
        system_prompt="You reconcile accounts.",
        tools=[fetch_ledger, reconcile],
        model=ScriptedChatModel(default=child_reply),
    )
    subs = SubAgents([spec])
    saver = SqliteSaver(sqlite3.connect(str(db), check_same_thread=False))
    return create_context_agent(
        ScriptedChatModel(default=parent_reply),
        [subs.tool()],
        always_include=["delegate"],
        think=False,
        checkpointer=saver,
    )


if __name__ == "__main__":
    db, markers = Path(sys.argv[1]), Path(sys.argv[2])
    graph = build(db, markers, block=sys.argv[3] == "block")
    # "sync": each step is on disk before the next starts. Under LangGraph's default
    # ("async") the parent's delegating step can still be unwritten when the child's
    # tools run, so a kill there loses it (seen under load); docs/persistence.md says so.
    turn = {"messages": [HumanMessage("Please reconcile ACC-1.")]}
    graph.invoke(turn, CONFIG, durability="sync")
