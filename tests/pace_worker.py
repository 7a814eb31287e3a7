"""Drives a PACE agent (``create_context_agent`` with PACE, lexical scorer, so on
``DeltaContextState``) against a database URL: in a subprocess SIGKILLed in the
middle of a turn (``python -m tests.pace_worker --url URL --kill-at N``), or
in-process to resume it.

The scripted agent answers every turn in text, deterministically in what it was
asked, so a resumed session and one that never died must hold the same history,
message for message.
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_ctx import Budget, PredictiveExtraction
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.strategies import LexicalScorer
from langgraph_ctx.testing import ScriptedChatModel
from tests.adacom_worker import drive_user_turns

TURNS = 60
"""Enough for a snapshot of ``messages`` (every 100th update; 2 a turn) before the kill."""
THREAD = "pace-crash"
TOPICS = ("flight", "hotel", "museum", "weather", "train", "dinner", "invoice")


def turn(i: int) -> dict[str, Any]:
    text = f"Turn {i}: what about the {TOPICS[i % len(TOPICS)]} on day {i}?"
    return {"messages": [HumanMessage(text, id=f"t{i}")]}


def replier(kill_at: int | None) -> Any:
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        i = sum(1 for m in messages if m.type == "human" and m.id and m.id.startswith("t")) - 1
        if i == kill_at:  # the turn's input is committed, its reply never will be
            os.kill(os.getpid(), signal.SIGKILL)
        topic = TOPICS[i % len(TOPICS)]
        return AIMessage(
            f"On day {i} the {topic} is booked: code {topic[:3].upper()}-{i}.", id=f"a{i}"
        )

    return reply


@contextmanager
def session(url: str, kill_at: int | None = None) -> Iterator[Any]:
    with checkpointer_from_url(url) as saver:
        yield create_context_agent(
            ScriptedChatModel(default=replier(kill_at), report_usage=False),
            checkpointer=saver,
            think=False,
            strategy=PredictiveExtraction(scorer=LexicalScorer()),  # "pace", lexical
            budget=Budget.for_window(8_000),
        )


def drive(graph: Any, upto: int = TURNS) -> None:
    """Resume the thread from its last checkpoint and run it to ``upto`` turns."""
    drive_user_turns(graph, THREAD, turn, upto)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--kill-at", type=int)
    args = parser.parse_args()
    with session(args.url, args.kill_at) as graph:
        drive(graph)


if __name__ == "__main__":
    main()
