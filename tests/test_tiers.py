"""Tier planning never splits a tool call from its results (property-based)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_ctx import pin
from langgraph_ctx.history.structure import on_topic, plan_compression, safe_cuts, split_tiers


@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    """Random valid histories: parallel calls, runs of tool-calling assistant
    messages whose results arrive later and in any order, pinned messages."""
    out: list[BaseMessage] = []
    serial = 0
    for t in range(draw(st.integers(1, 12))):
        out.append(HumanMessage(f"user {t} " * draw(st.integers(1, 30)), id=f"u{t}"))
        pending: list[ToolMessage] = []
        for _ in range(draw(st.integers(0, 3))):  # a run of tool-calling messages
            calls = []
            for _ in range(draw(st.integers(1, 3))):  # parallel calls
                serial += 1
                calls.append({"name": "f", "args": {"n": serial}, "id": f"k{serial}"})
                pending.append(
                    ToolMessage(
                        "r" * draw(st.integers(1, 200)), tool_call_id=f"k{serial}", id=f"r{serial}"
                    )
                )
            out.append(AIMessage("", tool_calls=calls, id=f"c{serial}"))
            if draw(st.booleans()):  # results right away, or after the whole run
                out.extend(draw(st.permutations(pending)))
                pending = []
        out.extend(draw(st.permutations(pending)))
        out.append(AIMessage(f"answer {t}", id=f"a{t}"))
    for i in draw(st.lists(st.integers(0, len(out) - 1), max_size=3)):
        pin(out[i])
    return out


def assert_whole(messages: list[BaseMessage]) -> None:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert calls == results, (calls - results, results - calls)


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 5_000), st.integers(1, 4), st.none() | st.integers(0, 2_000))
@pytest.mark.slow
def test_no_plan_ever_orphans_a_call_or_a_result(
    history: list[BaseMessage], free: int, min_turns: int, cap: int | None
) -> None:
    count = lambda m: len(m.text) // 4 + 3  # noqa: E731
    plan = plan_compression(
        history,
        count,
        free_tokens=free,
        expected_ratio=4.0,
        min_turns=min_turns,
        max_protected_tokens=300,
        summary_cap=cap,
    )
    assert_whole(plan.compress)  # what gets summarized is whole...
    assert_whole(plan.messages([]))  # ...and so is what stays
    kept = {id(m) for m in plan.messages([])} | {id(m) for m in plan.compress}
    assert kept == {id(m) for m in history}  # every message is accounted for


@settings(max_examples=200, deadline=None)
@given(histories())
@pytest.mark.slow
def test_pinned_messages_and_their_partners_stay(history: list[BaseMessage]) -> None:
    tiers = split_tiers(history)
    pinned_ids = {m.id for m in tiers.pinned}
    assert history[0].id in pinned_ids  # the task
    assert_whole(tiers.pinned)


@given(histories())
@pytest.mark.slow
def test_cuts_inside_a_tool_exchange_are_unsafe(history: list[BaseMessage]) -> None:
    cuts = safe_cuts(history)
    assert cuts[0] and cuts[-1]
    for i, ok in enumerate(cuts):
        if ok:
            left, right = history[:i], history[i:]
            left_calls = {c["id"] for m in left if isinstance(m, AIMessage) for c in m.tool_calls}
            right_results = {m.tool_call_id for m in right if isinstance(m, ToolMessage)}
            assert not left_calls & right_results


def test_a_summary_cap_means_a_shorter_span_frees_the_same_room() -> None:
    """With the summaries at their cap, a new span cannot make them grow (they are
    consolidated), so every token compressed is freed: the plan takes less."""
    count = lambda m: len(m.text) // 4 + 3  # noqa: E731
    summary = SystemMessage("earlier facts " * 100, id="s1")
    summary.additional_kwargs["lgctx"] = {"summary": {"seq": 1, "through": "x"}}
    history: list[BaseMessage] = [HumanMessage("the task", id="task"), summary]
    for t in range(20):
        history += [HumanMessage(f"turn {t} " * 40, id=f"u{t}"), AIMessage("ok", id=f"a{t}")]
    options = {"free_tokens": 600, "expected_ratio": 2.0, "max_protected_tokens": 300}
    uncapped = plan_compression(history, count, **options)
    capped = plan_compression(history, count, summary_cap=count(summary), **options)
    assert 0 < len(capped.compress) < len(uncapped.compress)
    freed = sum(count(m) for m in capped.compress)
    assert freed >= 600  # no growth expected: the span itself is what is freed


def _tool_turn(t: int, size: int) -> list[BaseMessage]:
    call = {"name": "search", "args": {"q": str(t)}, "id": f"call{t}"}
    return [
        HumanMessage(f"subject{t} detail{t}", id=f"u{t}"),  # each turn off topic
        AIMessage("", tool_calls=[call], id=f"c{t}"),
        ToolMessage("result " * size, tool_call_id=f"call{t}", id=f"r{t}"),
        AIMessage(f"answer {t}", id=f"a{t}"),
    ]


def test_the_token_cap_wins_over_the_turn_floor_down_to_the_current_turn() -> None:
    """Three tool-heavy turns can outgrow the whole message budget: then fewer are
    protected, so compression can bring the history back under it."""
    count = lambda m: len(m.text) // 4 + 3  # noqa: E731
    history: list[BaseMessage] = [HumanMessage("the task", id="task")]
    for t in range(6):
        history += _tool_turn(t, 200)
    options = {"free_tokens": 10_000, "expected_ratio": 4.0, "min_turns": 3}
    roomy = plan_compression(history, count, max_protected_tokens=2_000, **options)
    assert roomy.keep[0].id == "u3"  # the floor: three turns
    tight = plan_compression(history, count, max_protected_tokens=800, **options)
    assert tight.keep[0].id == "u4"  # two turns (~370 tokens each) fit under 800
    tiny = plan_compression(history, count, max_protected_tokens=10, **options)
    assert tiny.keep[0].id == "u5"  # never less than the current turn
    assert_whole(tiny.compress)


def test_topic_overlap_counts_whole_words_of_any_script() -> None:
    # An ASCII-only tokenizer read "Zürich" as "rich": one topic with "Rich clients".
    assert not on_topic(
        HumanMessage("Book flights to Zürich"), HumanMessage("Rich clients only"), 0.12
    )
    assert on_topic(HumanMessage("Hotels in Zürich?"), HumanMessage("Restaurants in Zürich"), 0.12)
    # Function words are no shared topic.
    assert not on_topic(
        HumanMessage("What about the invoice?"), HumanMessage("What about the weather?"), 0.12
    )
