"""Tool pairs by identity: reused call ids, results out of order, broken histories.

Some OpenAI-compatible servers emit the same tool-call id every turn (``call_0``);
a history can also reach us broken (a result with no call, a call with no
result). Whatever the history, what the model receives must be accepted by an
OpenAI-style API: every call immediately followed by one result per call id, and
no result without its call.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx.history.structure import LOST_RESULT, pair_results, repair_pairs
from tests.fuzz_sessions import provider_rejects
from tests.middleware.test_compression import cfg, events, make_graph, turn


def reusing_ids(messages: list[BaseMessage]) -> list[BaseMessage]:
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            m.tool_calls[0]["id"] = "call_0"
        if isinstance(m, ToolMessage):
            m.tool_call_id = "call_0"
    return messages


@pytest.mark.slow
def test_a_reused_call_id_never_reaches_the_model_as_an_orphan() -> None:
    """The server reuses ``call_0`` every turn; after compressions, every prompt
    still pairs each result with its own call (before the fix: an orphan ``r0``
    after the summary, from the second compression on)."""
    graph, model, _ = make_graph()
    config = cfg("reused")
    for i in range(30):
        graph.invoke({"messages": reusing_ids(turn(i, tools=True))}, config)
    assert events(graph, config, "compression")
    for call in model.calls:
        assert provider_rejects(list(call.messages)) is None


def test_pairing_takes_the_nearest_preceding_call_of_the_same_turn() -> None:
    history: list[BaseMessage] = [
        HumanMessage("one", id="u1"),
        AIMessage("", id="c1", tool_calls=[{"name": "f", "args": {}, "id": "call_0"}]),
        ToolMessage("r1", tool_call_id="call_0", id="r1"),
        AIMessage("", id="c2", tool_calls=[{"name": "f", "args": {}, "id": "call_0"}]),
        ToolMessage("r2", tool_call_id="call_0", id="r2"),
        HumanMessage("two", id="u2"),
        ToolMessage("stray", tool_call_id="call_0", id="r3"),  # its call was in turn one
    ]
    pairing = pair_results(history)
    assert pairing.owner == {2: 1, 4: 3}
    assert pairing.orphans == [6]
    assert pairing.missing == []


def test_a_broken_history_is_repaired_in_the_view_and_recorded() -> None:
    """A result with no call, a call with no result, and a result before its call:
    the model gets a history it can accept, the ledger says what was repaired, and
    the checkpointed state keeps what the user wrote."""
    graph, model, _ = make_graph()
    config = cfg("broken")
    call: dict[str, Any] = {"name": "lookup", "args": {"q": "x"}, "id": "call_7"}
    lost: dict[str, Any] = {"name": "lookup", "args": {"q": "y"}, "id": "call_8"}
    given: list[BaseMessage] = [
        HumanMessage("Find x.", id="task"),
        ToolMessage("x is 42", tool_call_id="call_7", id="early"),  # before its call
        AIMessage("", id="c7", tool_calls=[call]),
        AIMessage("", id="c8", tool_calls=[lost]),  # no result ever
        ToolMessage("from nowhere", tool_call_id="call_9", id="stray"),  # no call
    ]
    graph.invoke({"messages": given}, config)
    sent = list(model.calls[-1].messages)
    assert provider_rejects(sent) is None
    ids = [m.id for m in sent]
    assert ids.index("early") == ids.index("c7") + 1
    placeholder = sent[ids.index("c8") + 1]
    assert isinstance(placeholder, ToolMessage) and placeholder.text == LOST_RESULT
    note = sent[ids.index("stray")]
    assert isinstance(note, AIMessage) and "from nowhere" in note.text
    repaired = events(graph, config, "tool_pairs_repaired")
    assert repaired == [{"moved": ["early"], "orphans": ["stray"], "placeholders": ["call_8"]}]
    state = graph.get_state(config).values["messages"]
    assert [m.id for m in state][:5] == ["task", "early", "c7", "c8", "stray"]


def test_a_whole_history_comes_back_unchanged() -> None:
    history = turn(1, tools=True) + turn(2, tools=True)
    repaired, repair = repair_pairs(history)
    assert not repair
    assert all(a is b for a, b in zip(repaired, history, strict=True))


def test_a_pair_broken_deep_in_a_long_history_is_still_repaired() -> None:
    """Pre-flight looks only at what follows the last turn it found whole; a
    result removed from an early turn by the user's own update shifts what follows,
    so that stretch is looked at again and the call gets its placeholder."""
    from langchain_core.messages import RemoveMessage

    graph, model, _ = make_graph(window=1_000_000)
    config = cfg("deep")
    for i in range(12):
        graph.invoke({"messages": turn(i, tools=True)}, config)
    state = graph.get_state(config).values["messages"]
    early = next(m for m in state if isinstance(m, ToolMessage))
    graph.update_state(config, {"messages": [RemoveMessage(id=str(early.id))]})
    graph.invoke({"messages": turn(12, tools=True)}, config)
    sent = list(model.calls[-1].messages)
    assert provider_rejects(sent) is None
    assert events(graph, config, "tool_pairs_repaired")
