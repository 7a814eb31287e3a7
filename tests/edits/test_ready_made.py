"""Operations made by code (``EditOp.replacing``): compression's summaries and
compacted results go through the same checks as a manager's edits, and are
placed as they are."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.core import EditOp, EditRejected, note, plan_edits
from tests.edits.test_core import frozen, history, ids


def test_a_ready_made_rewrite_is_placed_as_it_is_and_may_keep_the_id() -> None:
    digest = ToolMessage("D-17: 95 min", tool_call_id="c1", id="r1")
    plan = plan_edits(history(), [EditOp.replacing(["r1"], digest, "compacted")])
    assert plan.messages[4] is digest and ids(plan.messages) == ids(history())
    assert ids(plan.removed) == ["r1"] and plan.removed[0].text.startswith("doc D-17")
    assert plan.applied[0].kind == "rewrite" and plan.applied[0].new_id == "r1"


def test_a_ready_made_merge_lands_at_its_first_or_its_last_target() -> None:
    summary = SystemMessage("[Conversation Summary] #1\nD-17 checked.", id="s1")
    first = plan_edits(history(), [EditOp.replacing(["a2", "a3"], summary, "why")])
    last = plan_edits(history(), [EditOp.replacing(["a2", "a3"], summary, "why", place="last")])
    assert ids(first.messages)[6:] == ["s1", "u2"]
    assert ids(last.messages)[6:] == ["u2", "s1"]


def test_a_later_system_message_is_pinned_unless_the_tiers_rule() -> None:
    msgs = [*history(), SystemMessage("Reminder: under 100 minutes.", id="later")]
    merge = EditOp.replacing(["a3", "later"], AIMessage("Checked.", id="m"), "why")
    with pytest.raises(EditRejected) as caught:
        plan_edits(msgs, [merge])
    assert caught.value.reason == "pinned"
    plan = plan_edits(msgs, [merge], rules="tiers")  # compression's rule
    assert ids(plan.removed) == ["a3", "later"]


def test_a_plan_trace_goes_with_its_turn_under_the_tiers_rule_the_working_note_never() -> None:
    trace = note(AIMessage("[plan] tool_call: search", name="think", id="plan"))
    msgs = [*history(), trace, AIMessage("Done.", id="a4")]
    merge = EditOp.replacing(["plan", "a4"], SystemMessage("summary", id="s"), "why")
    # A manager may condense it too (issue 31: AdaCoM could not, and the traces piled
    # up until the ceiling dropped them), and what it makes is no working note.
    digest = EditOp(("plan", "a4"), "system", "why", "summary")
    for rules in ("manager", "tiers"):
        assert ids(plan_edits(msgs, [merge], rules=rules).removed) == ["plan", "a4"]  # type: ignore[arg-type]
        (made,) = plan_edits(msgs, [digest], rules=rules).made  # type: ignore[arg-type]
        assert not is_note(made)
    working = EditOp.replacing(["note", "a2"], SystemMessage("summary", id="s"), "why")
    with pytest.raises(EditRejected) as caught:
        plan_edits(msgs, [working], rules="tiers")  # pinned, and the working note
    assert caught.value.reason in {"pinned", "note_protected"}


BAD = [
    # An id that stays would be written twice.
    ("conflict", [EditOp.replacing(["a3"], AIMessage("x", id="a2"), "why")]),
    # Two operations putting the same id in place.
    (
        "conflict",
        [
            EditOp.replacing(["a2"], AIMessage("x", id="same"), "why"),
            EditOp.replacing(["a3"], AIMessage("y", id="same"), "why"),
        ],
    ),
    # A result answering another call, or a rewrite dropping a call: a split pair.
    ("malformed", [EditOp.replacing(["a3"], AIMessage("no id"), "why")]),
    (
        "role_position",
        [EditOp.replacing(["r1"], ToolMessage("x", tool_call_id="c2", id="r1"), "why")],
    ),
    ("role_position", [EditOp.replacing(["a1"], AIMessage("Searching.", id="a1"), "why")]),
    # A merged message carrying calls nobody answers.
    (
        "role_position",
        [
            EditOp.replacing(
                ["a2", "a3"],
                AIMessage("x", id="m", tool_calls=[{"name": "s", "args": {}, "id": "c9"}]),
                "why",
            )
        ],
    ),
    ("pinned", [EditOp.replacing(["task", "a2"], SystemMessage("x", id="s"), "why")]),
]


@pytest.mark.parametrize(("reason", "ops"), BAD, ids=[r for r, _ in BAD])
def test_a_bad_ready_made_operation_is_refused_whole(reason: str, ops: list[EditOp]) -> None:
    msgs = history()
    before = frozen(msgs)
    with pytest.raises(EditRejected) as caught:
        plan_edits(msgs, ops)
    assert caught.value.reason == reason and frozen(msgs) == before


def test_a_ready_made_merge_that_would_split_an_exchange_is_widened() -> None:
    summary = SystemMessage("[Conversation Summary] #1", id="s1")
    plan = plan_edits(history(), [EditOp.replacing(["a1", "r1"], summary, "why", place="last")])
    assert plan.applied[0].widened == ("r2",)
    assert ids(plan.messages) == ["sys", "task", "note", "s1", "a2", "u2", "a3"]
