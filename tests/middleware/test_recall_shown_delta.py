"""Recall's kept lines under DeltaContextState (issue 36): in a delta channel of their
own, each call storing the lines it added, instead of ``session["recall_shown"]``,
which rewrote every kept line into every checkpoint until the next compression. The
prompts stay what they were, also when another process (or a restarted one) serves
the next turn from the checkpoint."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    DeltaContextState,
    MemoryBank,
    MemoryRecall,
    Pipeline,
    PreflightCheck,
    ProviderPlacement,
    TieredCompression,
    is_summary,
)
from langgraph_ctx.middleware._recall_refresh import _changes
from langgraph_ctx.state import recall_shown_changes
from langgraph_ctx.testing import ScriptedChatModel

CITIES = [f"{port}{k}" for k in range(6) for port in ("Antwerp", "Bilbao", "Cadiz", "Danzig")]
BUDGET = Budget.for_window(6_000)
CONFIG: Any = {"configurable": {"thread_id": "t", "user_id": "alice"}}


def run(path: Path, turns: int, processes: int = 1) -> tuple[ScriptedChatModel, Any]:
    """``processes`` graphs, each its own pipeline (its own memory of the session),
    serve the thread's turns in turn over one SQLite file: each turn is served by a
    process that did not serve the one before, as after a restart."""
    bank = MemoryBank()
    for city in CITIES:
        bank.remember(
            ("alice",),
            f"Shipments to {city} clear customs at the {city} office. " + "Papers. " * 60,
        )
    model = ScriptedChatModel(
        responses=[AIMessage("Noted. " * 30, id=f"reply-{i}") for i in range(turns)]
    )
    with sqlite3.connect(path, check_same_thread=False) as conn:
        saver = SqliteSaver(conn)

        def graph() -> Any:
            builder = StateGraph(DeltaContextState)
            builder.add_node(
                "call_llm", lambda state: {"messages": [model.invoke(state["messages"])]}
            )
            builder.add_edge(START, "call_llm")
            # A summary prepared ahead in the background is a process's own (another
            # prepares its own): off, so that two processes' prompts compare.
            compression = TieredCompression(prepare_ahead=False)
            middleware = [PreflightCheck(), compression, MemoryRecall(bank)]
            middleware.append(ProviderPlacement(recall_refresh="delta"))
            return Pipeline(middleware, budget=BUDGET).attach(builder).compile(saver)

        graphs = [graph() for _ in range(processes)]
        first: list[Any] = [SystemMessage("You route freight.")]
        for turn in range(turns):
            city = CITIES[turn % len(CITIES)]
            text = (
                f"Turn {turn}: where does the shipment to {city} clear customs? " + "cargo " * 120
            )
            graphs[turn % processes].invoke(
                {"messages": [*first, HumanMessage(text, id=f"h{turn}")]}, CONFIG
            )
            first = []
        return model, graphs[0].get_state(CONFIG).values


def stored_with(path: Path, text: str) -> tuple[int, set[str]]:
    """How many checkpoint rows of the file hold ``text`` in their stored bytes, and
    the channels of the pending writes that do."""
    needle = text.encode()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT checkpoint FROM checkpoints").fetchall()
        writes = conn.execute("SELECT channel, value FROM writes").fetchall()
    return sum(needle in bytes(b) for (b,) in rows), {c for c, v in writes if needle in bytes(v)}


def test_kept_lines_are_stored_once_not_in_every_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "thread.sqlite"
    _, state = run(path, turns=30)
    assert any(is_summary(m) for m in state["messages"])  # compressions started over
    shown = state["recall_shown"]
    lines = [line for kept in shown["lines"].values() for line in kept]
    assert len(lines) >= 5
    # The session carries none of them: it is rewritten into every checkpoint.
    session = JsonPlusSerializer().dumps_typed(state["session"])[1]
    assert not any(line.encode() in session for line in lines)
    with sqlite3.connect(path) as conn:
        (checkpoints,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    assert checkpoints > 30
    # Each kept line is in the write of the call that added it (again after each
    # compression, which starts the lines over), and in no checkpoint but a full copy
    # LangGraph makes of the channel every SNAPSHOT_EVERY updates; in the session it
    # was in every checkpoint since its turn, and in every session write.
    for line in lines:
        rows, channels = stored_with(path, line)
        assert rows <= 1 and channels == {"recall_shown"}, (rows, channels)


def test_another_process_after_each_turn_sends_what_one_process_sends(tmp_path: Path) -> None:
    """Recall across a restart: the process serving a turn rebuilds the kept blocks
    from the channel, byte for byte, so every prompt is the one a single process
    sends, recall blocks included."""
    one, one_state = run(tmp_path / "one.sqlite", turns=24)
    two, two_state = run(tmp_path / "two.sqlite", turns=24, processes=2)
    prompts = [[(m.type, m.text) for m in call.messages] for call in one.calls]
    assert any("[Recalled" in text or "Shipments to" in text for p in prompts for _, text in p)
    assert [[(m.type, m.text) for m in call.messages] for call in two.calls] == prompts
    assert two_state["recall_shown"]["lines"] == one_state["recall_shown"]["lines"]


def test_the_changes_replay_to_the_same_lines_however_they_are_batched() -> None:
    """A DeltaChannel replays stored writes in batches of its choosing."""
    changes = [
        {"reset": True, "signature": 1, "add": {"h0": ["a", "b"]}},
        {"drop": [], "add": {"h0": ["c"], "h1": ["d"]}},
        {"drop": ["h0"], "add": {"h2": ["e"]}},
        {"reset": True, "signature": 2, "add": {"h3": ["f"]}},
        {"drop": [], "add": {"h3": ["g"]}},
    ]
    whole = recall_shown_changes({}, changes)
    assert whole == {"signature": 2, "lines": {"h3": ["f", "g"]}}
    for cut in range(len(changes) + 1):
        state = recall_shown_changes({}, changes[:cut])
        assert recall_shown_changes(state, changes[cut:]) == whole
    assert recall_shown_changes({}, changes[:3]) == {
        "signature": 1,
        "lines": {"h1": ["d"], "h2": ["e"]},
    }


shown_values = st.fixed_dictionaries(
    {
        "signature": st.integers(0, 3),
        "lines": st.dictionaries(
            st.sampled_from(["h0", "h1", "h2", "h3"]),
            st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=4),
            max_size=4,
        ),
    }
)


@settings(max_examples=200, deadline=None)
@given(shown_values | st.none(), shown_values)
def test_what_a_call_stores_rebuilds_the_lines_it_kept(
    before: dict[str, Any] | None, after: dict[str, Any]
) -> None:
    """Whatever the lines were (or none yet) and whatever they became (lines added,
    a turn dropped or written anew, a compression's new signature), the change
    stored, applied to the channel's value, gives exactly what the call kept."""
    change = _changes(before, after)
    assert recall_shown_changes(before or {}, [change]) == after
