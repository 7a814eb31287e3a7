"""Drives a BACM agent (``create_context_agent(strategy="bacm")``) on SQLite: in a
subprocess that may be SIGKILLed between a fold and the observation it makes room for
(``python -m tests.bacm_worker``), or in-process to resume it.

Every turn the scripted agent looks a page up and, in the same message, folds every
step it can see but the last; the fold is applied before the lookup's result is shown
to it. ``--kill-after N`` kills the process right after the Nth archive write: the
fold's originals are archived, the step that shows the observation is not checkpointed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.storage.archive import SQLiteArchive
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.strategies.bacm.policy import FOLD_TOOL
from langgraph_ctx.testing import ScriptedChatModel
from tests.adacom_worker import KillingArchive, drive_user_turns, worker_main

TURNS = 6
THREAD = "bacm-crash"
STEP = re.compile(r"\bc[0-9a-f]{5}x*\b")
TAG = re.compile(r"\[step (c[0-9a-f]{5}x*)\]")
PAGE = re.compile(r"check page (\d+)")


@tool
def lookup(page: int) -> str:
    """Read one page of the order book."""
    return " ".join(f"Row R-{page}-{k}: part P-{k:03d} costs ${k + page}." for k in range(30))


def reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """Deterministic in what it was sent, so a resumed run answers as the clean one."""
    page = int(PAGE.findall("\n".join(m.text for m in messages if m.type == "human"))[-1])
    if isinstance(messages[-1], ToolMessage):
        return AIMessage(f"Noted page {page}.", id=f"ai-{page}-answer")
    calls: list[Any] = [{"name": "lookup", "args": {"page": page}, "id": f"look{page}"}]
    seen = TAG.findall("\n".join(m.text for m in messages))
    if len(seen) > 1:
        merged = f"Pages before {page} were read; every part costs under ${30 + page}."
        args = {"commit_ids": seen[:-1], "merged": merged}
        calls.append({"name": FOLD_TOOL, "args": args, "id": f"fold{page}"})
    return AIMessage("", id=f"ai-{page}-call", tool_calls=calls)


def turn(i: int) -> dict[str, Any]:
    text = f"Audit the order book: check page {i}."
    return {"messages": [HumanMessage(text, id=f"t{i}-user")]}


@contextmanager
def session(dir: str, kill_after: int | None = None) -> Iterator[tuple[Any, SQLiteArchive]]:
    archive = KillingArchive(os.path.join(dir, "archive.sqlite"), kill_after)
    with checkpointer_from_url(f"sqlite:///{dir}/checkpoints.sqlite") as saver:
        agent = create_context_agent(
            ScriptedChatModel(default=reply, report_usage=False),
            [lookup],
            checkpointer=saver,
            think=False,
            strategy="bacm",
            archive=archive,
            always_include=["lookup"],
            budget=Budget.for_window(16_000),
        )
        yield agent, archive


def drive(graph: Any, upto: int = TURNS) -> None:
    """Resume the thread from its last checkpoint and run it to ``upto`` turns."""
    drive_user_turns(graph, THREAD, turn, upto)


def main() -> None:
    worker_main(session, drive)


if __name__ == "__main__":
    main()
