"""Drives an ARC session on SQLite: in a subprocess that may be SIGKILLed in the middle
of an update (``python -m tests.arc_worker``), or in-process to resume it.

The turns are AdaCoM's crash test's (a user message and a tool exchange each, large
results every third turn). ``--kill-in-update N`` kills the process inside the
manager's Nth update (running in the background, beside the actor's call);
``--kill-after N`` right after the Nth archive write (the folded interaction is
archived, the rewrite not yet checkpointed).
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, call_llm_node
from langgraph_ctx.storage.archive import SQLiteArchive
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.strategies import ReflectiveContextManager
from langgraph_ctx.strategies.arc.manager import MemoryUpdate, UpdateRequest
from langgraph_ctx.strategies.arc.offline import OfflineArcManager
from langgraph_ctx.testing import ScriptedChatModel
from tests.adacom_worker import KillingArchive, drive

__all__ = ["drive", "session"]


class KillingManager(OfflineArcManager):
    """The offline manager, killing its process in its ``kill_in``-th update."""

    def __init__(self, kill_in: int | None) -> None:
        super().__init__()
        self.kill_in, self.updates = kill_in, 0

    def update(self, request: UpdateRequest) -> MemoryUpdate:
        self.updates += 1
        if self.updates == self.kill_in:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().update(request)


@contextmanager
def session(
    dir: str, kill_after: int | None = None, kill_in_update: int | None = None
) -> Iterator[tuple[Any, SQLiteArchive]]:
    archive = KillingArchive(os.path.join(dir, "archive.sqlite"), kill_after)
    with checkpointer_from_url(f"sqlite:///{dir}/checkpoints.sqlite") as saver:
        arc = ReflectiveContextManager(
            manager=KillingManager(kill_in_update), archive=archive, stall_turns=4
        )
        builder = StateGraph(ContextState)
        agent = ScriptedChatModel(default="noted", report_usage=False)
        builder.add_node("call_llm", call_llm_node(agent))
        builder.add_edge(START, "call_llm")
        pipeline = Pipeline([PreflightCheck(), arc], budget=Budget.for_window(16_000))
        yield pipeline.attach(builder).compile(checkpointer=saver), archive


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--kill-after", type=int)
    parser.add_argument("--kill-in-update", type=int)
    args = parser.parse_args()
    with session(args.dir, args.kill_after, args.kill_in_update) as (graph, _):
        drive(graph)


if __name__ == "__main__":
    main()
