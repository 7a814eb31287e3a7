"""An idle session costs its counts, not its messages: through a real attached
pipeline (pre-flight, compression preparing ahead) on a SQLite checkpointer."""

from __future__ import annotations

import gc
import sqlite3
import weakref
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, TieredCompression
from langgraph_ctx.tokens import ACTIVE_SESSIONS, BLOCK
from tests.middleware.test_prepared_compression import turn

SESSIONS = 3 * ACTIVE_SESSIONS


@pytest.mark.slow
def test_idle_sessions_hold_counts_only_bounded_in_bytes(tmp_path: Path) -> None:
    seen: dict[str, list[weakref.ref[BaseMessage]]] = {}

    def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        thread = config["configurable"]["thread_id"]
        seen[thread] = [weakref.ref(m) for m in state["messages"]]
        return {"messages": [AIMessage("ok")]}

    builder = StateGraph(ContextState)
    builder.add_node("call_llm", node)
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck(), TieredCompression()], budget=Budget.for_window(4_000))
    conn = sqlite3.connect(tmp_path / "s.sqlite", check_same_thread=False)
    try:
        graph = pipeline.attach(builder).compile(checkpointer=SqliteSaver(conn))
        for t in range(SESSIONS):
            config: Any = {"configurable": {"thread_id": f"t{t}"}}
            for i in range(30):  # far enough to reach the yellow zone and compress
                graph.invoke({"messages": turn(i)}, config)
            ledger = graph.get_state(config).values["context_ledger"]
            assert any(e["kind"] == "compression" for e in ledger)
        for session in pipeline._sessions.values():  # let preparations under way finish
            pending = session.scratch.get("compression_prepared")
            if pending is not None:
                pending.future.exception(timeout=30)
        gc.collect()
        idle = [f"t{t}" for t in range(SESSIONS - ACTIVE_SESSIONS)]
        for thread in idle:
            # Nothing the pipeline keeps for the session refers to a message...
            assert all(ref() is None for ref in seen[thread]), thread
            # ...its token cache holds 16 bytes per block of 64 messages and the
            # counts of the last partial block: a few hundred bytes, no memo.
            session = pipeline.session_for({"configurable": {"thread_id": thread}}, {})
            cache = session.cache
            assert cache.nbytes() <= 16 * (cache.messages // BLOCK + BLOCK)
            assert cache.messages <= 200  # the compressed history, not all 50 turns
    finally:
        conn.close()
