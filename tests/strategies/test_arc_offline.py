"""The offline ARC manager: a checklist from the task, one memory line per call,
reflection that merges repeats, keeps the newest value and condenses the oldest."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage

from langgraph_ctx.strategies.arc.manager import ChecklistItem, UpdateRequest
from langgraph_ctx.strategies.arc.offline import OfflineArcManager

TASK = (
    "I am planning a trip. Find a flight from Lyon to Oslo on 2026-05-02. "
    "The fare must be under 300 EUR. Thanks a lot."
)


def request(
    memory: str = "", *, checklist: tuple[ChecklistItem, ...] = (), **kw: object
) -> UpdateRequest:
    call = {"name": "search", "args": {"from": "Lyon", "to": "Oslo"}, "id": "c1"}
    interaction = (
        AIMessage("", tool_calls=[call]),
        ToolMessage(
            "Flight SK-842 from Lyon to Oslo on 2026-05-02, fare 240 EUR.", tool_call_id="c1"
        ),
    )
    base = {
        "task": TASK,
        "checklist": checklist,
        "memory": memory,
        "interaction": interaction,
        "turn": 3,
        "memory_tokens": 400,
    }
    return UpdateRequest(**{**base, **kw})  # type: ignore[arg-type]


def test_the_checklist_starts_from_goal_and_constraint_sentences() -> None:
    items = OfflineArcManager().checklist_for(TASK)
    assert [i.text for i in items] == [
        "Find a flight from Lyon to Oslo on 2026-05-02.",
        "The fare must be under 300 EUR.",
    ]
    assert [i.id for i in items] == ["c1", "c2"] and {i.status for i in items} == {"open"}


def test_an_update_adds_one_line_per_call_and_closes_what_the_evidence_covers() -> None:
    manager = OfflineArcManager()
    items = tuple(manager.checklist_for(TASK))
    update = manager.update(request(checklist=items))
    assert update.entry.startswith('search({"from": "Lyon", "to": "Oslo"}) -> ')
    assert "SK-842" in update.entry and "240 EUR" in update.entry
    assert update.checklist[0].status == "done" and update.checklist[0].note.startswith("t3: ")
    assert not update.reflect


def test_reflection_merges_repeats_keeps_the_newest_value_and_notes_the_stall() -> None:
    memory = "\n".join(
        [
            '(t1) search({"q": "Oslo"}) -> fare: 280 EUR',
            "(t2) said: checking again",
            '(t3) search({"q": "Oslo"}) -> fare: 240 EUR',
        ]
    )
    items = (ChecklistItem(id="c1", text="Book the cheapest Oslo seat with a window"),)
    reflection = OfflineArcManager().reflect(
        request(memory, checklist=items, triggers=("repeated_call",))
    )
    assert reflection.memory.splitlines() == [
        "(t2) said: checking again",
        '(t3) search({"q": "Oslo"}) -> fare: 240 EUR [made 2 times: t1, t3]',
    ]
    assert "280" not in reflection.memory
    assert reflection.checklist[0].note.startswith('stalled: search({"q": "Oslo"}) made 2 times')
    # Reflecting again keeps the count.
    again = OfflineArcManager().reflect(
        request(reflection.memory + '\n(t5) search({"q": "Oslo"}) -> fare: 240 EUR')
    )
    assert "[made 3 times: t1, t3, t5]" in again.memory


def test_reflection_condenses_the_oldest_lines_under_the_cap() -> None:
    memory = "\n".join(
        f'(t{i}) lookup({{"id": {i}}}) -> row R-{i} costs {i * 7} EUR in Lyon' for i in range(1, 60)
    )
    manager = OfflineArcManager()
    out = manager.reflect(request(memory, memory_tokens=300)).memory
    assert manager.counter.count_text(out) <= 300
    assert out.splitlines()[0].startswith("(t1-t") and "condensed" in out.splitlines()[0]
    assert out.splitlines()[-1].startswith('(t59) lookup({"id": 59})')


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(5, 40), min_size=2, max_size=5), st.integers(200, 500))
@pytest.mark.slow
def test_reflections_never_nest_digests(batches: list[int], cap: int) -> None:
    """Lines added, reflection, again and again: the memory holds one condensed line
    whose range starts at the first turn, and its digest is text, never a digest of
    the last one (its ``condensed:`` head, its turn marks, its entity list's label)."""
    manager = OfflineArcManager()
    memory, turn = "", 1
    for size in batches:
        lines = [
            f'(t{turn + i}) lookup({{"id": {turn + i}}}) -> row R-{turn + i} costs '
            f"{(turn + i) * 7} EUR in Lyon"
            for i in range(size)
        ]
        turn += size
        memory = "\n".join([memory, *lines]).strip()
        memory = manager.reflect(request(memory, memory_tokens=cap)).memory
        condensed = [line for line in memory.splitlines() if "condensed:" in line]
        assert len(condensed) <= 1
        if condensed:
            head, _, digest = condensed[0].partition(" condensed: ")
            assert head.startswith("(t1-t")
            assert "condensed:" not in digest and not re.search(r"\(t\d+|\bt\d+\b", digest)
            assert digest.count("mentioned:") <= 1 and not digest.startswith("User:")
