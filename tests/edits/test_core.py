"""The edit core: each operation kind, merge placement, pair widening, pinned and
note protection, and invalid actions rejected whole with the input untouched."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from langgraph_ctx import pin
from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.core import EditOp, EditRejected, note, plan_edits


def history() -> list[BaseMessage]:
    return [
        SystemMessage("You are a research agent.", id="sys"),
        HumanMessage("Find the 1998 film directed by X; it must be under 100 minutes.", id="task"),
        note(pin(HumanMessage("[Working note]\n(nothing yet)", id="note"))),
        AIMessage(
            "Searching two sources.",
            id="a1",
            tool_calls=[
                {"name": "search", "args": {"q": "x 1998"}, "id": "c1"},
                {"name": "search", "args": {"q": "x film"}, "id": "c2"},
            ],
        ),
        ToolMessage("doc D-17: runtime 95 min", tool_call_id="c1", id="r1"),
        ToolMessage("doc D-22: unrelated", tool_call_id="c2", id="r2"),
        AIMessage("D-17 looks right; checking.", id="a2"),
        HumanMessage("Any progress?", id="u2"),
        AIMessage("Still checking D-17.", id="a3"),
    ]


def op(ids: list[str], content: str, role: str | None = "user", why: str = "because") -> Any:
    return {"ids": ids, "role": role, "justification": why, "new_content": content}


def frozen(messages: list[BaseMessage]) -> str:
    return json.dumps(messages_to_dict(messages), sort_keys=True)


def ids(messages: list[BaseMessage]) -> list[str]:
    return [str(m.id) for m in messages]


def test_rewrite_replaces_one_message_in_place_with_a_new_id() -> None:
    msgs = history()
    plan = plan_edits(msgs, [op(["u2"], "Progress?", role="user")])
    new = plan.messages
    assert ids(new)[:7] == ids(msgs)[:7] and ids(new)[8] == "a3"
    assert new[7].text == "Progress?" and new[7].type == "human" and new[7].id != "u2"
    assert ids(plan.removed) == ["u2"]
    assert plan.applied[0].kind == "rewrite"


def test_rewrite_of_a_tool_result_keeps_its_pair_and_is_not_widened() -> None:
    plan = plan_edits(history(), [op(["r1"], "D-17: 95 min", role="tool")])
    result = next(m for m in plan.messages if m.text == "D-17: 95 min")
    assert isinstance(result, ToolMessage) and result.tool_call_id == "c1"
    assert plan.applied[0].widened == () and ids(plan.removed) == ["r1"]


def test_rewrite_of_a_calling_assistant_message_keeps_its_calls() -> None:
    plan = plan_edits(history(), [op(["a1"], "Searching.", role="assistant")])
    made = next(m for m in plan.messages if m.text == "Searching.")
    assert isinstance(made, AIMessage) and [c["id"] for c in made.tool_calls] == ["c1", "c2"]


def test_empty_content_deletes_and_deleting_a_result_takes_its_whole_exchange() -> None:
    plan = plan_edits(history(), [op(["r2"], "", role=None)])
    assert ids(plan.messages) == ["sys", "task", "note", "a2", "u2", "a3"]
    assert plan.applied[0].widened == ("a1", "r1")
    assert ids(plan.removed) == ["a1", "r1", "r2"]


def test_whitespace_only_content_deletes() -> None:
    plan = plan_edits(history(), [op(["u2"], "  \n", role="user")])
    assert "u2" not in ids(plan.messages) and plan.applied[0].kind == "delete"


def test_merge_lands_at_the_first_target_in_history_order_not_list_order() -> None:
    plan = plan_edits(history(), [op(["a3", "a2"], "Checked D-17.", role="assistant")])
    assert [m.text for m in plan.messages][6] == "Checked D-17."
    assert ids(plan.messages)[7] == "u2" and len(plan.messages) == 8
    assert ids(plan.removed) == ["a2", "a3"]


def test_merge_of_a_result_with_other_messages_widens_to_its_exchange() -> None:
    plan = plan_edits(history(), [op(["r1", "a2"], "D-17 runs 95 min.", role="assistant")])
    assert ids(plan.messages)[:3] == ["sys", "task", "note"]
    assert plan.messages[3].text == "D-17 runs 95 min." and plan.messages[3].type == "ai"
    assert set(plan.applied[0].widened) == {"a1", "r2"}
    assert_pairs_whole(plan.messages)


def test_untouched_messages_are_the_same_objects() -> None:
    msgs = history()
    plan = plan_edits(msgs, [op(["u2"], "", role=None)])
    assert all(any(m is o for o in msgs) for m in plan.messages)


def test_rationale_is_in_the_ledger_only() -> None:
    plan = plan_edits(history(), [op(["a2", "a3"], "Checked.", role="assistant", why="SECRETWHY")])
    assert "SECRETWHY" not in frozen(plan.messages)
    assert plan.ledger()["operations"][0]["rationale"] == "SECRETWHY"


def test_update_writes_the_history_in_order_through_add_messages() -> None:
    msgs = history()
    plan = plan_edits(msgs, [op(["a2", "a3"], "Checked.", role="assistant")])
    update = plan.update()
    assert isinstance(update[0], RemoveMessage) and update[0].id == REMOVE_ALL_MESSAGES
    assert ids(add_messages(msgs, update)) == ids(plan.messages)


def test_the_working_note_may_be_rewritten_and_stays_a_note() -> None:
    plan = plan_edits(history(), [op(["note"], "[Working note]\nlead: D-17", role=None)])
    made = plan.messages[2]
    assert is_note(made) and made.text.endswith("D-17") and made.type == "human"


def test_ids_are_deterministic_so_a_rerun_step_makes_the_same_messages() -> None:
    a = plan_edits(history(), [op(["a2", "a3"], "Checked.", role="assistant")])
    b = plan_edits(history(), [op(["a2", "a3"], "Checked.", role="assistant")])
    assert ids(a.messages) == ids(b.messages)


def test_no_operation_changes_nothing() -> None:
    msgs = history()
    plan = plan_edits(msgs, [])
    assert not plan.changed and plan.messages == msgs


INVALID = [
    ("unknown_id", [op(["nope"], "x")]),
    ("duplicate_id", [op(["a2", "a2"], "x", role="assistant")]),
    ("duplicate_id", [op(["a2"], "x"), op(["a2"], "y")]),
    ("missing_field", [{"ids": ["a2"], "role": "user", "new_content": "x"}]),
    ("missing_field", [{"ids": ["a2"], "justification": "j", "role": "user"}]),
    ("malformed", [op([], "x")]),
    ("malformed", [{"ids": "a2", "role": "user", "rationale": "", "new_content": "x"}]),
    ("malformed", ["delete a2"]),
    ("content_not_text", [op(["a2"], {"text": "x"})]),  # type: ignore[arg-type]
    ("content_not_text", [op(["a2"], ["x"])]),  # type: ignore[arg-type]
    ("bad_role", [op(["a2"], "x", role="robot")]),
    ("bad_role", [op(["a2", "a3"], "x", role=None)]),
    ("role_position", [op(["a2", "a3"], "x", role="tool")]),
    ("role_position", [op(["u2"], "x", role="tool")]),
    ("pinned", [op(["sys"], "")]),
    ("pinned", [op(["task"], "Find anything.", role="user")]),
    ("note_protected", [op(["note"], "", role=None)]),
    ("note_protected", [op(["note", "a2"], "merged", role="user")]),
    ("conflict", [op(["r1"], "", role=None), op(["r2"], "short", role="tool")]),
    # One valid operation does not save an invalid one: all or nothing.
    ("unknown_id", [op(["a2", "a3"], "ok", role="assistant"), op(["ghost"], "")]),
]


@pytest.mark.parametrize(("reason", "ops"), INVALID, ids=[r for r, _ in INVALID])
def test_invalid_actions_are_rejected_whole_and_leave_the_history_byte_identical(
    reason: str, ops: list[Any]
) -> None:
    msgs = history()
    before = frozen(msgs)
    with pytest.raises(EditRejected) as caught:
        plan_edits(msgs, ops)
    assert caught.value.reason == reason
    assert frozen(msgs) == before


def test_a_pinned_message_protects_its_tool_exchange() -> None:
    msgs = history()
    pin(msgs[4])  # r1: its call and sibling result come with it
    with pytest.raises(EditRejected) as caught:
        plan_edits(msgs, [op(["r2"], "", role=None)])
    assert caught.value.reason == "pinned"


def test_edit_ops_and_pydantic_models_are_accepted() -> None:
    from langgraph_ctx.strategies.adacom.policy import Modification

    plan = plan_edits(
        history(),
        [
            EditOp(("u2",), None, "why", ""),
            Modification(ids=["a3"], role="assistant", justification="j", new_content="Done."),
        ],
    )
    assert [a.kind for a in plan.applied] == ["delete", "rewrite"]


# -- properties over random histories ----------------------------------------------


def assert_pairs_whole(messages: list[BaseMessage]) -> None:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert calls == answered, (calls - answered, answered - calls)


def random_history(steps: list[tuple[str, int]]) -> list[BaseMessage]:
    out: list[BaseMessage] = [
        SystemMessage("sys", id="sys"),
        HumanMessage("the task", id="task"),
        note(pin(HumanMessage("[Working note]", id="note"))),
    ]
    for n, (kind, width) in enumerate(steps):
        if kind == "user":
            out.append(HumanMessage(f"user {n}", id=f"u{n}"))
        elif kind == "pinned":  # a pinned call: its results are pinned with it
            calls = [{"name": "t", "args": {"k": k}, "id": f"pc{n}.{k}"} for k in range(width)]
            out.append(pin(AIMessage(f"pinned {n}", id=f"p{n}", tool_calls=calls)))
            out += [
                ToolMessage(f"pinned result {n}.{k}", tool_call_id=f"pc{n}.{k}", id=f"p{n}.{k}")
                for k in range(width)
            ]
        else:
            calls = [{"name": "t", "args": {"k": k}, "id": f"c{n}.{k}"} for k in range(width)]
            out.append(AIMessage(f"calls {n}", id=f"a{n}", tool_calls=calls))
            out += [
                ToolMessage(f"result {n}.{k}", tool_call_id=f"c{n}.{k}", id=f"r{n}.{k}")
                for k in reversed(range(width))
            ]
    return out


steps = st.lists(
    st.tuples(st.sampled_from(["user", "tools", "tools", "pinned"]), st.integers(1, 3)),
    min_size=1,
    max_size=12,
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[BaseMessage], list[dict[str, Any]]]:
    msgs = random_history(draw(steps))
    # Mostly distinct targets across operations, so that most actions are valid
    # and the properties are checked on real rewrites, not only on rejections.
    every = [str(m.id) for m in msgs]
    guarded = {"sys", "task", "note"} | {x for x in every if x.startswith("p")}
    pool = draw(st.permutations([x for x in every if x not in guarded]))
    if draw(st.integers(0, 4)) == 0:  # now and then, aim at a pinned message or the note
        pool = [draw(st.sampled_from(sorted(guarded))), *pool]
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        targets, pool = pool[:size], pool[size:] + pool[: draw(st.integers(0, 1))]
        if not targets:
            break
        content = draw(st.sampled_from(["", "new text", "   "]))
        role = draw(st.sampled_from(["user", "assistant", "tool", "system", None]))
        ops.append(op(list(targets), content, role=role))
    return msgs, ops


@settings(max_examples=300, deadline=None)
@given(cases())
@pytest.mark.slow
def test_any_action_keeps_pairs_pinned_and_the_note_or_changes_nothing(
    case: tuple[list[BaseMessage], list[dict[str, Any]]],
) -> None:
    msgs, ops = case
    before = frozen(msgs)
    pinned = [m for m in msgs if m.type == "system" or m.id == "task" or m.id.startswith("p")]
    try:
        plan = plan_edits(msgs, ops)
    except EditRejected:
        assert frozen(msgs) == before
        return
    assert frozen(msgs) == before  # the input is never changed in place
    new = plan.messages
    assert_pairs_whole(new)
    kept = [m for m in new if any(m is p for p in pinned)]
    assert kept == pinned  # every pinned message, itself, in its order
    assert sum(is_note(m) for m in new) == 1
    # Nothing vanishes unaccounted: every original is kept or in `removed`.
    assert {str(m.id) for m in msgs} == {str(m.id) for m in new if m in msgs} | {
        str(m.id) for m in plan.removed
    }
    assert len({str(m.id) for m in new}) == len(new)
