"""Recall's kept lines under DeltaContextState (issue 36): in a delta channel of their
own, each call storing the lines it added, instead of ``session["recall_shown"]``,
which rewrote every kept line into every checkpoint until the next compression. The
prompts stay what they were, also when another process (or a restarted one) serves
the next turn from the checkpoint."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.channels.delta import DeltaChannel
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
from langgraph_ctx.state import (
    SNAPSHOT_EVERY,
    LedgerEntry,
    delta_messages,
    ledger_reducer,
    merge_dicts,
    recall_shown_changes,
)
from langgraph_ctx.testing import ScriptedChatModel

CITIES = [f"{port}{k}" for k in range(6) for port in ("Antwerp", "Bilbao", "Cadiz", "Danzig")]
BUDGET = Budget.for_window(6_000)
CONFIG: Any = {"configurable": {"thread_id": "t", "user_id": "alice"}}


def run(
    path: Path,
    turns: int,
    processes: int = 1,
    schemas: tuple[Any, ...] = (DeltaContextState,),
    cities: list[str] = CITIES,
    before_turn: Callable[[int, Any], None] | None = None,
) -> tuple[ScriptedChatModel, Any]:
    """``processes`` graphs, each its own pipeline (its own memory of the session),
    serve the thread's turns in turn over one SQLite file: each turn is served by a
    process that did not serve the one before, as after a restart. ``schemas``: the
    state of each process (the last one's when fewer). A memory for each of
    ``cities``; turn ``i`` asks about the ``i``-th. ``before_turn(i, graph)`` runs
    before turn ``i`` with the graph about to serve it."""
    bank = MemoryBank()
    for city in cities:
        bank.remember(
            ("alice",),
            f"Shipments to {city} clear customs at the {city} office. " + "Papers. " * 60,
        )
    model = ScriptedChatModel(
        responses=[AIMessage("Noted. " * 30, id=f"reply-{i}") for i in range(turns)]
    )
    with sqlite3.connect(path, check_same_thread=False) as conn:
        saver = SqliteSaver(conn)

        def graph(schema: Any) -> Any:
            builder = StateGraph(schema)
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

        graphs = [graph(schemas[min(k, len(schemas) - 1)]) for k in range(processes)]
        first: list[Any] = [SystemMessage("You route freight.")]
        for turn in range(turns):
            city = cities[turn % len(cities)]
            text = (
                f"Turn {turn}: where does the shipment to {city} clear customs? " + "cargo " * 120
            )
            if before_turn is not None:
                before_turn(turn, graphs[turn % processes])
            graphs[turn % processes].invoke(
                {"messages": [*first, HumanMessage(text, id=f"h{turn}")]}, CONFIG
            )
            first = []
        return model, graphs[(turns - 1) % processes].get_state(CONFIG).values


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


class Before(TypedDict, total=False):
    """DeltaContextState before the recall_shown channel: the lines in the session."""

    messages: Annotated[
        list[AnyMessage], DeltaChannel(delta_messages, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    session: Annotated[dict[str, Any], merge_dicts]
    context_ledger: Annotated[list[LedgerEntry], ledger_reducer()]


def test_a_thread_checkpointed_with_the_lines_in_the_session_resumes_with_them(
    tmp_path: Path,
) -> None:
    """An upgraded process takes turns from one that kept the lines in the session:
    every prompt is the one a process of the old kind sends, and the session's copy
    goes once the channel holds them."""
    # More memories than a block holds: most turns add their city's line, so a turn
    # the old process served leaves lines only the session holds.
    cities = [f"{port}{k}" for k in range(30) for port in ("Antwerp", "Bilbao", "Cadiz")]
    kinds = (Before, DeltaContextState)
    old, _ = run(tmp_path / "old.sqlite", 30, processes=2, schemas=(Before,), cities=cities)
    mixed, state = run(tmp_path / "mixed.sqlite", 30, processes=2, schemas=kinds, cities=cities)
    assert [[(m.type, m.text) for m in c.messages] for c in mixed.calls] == [
        [(m.type, m.text) for m in c.messages] for c in old.calls
    ]
    assert state["recall_shown"]["lines"]
    assert state["session"].get("recall_shown") is None


def test_lines_an_earlier_version_left_in_the_session_are_the_ones_shown(tmp_path: Path) -> None:
    """A process of an earlier version served the last call (a rolling upgrade) and
    kept the lines in the session, the channel holding what the call before left:
    the session's copy is the newer one, and the next process shows it."""
    planted = "- [observation] Shipments to Riga clear customs at the Riga office."

    def old_version_added_a_line(turn: int, graph: Any) -> None:
        if turn != 2:
            return
        shown = graph.get_state(CONFIG).values["recall_shown"]
        lines = {a: list(v) for a, v in shown["lines"].items()}
        lines[next(iter(lines))].append(planted)
        newer = {"signature": shown["signature"], "lines": lines}
        graph.update_state(CONFIG, {"session": {"recall_shown": newer}})

    model, state = run(tmp_path / "t.sqlite", 4, processes=2, before_turn=old_version_added_a_line)
    assert any(planted in m.text for m in model.calls[2].messages)
    assert state["session"].get("recall_shown") is None
