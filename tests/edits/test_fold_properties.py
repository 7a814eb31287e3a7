"""Property tests of BACM's fold on the edit core: for random histories (user turns,
parallel tool calls, results out of order, pinned messages) and random fold actions,
a fold is refused, or it removes exactly the named blocks, keeps every pair whole and
every pinned and current message as it was, and loses nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_ctx import pin
from langgraph_ctx.edits.core import plan_edits
from langgraph_ctx.strategies.bacm.policy import FoldAction, FoldRefused, commit_blocks, fold_ops
from langgraph_ctx.tokens import TokenCounter

COUNTER = TokenCounter()

user_step = st.tuples(st.just("user"), st.booleans())  # pinned?
tool_step = st.tuples(st.just("tools"), st.integers(1, 3), st.booleans())  # calls, reversed?
histories = st.lists(st.one_of(user_step, tool_step), min_size=1, max_size=12)


def build(steps: list[Any]) -> list[BaseMessage]:
    out: list[BaseMessage] = [
        SystemMessage("You audit.", id="sys"),
        HumanMessage("Task.", id="task"),
    ]
    for n, step in enumerate(steps):
        if step[0] == "user":
            message = HumanMessage(f"Turn {n}.", id=f"u{n}")
            out.append(pin(message) if step[1] else message)
            continue
        _, calls, reverse = step
        ids = [f"call{n}.{k}" for k in range(calls)]
        results: list[BaseMessage] = [
            ToolMessage(f"Row {n}.{k}", tool_call_id=i, id=f"r{n}.{k}") for k, i in enumerate(ids)
        ]
        tool_calls = [{"name": "rows", "args": {"k": k}, "id": i} for k, i in enumerate(ids)]
        out += [AIMessage("", tool_calls=tool_calls, id=f"a{n}")]
        out += results[::-1] if reverse else results
    return out


def whole(messages: list[BaseMessage]) -> bool:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    return calls == {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


@settings(max_examples=150, deadline=None)
@given(histories, st.data())
@pytest.mark.slow
def test_a_fold_removes_exactly_the_named_blocks_and_nothing_else(
    steps: list[Any], data: st.DataObject
) -> None:
    messages = build(steps)
    blocks = commit_blocks(messages, COUNTER.count_message)
    ids = [b.id for b in blocks]
    current = frozenset(data.draw(st.sets(st.sampled_from(ids))) if ids else ())
    commit_ids = data.draw(
        st.one_of(
            st.sampled_from(["NONE", "ALL"]),
            st.lists(st.sampled_from([*ids, "c00000"]), max_size=5) if ids else st.just([]),
        )
    )
    action = FoldAction(commit_ids=commit_ids, merged="digest")
    try:
        ops, folded = fold_ops(action, blocks, current, by="test")
    except FoldRefused as exc:
        assert str(exc)  # says why
        return
    plan = plan_edits(messages, ops)
    named = {x for b in blocks if b.id in folded for x in b.message_ids}
    assert {str(m.id) for m in plan.removed} == named
    assert all(not a.widened for a in plan.applied)  # blocks are whole exchanges already
    assert whole(plan.messages)
    kept = {str(m.id): m for m in plan.messages}
    for m in messages:  # nothing lost: kept as it was, or removed to the archive
        assert kept.get(str(m.id)) is m or str(m.id) in named
    for b in blocks:
        if b.id in current:
            assert all(kept[x] is not None for x in b.message_ids)
    assert {"sys", "task"} <= set(kept)
    assert all(str(m.id) in kept for m in messages if m.additional_kwargs.get("lgctx"))
