"""The workload generator: determinism, planted facts and probes, message validity,
the scripted responder (also after compression) and tool result sizes."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_ctx.testing.workloads import (
    NO_CONTEXT,
    PROBE_GAP,
    Fact,
    Turn,
    Workload,
    generate_session,
)

KINDS = {"id", "amount", "name", "constraint", "date"}


def dump(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def carrier_text(turn: Turn, fact: Fact) -> str:
    """Where the fact is said to be planted: the user text or the joined tool results."""
    if fact.where == "user":
        return turn.user
    return "\n".join(s.result for s in turn.tool_steps)


def check_pairing(messages: Sequence[BaseMessage]) -> None:
    """Every tool call is answered by exactly one ToolMessage, right after its AIMessage."""
    i = 0
    while i < len(messages):
        m = messages[i]
        assert not isinstance(m, ToolMessage), f"orphan tool message at {i}: {m.id}"
        if isinstance(m, AIMessage) and m.tool_calls:
            ids = [c["id"] for c in m.tool_calls]
            answers = messages[i + 1 : i + 1 + len(ids)]
            assert all(isinstance(a, ToolMessage) for a in answers)
            assert sorted(a.tool_call_id for a in answers if isinstance(a, ToolMessage)) == sorted(
                i for i in ids if i
            )
            i += len(ids)
        i += 1


def play(w: Workload, upto: int | None = None) -> list[BaseMessage]:
    """Run the script as an agent loop would: ask the responder, run its tool calls."""
    respond = w.responder()
    history: list[BaseMessage] = []
    for turn in w.turns[:upto]:
        history.append(HumanMessage(turn.user, id=f"t{turn.index:04d}-user"))
        reply = respond(history)
        history.append(reply)
        if reply.tool_calls:
            for k, call in enumerate(reply.tool_calls):
                result = w.tool_result(call["name"], call["args"])
                history.append(
                    ToolMessage(
                        result,
                        tool_call_id=call["id"] or "",
                        name=call["name"],
                        id=f"t{turn.index:04d}-tool-{k}",
                    )
                )
            history.append(respond(history))
    return history


def test_same_seed_same_workload() -> None:
    a, b = generate_session(120, seed=7), generate_session(120, seed=7)
    assert a == b
    assert dump(a.messages()) == dump(b.messages())


def test_different_seeds_differ() -> None:
    a, b = generate_session(60, seed=1), generate_session(60, seed=2)
    assert a.turns[0].user != b.turns[0].user
    assert {f.value for f in a.facts} != {f.value for f in b.facts}
    assert sum(x.user == y.user for x, y in zip(a.turns, b.turns, strict=True)) < 5


def test_task_statement_plants_the_budget_and_a_rule() -> None:
    for seed in range(10):
        task = generate_session(3, seed=seed).turns[0]
        assert task.index == 0 and task.probe is None and not task.tool_steps
        assert 2 <= len(task.planted) <= 3
        assert {f.kind for f in task.planted} >= {"amount", "constraint"}
        assert all(f.where == "user" and f.value in task.user for f in task.planted)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 42])
def test_facts_are_planted_verbatim_and_unique(seed: int) -> None:
    w = generate_session(300, seed=seed)
    assert w.facts == tuple(f for t in w.turns for f in t.planted)
    for fact in w.facts:
        assert fact.kind in KINDS and fact.where in ("user", "tool")
        assert fact.value in carrier_text(w.turns[fact.turn], fact), fact
    assert len({f.value for f in w.facts}) == len(w.facts)
    assert len({f.key for f in w.facts}) == len(w.facts)
    assert len({f.question for f in w.facts}) == len(w.facts)
    # Roughly one fact every two or three turns, of every kind, in both places.
    assert 300 / 4 < len(w.facts) < 300 / 1.8
    assert {f.kind for f in w.facts} == KINDS
    assert {f.where for f in w.facts} == {"user", "tool"}


def test_fact_values_look_real() -> None:
    w = generate_session(400, seed=5)
    patterns = {
        "id": r"(ACC-\d{5}|INV-\d{4}-\d{4}|BKG-\d{6})",
        "amount": r"\$\d{1,3}(,\d{3})*(\.\d{2})?",
        "name": r"[A-Z][a-z]+ [A-Z][a-z]+",
        "date": r"\d{4}-\d{2}-\d{2}",
        "constraint": r"[a-z].{10,}",
    }
    for fact in w.facts:
        assert re.fullmatch(patterns[fact.kind], fact.value), fact


@pytest.mark.parametrize("seed", [0, 9, 123])
def test_probes_ask_about_old_facts_and_are_answered(seed: int) -> None:
    w = generate_session(300, seed=seed, probe_rate=0.15)
    probing = [t for t in w.turns if t.probe is not None]
    assert len(probing) >= 10
    assert w.probes() == [t.probe for t in probing]
    assert len({p.key for p in w.probes()}) == len(probing)  # each fact asked once
    for turn in probing:
        fact = turn.probe
        assert fact is not None and fact in w.facts
        assert fact.turn <= turn.index - PROBE_GAP
        assert turn.user == fact.question
        assert fact.value in turn.answer
        assert not turn.tool_steps and not turn.planted  # answered from memory alone


def test_no_probes_when_rate_is_zero() -> None:
    assert generate_session(200, seed=3, probe_rate=0.0).probes() == []


def test_messages_pair_every_tool_call() -> None:
    w = generate_session(200, seed=11)
    messages = w.messages()
    check_pairing(messages)
    ids = [m.id for m in messages]
    assert len(set(ids)) == len(ids)
    n_calls = sum(len(t.tool_steps) for t in w.turns)
    assert sum(isinstance(m, ToolMessage) for m in messages) == n_calls > 0
    assert len(messages) == sum(2 + (1 + len(t.tool_steps) if t.tool_steps else 0) for t in w.turns)
    first = messages[:4]
    assert first[0].id == "t0000-user" and first[0].content == w.turns[0].user
    assert first[1].id == "t0000-answer"
    assert dump(w.messages(50)) == dump(messages[: len(w.messages(50))])
    assert w.messages(0) == []


def test_message_ids_follow_the_turn_scheme() -> None:
    w = generate_session(40, seed=4)
    turn = next(t for t in w.turns if len(t.tool_steps) >= 1)
    ours = [m for m in w.messages() if (m.id or "").startswith(f"t{turn.index:04d}-")]
    expected = [f"t{turn.index:04d}-user", f"t{turn.index:04d}-call"]
    expected += [f"t{turn.index:04d}-tool-{k}" for k in range(len(turn.tool_steps))]
    assert [m.id for m in ours] == [*expected, f"t{turn.index:04d}-answer"]
    assert [s.call_id for s in turn.tool_steps] == [
        f"call_{turn.index:04d}_{k}" for k in range(len(turn.tool_steps))
    ]


def test_responder_reproduces_the_scripted_flow() -> None:
    w = generate_session(120, seed=21)
    assert dump(play(w)) == dump(w.messages())


def test_responder_finds_the_turn_after_compression() -> None:
    w = generate_session(120, seed=8)
    respond = w.responder()
    for turn in [t for t in w.turns[30:] if t.tool_steps][:10]:
        kept = w.messages(turn.index)[-6:]  # everything older was compressed
        old = w.turns[turn.index - 10].user  # a summary quoting an older request verbatim
        summary = SystemMessage(f"[Conversation Summary] Earlier the user said: {old}")
        history: list[BaseMessage] = [summary, *kept, HumanMessage(turn.user)]
        calls = respond(history)
        assert [c["id"] for c in calls.tool_calls] == [s.call_id for s in turn.tool_steps]
        assert [c["args"] for c in calls.tool_calls] == [s.args for s in turn.tool_steps]
        # A system message after the user's (a recall note, say) does not change the step.
        noted = respond([*history, SystemMessage("[Recalled Memory] nothing relevant")])
        assert noted.tool_calls == calls.tool_calls
        history.append(calls)
        history += [ToolMessage(s.result, tool_call_id=s.call_id) for s in turn.tool_steps]
        answer = respond(history)
        assert answer.content == turn.answer and not answer.tool_calls


def test_responder_answers_turns_without_tools_directly() -> None:
    w = generate_session(80, seed=2)
    respond = w.responder()
    turn = next(t for t in w.turns[1:] if not t.tool_steps)
    reply = respond([SystemMessage("[Conversation Summary] ..."), HumanMessage(turn.user)])
    assert reply.content == turn.answer and not reply.tool_calls


def test_responder_answers_when_the_user_message_was_compressed_away() -> None:
    w = generate_session(80, seed=2)
    turn = next(t for t in w.turns if len(t.tool_steps) >= 2)
    tail = w.messages(turn.index + 1)[-(len(turn.tool_steps) + 2) : -1]  # call + results
    assert isinstance(tail[-1], ToolMessage)
    reply = w.responder()([SystemMessage("[Conversation Summary] ..."), *tail[1:]])
    assert reply.content == turn.answer


def test_responder_without_a_known_turn() -> None:
    respond = generate_session(30, seed=1).responder()
    assert respond([]).content == NO_CONTEXT
    assert respond([HumanMessage("Something the script never said.")]).content == NO_CONTEXT
    # Block content is read as text too.
    w = generate_session(30, seed=1)
    blocks = HumanMessage([{"type": "text", "text": w.turns[0].user}])
    assert w.responder()([blocks]).content == w.turns[0].answer


def test_tool_result_lookup() -> None:
    w = generate_session(100, seed=6)
    for turn in w.turns:
        for step in turn.tool_steps:
            assert w.tool_result(step.name, dict(reversed(list(step.args.items())))) == step.result
    calls = [s for t in w.turns for s in t.tool_steps]
    assert len({(s.name, json.dumps(s.args, sort_keys=True)) for s in calls}) == len(calls)
    step = calls[0]
    odd: list[tuple[str, dict[Any, Any]]] = [
        ("no_such_tool", {}),
        (step.name, {**step.args, "extra": 1}),
        (step.name, {1: "mixed", "key": "types"}),  # unsortable keys
        (step.name, {"obj": object()}),
    ]
    for name, args in odd:
        error = json.loads(w.tool_result(name, args))
        assert "error" in error


@pytest.mark.parametrize("bounds", [(400, 2400), (300, 540), (1000, 1400), (2000, 8000)])
def test_result_sizes_stay_within_bounds(bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    w = generate_session(200, seed=13, tool_rate=0.9, result_chars=bounds)
    sizes = [len(s.result) for t in w.turns for s in t.tool_steps]
    assert sizes and all(lo <= n <= hi for n in sizes), (min(sizes), max(sizes))
    assert len(set(sizes)) > len(sizes) // 3  # sizes vary, not one fixed length
    for fact in w.facts:  # trimming never cuts a planted value
        assert fact.value in carrier_text(w.turns[fact.turn], fact)


@pytest.mark.parametrize("bounds", [(100, 2000), (1000, 1100), (2400, 400)])
def test_bounds_too_tight_are_refused(bounds: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        generate_session(10, result_chars=bounds)


def test_results_are_realistic_and_varied() -> None:
    w = generate_session(300, seed=17)
    by_name: dict[str, list[str]] = {}
    for step in (s for t in w.turns for s in t.tool_steps):
        by_name.setdefault(step.name, []).append(step.result)
    assert set(by_name) == set(w.tool_names) == {"query_orders", "search_logs", "fetch_document"}
    for result in by_name["query_orders"]:
        rows = json.loads(result)
        assert isinstance(rows, list) and rows and all("order_id" in r for r in rows)
    lines = [line for r in by_name["search_logs"] for line in r.splitlines()]
    for result in by_name["search_logs"]:
        stamps = [line.split(" ", 1)[0] for line in result.splitlines()]
        assert stamps == sorted(stamps)
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s) for s in stamps)
    assert all(r.startswith("# ") and "\n\n" in r for r in by_name["fetch_document"])
    # Filler is assembled, not repeated: lines and paragraphs are nearly all distinct.
    assert len(set(lines)) > 0.95 * len(lines)
    paragraphs = [p for r in by_name["fetch_document"] for p in r.split("\n\n")[1:]]
    assert len(set(paragraphs)) > 0.95 * len(paragraphs)


def test_user_texts_are_unique() -> None:
    w = generate_session(1000, seed=3)
    assert len({t.user for t in w.turns}) == len(w.turns)


def test_a_thousand_turn_session() -> None:
    w = generate_session(1000, seed=99)
    assert len(w.turns) == 1000 and [t.index for t in w.turns] == list(range(1000))
    assert len(w.probes()) > 50
    check_pairing(w.messages())


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    turns=st.integers(1, 60),
    tool_rate=st.floats(0, 1),
    probe_rate=st.floats(0, 1),
)
def test_invariants_hold_for_any_parameters(
    seed: int, turns: int, tool_rate: float, probe_rate: float
) -> None:
    w = generate_session(turns, seed=seed, tool_rate=tool_rate, probe_rate=probe_rate)
    assert len(w.turns) == turns
    for turn in w.turns:
        assert len(turn.tool_steps) <= 3
        if turn.probe is not None:
            assert turn.probe.turn <= turn.index - PROBE_GAP
            assert turn.probe.value in turn.answer
    for fact in w.facts:
        assert fact.value in carrier_text(w.turns[fact.turn], fact)
    if tool_rate == 0:
        assert not any(t.tool_steps for t in w.turns)
    check_pairing(w.messages())
    assert dump(play(w)) == dump(w.messages())


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 10_000),
    st.sampled_from(
        [
            ("[step c1a2b3]\n[Context budget: used 1,200 of 3,000 tokens.]\n", ""),  # BACM
            ("", "\n\n[plan] look the order up, then answer"),  # think's note
            ("[Recalled Memory] nothing\n", "\n(per-call context)"),  # placement
        ]
    ),
)
def test_responder_finds_the_turn_when_layers_add_text_to_the_user_message(
    seed: int, added: tuple[str, str]
) -> None:
    """Under think or BACM the last user message carries more than the turn's text:
    an exact match fell through to the previous turn's call, and every reply came a
    turn late. The same script plays the same, whatever text is added around it."""
    w = generate_session(12, seed=seed)
    before, after = added
    respond = w.responder()
    history: list[BaseMessage] = []
    for turn in w.turns:
        history.append(HumanMessage(before + turn.user + after, id=f"t{turn.index:04d}-user"))
        reply = respond(history)
        if turn.tool_steps:
            assert [c["id"] for c in reply.tool_calls] == [s.call_id for s in turn.tool_steps]
            history.append(reply)
            history += [ToolMessage(s.result, tool_call_id=s.call_id) for s in turn.tool_steps]
            reply = respond(history)
        assert reply.content == turn.answer and not reply.tool_calls
        history.append(reply)


def test_responder_answers_a_turn_whose_text_holds_a_later_turns_text() -> None:
    """pg_load's o-0285 (seed crc32('0285')): turn 29 says an update with a fact added,
    turn 30 the same update alone, so turn 29's text holds turn 30's. Matched by
    containment, the latest turn won and turn 29 got turn 30's reply: its own answer
    was never made and the load check counted it missing. A quote of turn 29 in turn
    30's message still leaves turn 30 the one asked."""
    w = generate_session(50, seed=zlib.crc32(b"0285"), result_chars=(600, 1_800))
    early, late = w.turns[29], w.turns[30]
    assert late.user in early.user and not early.tool_steps and not late.tool_steps
    respond = w.responder()
    for marker in ("", "[o-0285] "):
        assert respond([HumanMessage(marker + early.user)]).content == early.answer
        assert respond([HumanMessage(marker + late.user)]).content == late.answer
    quoted = HumanMessage(f"[Recalled] {early.user}\n[o-0285] {late.user}")
    assert respond([quoted]).content == late.answer
