"""Drives demo sessions against a database: in a subprocess (``python -m tests.pg_worker``)
for the crash and concurrency tests, or in-process to resume what a subprocess left.

The graph is the demo's (``build_graph``) with the archive and the event log in
PostgreSQL. Each session's workload is seeded by its thread id, so every
thread has content of its own and anything mixed between threads shows.
"""

from __future__ import annotations

import argparse
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import HumanMessage

from langgraph_ctx.budget import Budget
from langgraph_ctx.cli.demo import build_graph
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.storage.locks import ThreadLock
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.testing.workloads import Workload, generate_session

WINDOW = 8_000
TURNS = 60


def workload_for(thread_id: str, turns: int = TURNS) -> Workload:
    return generate_session(turns, seed=zlib.crc32(thread_id.encode()), result_chars=(600, 1_800))


@contextmanager
def session_graph(url: str, workload: Workload, *, window: int = WINDOW) -> Iterator[Any]:
    with checkpointer_from_url(url, setup=False, max_connections=2) as saver:
        yield graph_for(saver, workload, window=window)


def graph_for(saver: Any, workload: Workload, *, window: int = WINDOW, protect: int = 3) -> Any:
    """The demo graph on ``saver``, with archive and events in the saver's own pool."""
    compression = TieredCompression(
        archive=PostgresArchive(saver.conn), min_protected_turns=protect
    )
    graph, _ = build_graph(
        workload,
        budget=Budget.for_window(window),
        checkpointer=saver,
        middleware=[compression],
        events=PostgresEventSink(saver.conn),
    )
    return graph


def config_for(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 100}


def user_turn(workload: Workload, index: int) -> dict[str, Any]:
    turn = workload.turns[index]
    return {
        "messages": [HumanMessage(turn.user, id=f"t{index:04d}-user")],
        "session": {"demo_turns": index + 1},
    }


def drive(graph: Any, workload: Workload, thread_id: str, upto: int) -> int:
    """Resume ``thread_id`` from its last checkpoint and run it to ``upto`` turns."""
    config = config_for(thread_id)
    if graph.get_state(config).tasks:  # died mid-turn: finish that turn first
        graph.invoke(None, config)
    done = int((graph.get_state(config).values.get("session") or {}).get("demo_turns", 0))
    for index in range(done, upto):
        graph.invoke(user_turn(workload, index), config)
    return upto


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--threads", nargs="+", required=True)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--protect", type=int, default=3, help="min_protected_turns")
    parser.add_argument("--same-thread-turns", type=int, default=0)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    if args.same_thread_turns:
        _same_thread(args.url, args.threads[0], args.tag, args.same_thread_turns)
    else:
        with checkpointer_from_url(args.url, setup=False, max_connections=2) as saver:
            for thread_id in args.threads:
                workload = workload_for(thread_id, args.turns)
                graph = graph_for(saver, workload, window=args.window, protect=args.protect)
                drive(graph, workload, thread_id, args.turns)
                print(f"{thread_id} done", flush=True)
    print("done", flush=True)


def _same_thread(url: str, thread_id: str, tag: str, turns: int) -> None:
    """Append ``turns`` user messages of our own to a thread others write too, under its lock."""
    workload = workload_for(thread_id)
    with session_graph(url, workload) as graph:
        for i in range(turns):
            message = HumanMessage(f"{tag} says hello #{i}", id=f"{tag}-{i}")
            with ThreadLock(url, thread_id, timeout=60):
                graph.invoke({"messages": [message]}, config_for(thread_id))
            print(f"{tag} {i}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
