"""Token counts stay exact where a checkpointer hands every step fresh messages:
through a real compiled graph on SQLite (edits in place, RemoveMessage, a session
gone idle, a resume in a fresh process), and for the cache's block summary under
random histories longer than a block."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, TokenCounter
from langgraph_ctx.pipeline.context import current_context
from langgraph_ctx.tokens import ACTIVE_SESSIONS, BLOCK, MessageTokenCache

COUNTER = TokenCounter()
ROOT = Path(__file__).resolve().parents[1]


def history(n: int, prefix: str = "m") -> list[BaseMessage]:
    kinds = (HumanMessage, AIMessage)
    return [
        kinds[i % 2](f"{prefix} {i}: invoice INV-{i:04d} due", id=f"{prefix}{i}") for i in range(n)
    ]


def build(path: Path) -> tuple[Any, Pipeline, list[tuple[int, int]], sqlite3.Connection]:
    """A graph whose node records (pre-flight's raw total, a fresh count of its input)."""
    seen: list[tuple[int, int]] = []

    def node(state: ContextState) -> dict[str, Any]:
        ctx = current_context()
        assert ctx is not None and ctx.usage is not None
        seen.append((ctx.usage.raw_total, COUNTER.count_messages(state["messages"])))
        return {"messages": [AIMessage(f"reply {len(seen)}")]}

    builder = StateGraph(ContextState)
    builder.add_node("call_llm", node)
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck()], budget=Budget.for_window(10_000_000))
    conn = sqlite3.connect(path, check_same_thread=False)
    return pipeline.attach(builder).compile(checkpointer=SqliteSaver(conn)), pipeline, seen, conn


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def test_counts_stay_exact_across_checkpoints_edits_removals_and_idleness(tmp_path: Path) -> None:
    graph, pipeline, seen, conn = build(tmp_path / "c.sqlite")
    try:
        graph.update_state(config("t"), {"messages": history(150)}, as_node="call_llm")
        for i in range(3):  # each step: freshly deserialized messages, only the new counted
            graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"q{i}")]}, config("t"))
        cache = pipeline.session_for(config("t"), {}).cache
        assert cache.counted == 150 + 3 + 2  # the history once, each turn, the replies
        # An edit in place (same id, same length, new text) in the first block...
        old = graph.get_state(config("t")).values["messages"][10]
        edited = HumanMessage(old.text.replace("due", "DUE"), id=old.id)
        assert len(edited.text) == len(old.text)
        graph.update_state(config("t"), {"messages": [edited]}, as_node="call_llm")
        before = cache.counted
        graph.invoke({"messages": [HumanMessage("after the edit", id="q-edit")]}, config("t"))
        assert cache.counted - before == 1 + 1 + 1  # the edited message, the reply, the turn
        # ...a RemoveMessage early on: what follows moved, and is looked up, not recounted.
        graph.update_state(config("t"), {"messages": [RemoveMessage(id="m3")]}, as_node="call_llm")
        before = cache.counted
        graph.invoke({"messages": [HumanMessage("after the removal", id="q-rm")]}, config("t"))
        assert cache.counted - before == 1 + 1
        # The session goes idle (other threads run), then comes back to an edited history.
        for other in range(ACTIVE_SESSIONS):
            graph.invoke({"messages": [HumanMessage("hi", id="x")]}, config(f"o{other}"))
        assert cache.nbytes() < 1_024  # idle: block hashes, ends and the last partial block
        graph.update_state(
            config("t"), {"messages": [HumanMessage("rewritten", id="m100")]}, as_node="call_llm"
        )
        graph.invoke({"messages": [HumanMessage("back again", id="q-back")]}, config("t"))
        assert all(ours == fresh for ours, fresh in seen), seen
    finally:
        conn.close()


def resume_once(path: str) -> None:
    """In a fresh process: one more turn of thread ``t``; prints what the node saw."""
    graph, pipeline, seen, conn = build(Path(path))
    try:
        graph.invoke({"messages": [HumanMessage("resumed", id="q-resumed")]}, config("t"))
        cache = pipeline.session_for(config("t"), {}).cache
        print(json.dumps({"seen": seen, "counted": cache.counted}))
    finally:
        conn.close()


@pytest.mark.slow
def test_a_fresh_process_resumes_with_exact_counts(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    graph, _, _, conn = build(path)
    try:
        graph.update_state(config("t"), {"messages": history(100)}, as_node="call_llm")
        graph.invoke({"messages": [HumanMessage("first", id="q0")]}, config("t"))
    finally:
        conn.close()
    code = (
        f"from tests.test_token_counts_checkpointed import resume_once; resume_once({str(path)!r})"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    [(ours, fresh)] = out["seen"]
    assert (
        ours
        == fresh
        == COUNTER.count_messages(
            [*history(100), HumanMessage("first"), AIMessage("reply 1"), HumanMessage("resumed")]
        )
    )
    assert out["counted"] == 103  # a new process counts the history once


op = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 70)),
    st.tuples(st.just("edit"), st.integers(0, 10_000), st.booleans()),
    st.tuples(st.just("remove"), st.integers(0, 10_000)),
    st.tuples(st.just("reload")),
    st.tuples(st.just("reload_keeping_old")),
    st.tuples(st.just("idle")),
    st.tuples(st.just("count_of"), st.integers(0, 10_000)),
)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3 * BLOCK), st.lists(op, max_size=20))
def test_block_summary_always_matches_a_fresh_count(start: int, ops: list[Any]) -> None:
    serde = JsonPlusSerializer()
    cache = MessageTokenCache(COUNTER)
    msgs = history(start)
    kept: list[list[BaseMessage]] = []
    cache.total(msgs)
    for serial, o in enumerate(ops):
        if o[0] == "append":
            msgs = [*msgs, *history(o[1], prefix=f"a{serial}-")]
        elif o[0] == "edit" and msgs:
            i = o[1] % len(msgs)
            text = msgs[i].text
            # Same length (a letter's case flipped) or not: recounted either way.
            new = text.swapcase() if o[2] else text + " (edited)"
            msgs = [*msgs[:i], msgs[i].model_copy(update={"content": new}), *msgs[i + 1 :]]
        elif o[0] == "remove" and msgs:
            i = o[1] % len(msgs)
            msgs = msgs[:i] + msgs[i + 1 :]
        elif o[0] == "reload":  # the old objects die: their addresses may be reused
            msgs = serde.loads_typed(serde.dumps_typed(msgs))
        elif o[0] == "reload_keeping_old":  # equal copies while the originals live on
            kept.append(msgs)
            msgs = serde.loads_typed(serde.dumps_typed(msgs))
        elif o[0] == "idle":
            cache.release()
        elif o[0] == "count_of" and msgs:
            m = msgs[o[1] % len(msgs)]
            assert cache.count_of(m) == COUNTER.count_message(m)
        assert cache.total(msgs) == COUNTER.count_messages(msgs)
        assert cache.messages == len(msgs)
