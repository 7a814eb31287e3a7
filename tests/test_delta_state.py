"""The delta channels of the state: ``delta_messages`` is ``add_messages`` one message
at a time, whatever the batching; PACE's records and (on ``DeltaContextState``) its
history are checkpointed as what each step added; the strategies that rewrite the
history work on it; PACE's prebuilt agent runs on it by default."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
)
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from langgraph_ctx import Budget, ContextState, DeltaContextState, Pipeline, PreflightCheck
from langgraph_ctx.agent import build_context_agent, create_context_agent
from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.state import delta_messages, with_keys
from langgraph_ctx.strategies import (
    LexicalScorer,
    PaceState,
    PredictiveExtraction,
    TieredCompression,
)
from langgraph_ctx.testing import ScriptedChatModel

# -- the reducer -------------------------------------------------------------------

IDS = [f"m{i}" for i in range(6)]


@st.composite
def operation(draw: Any) -> Any:
    kind = draw(st.sampled_from(["add", "add", "add", "remove", "clear"]))
    if kind == "clear":
        return RemoveMessage(id=REMOVE_ALL_MESSAGES)
    mid = draw(st.sampled_from(IDS))
    if kind == "remove":
        return RemoveMessage(id=mid)
    return HumanMessage(draw(st.text("ab", max_size=3)), id=mid)


def one_at_a_time(ops: list[Any]) -> list[AnyMessage] | None:
    """``add_messages`` fed a message at a time; ``None`` if it refuses one (an unknown
    id removed), which the delta reducer must refuse too."""
    state: list[AnyMessage] = []
    for op in ops:
        try:
            state = add_messages(state, [op])  # type: ignore[assignment]
        except ValueError:
            return None
    return state


def shape(messages: Sequence[BaseMessage]) -> list[tuple[str | None, str]]:
    return [(m.id, m.text) for m in messages]


@settings(max_examples=300, deadline=None)
@given(st.lists(operation(), max_size=14), st.lists(st.integers(0, 14), max_size=4))
@pytest.mark.slow
def test_delta_messages_is_add_messages_whatever_the_batching(
    ops: list[Any], cuts: list[int]
) -> None:
    expected = one_at_a_time(ops)
    bounds = sorted({0, len(ops), *(min(c, len(ops)) for c in cuts)})
    batches = [ops[a:b] for a, b in pairwise(bounds)]
    try:
        whole = delta_messages([], [ops])  # one write holding everything
        stepwise: list[AnyMessage] = []
        for batch in batches:  # the same writes, replayed batch by batch
            stepwise = delta_messages(stepwise, batch)
    except ValueError:
        assert expected is None
        return
    assert expected is not None
    assert shape(whole) == shape(stepwise) == shape(expected)


# -- what a step stores ----------------------------------------------------------------


def pace_graph(schema: type[Any], conn: sqlite3.Connection) -> Any:
    builder = StateGraph(with_keys(schema, PaceState))
    builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok", report_usage=False)))
    builder.add_edge(START, "call_llm")
    pace = PredictiveExtraction(scorer=LexicalScorer())
    pipeline = Pipeline([PreflightCheck(), pace], budget=Budget.for_window(4_000))
    saver = SqliteSaver(conn)
    saver.setup()  # the tables, before the first count
    return pipeline.attach(builder).compile(checkpointer=saver)


def stored(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT (SELECT COALESCE(SUM(length(checkpoint)), 0) FROM checkpoints)"
        " + (SELECT COALESCE(SUM(length(value)), 0) FROM writes)"
    ).fetchone()
    return int(row[0])


@pytest.mark.slow
def test_pace_checkpoints_what_a_step_added_not_the_history(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False)
    graph = pace_graph(DeltaContextState, conn)
    config: Any = {"configurable": {"thread_id": "t"}}
    per_turn, snapshot_turns = [], set()
    for i in range(45):
        before = stored(conn)
        text = f"Turn {i} about order ORD-{i}: " + "details " * 80
        graph.invoke({"messages": [HumanMessage(text, id=f"u{i}")]}, config)
        per_turn.append(stored(conn) - before)
        latest = graph.checkpointer.get_tuple(config).checkpoint["channel_values"]
        for key in ("messages", "pace_chunks"):  # only a snapshot holds a whole value
            if key in latest:
                assert type(latest[key]).__name__ == "_DeltaSnapshot"
                snapshot_turns.add(i)
    records = graph.get_state(config).values["pace_chunks"]
    assert len(records) >= 40  # PACE kept a record per step ...
    plain = [n for i, n in enumerate(per_turn) if i not in snapshot_turns]
    # ... and yet a turn stores about the same at the end as near the start.
    assert max(plain[-10:]) < 1.5 * max(plain[5:15])
    conn.close()


# -- rewriting strategies on DeltaContextState ------------------------------------------


@pytest.mark.slow
def test_compression_rewrites_a_delta_history_and_a_new_process_reads_the_same(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    builder = StateGraph(DeltaContextState)
    builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok", report_usage=False)))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck(), TieredCompression()], budget=Budget.for_window(4_000))
    graph = pipeline.attach(builder).compile(checkpointer=SqliteSaver(conn))
    config: Any = {"configurable": {"thread_id": "t"}}
    for i in range(30):
        text = f"Turn {i} about order ORD-{i}: " + "details " * 150
        graph.invoke({"messages": [HumanMessage(text, id=f"u{i}")]}, config)
    values = graph.get_state(config).values
    assert any(e["kind"] == "compression" for e in values["context_ledger"])
    live = values["messages"]
    assert len(live) < 60  # REMOVE_ALL honoured: the history was rewritten, not appended to
    assert any(isinstance(m, AIMessage) for m in live)
    again = sqlite3.connect(path, check_same_thread=False)  # another reader, from the disk
    graph2 = builder.compile(checkpointer=SqliteSaver(again))
    read = graph2.get_state(config).values["messages"]
    assert shape(read) == shape(live)
    conn.close()
    again.close()


# -- the prebuilt agent --------------------------------------------------------------


def channel(graph: Any) -> Any:
    return graph.builder.channels["messages"]


def test_pace_agents_run_on_delta_context_state_unless_told_otherwise() -> None:
    model = ScriptedChatModel(default="ok")
    pace = create_context_agent(model, strategy="pace", think=False)
    assert isinstance(channel(pace), DeltaChannel)
    assert channel(pace).reducer is delta_messages
    tiered = create_context_agent(model, think=False)
    assert isinstance(channel(tiered), BinaryOperatorAggregate)
    chosen = build_context_agent(model, strategy="pace", think=False, state_schema=ContextState)
    assert isinstance(chosen.channels["messages"], BinaryOperatorAggregate)
    # The other strategies accept it (they rewrite through REMOVE_ALL, which it honours).
    for name in ("tiered", "adacom", "arc", "bacm"):
        build_context_agent(model, strategy=name, think=False, state_schema=DeltaContextState)
