"""Each reflection trigger fires on its signal and not otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_ctx.strategies.arc.signals import (
    CALL_WINDOW,
    TRIGGERS,
    FoldSettings,
    StallState,
    facts_of,
    observe,
    signature,
)

SETTINGS = FoldSettings(count=len, stall_turns=3, memory_full=1_000)


def step(name: str, args: dict[str, Any], result: str, n: int = 0) -> list[BaseMessage]:
    call = {"name": name, "args": args, "id": f"c{n}"}
    return [AIMessage("", tool_calls=[call]), ToolMessage(result, tool_call_id=f"c{n}")]


def run(
    steps: list[list[BaseMessage]], *, changed: bool = True, flagged: bool = False, memory: int = 0
) -> list[tuple[str, ...]]:
    """The triggers each step fires, in order."""
    stall, fired = StallState(), []
    for i, interaction in enumerate(steps):
        found = observe(
            stall,
            interaction,
            turn=i + 1,
            changed=changed,
            flagged=flagged,
            memory_tokens=memory,
            settings=SETTINGS,
        )
        stall = found.stall
        fired.append(found.fired)
    return fired


def test_a_call_repeated_with_the_same_arguments_fires_repeated_call() -> None:
    fired = run(
        [
            step("search", {"q": "Lyon", "page": 1}, "3 hits"),
            step("search", {"q": "Lyon", "page": 2}, "3 hits"),  # other arguments
            step("lookup", {"q": "Lyon", "page": 1}, "3 hits"),  # another tool
            step("search", {"page": 1, "q": "Lyon"}, "3 hits"),  # same, keys reordered
        ]
    )
    assert fired == [(), (), (), ("repeated_call",)]
    again = step("search", {"q": "Lyon", "page": 1}, "3 hits")
    assert run([again, again, again]) == [(), ("repeated_call",), ()]  # once, the second time


def test_a_repeat_is_looked_for_in_a_bounded_window() -> None:
    first = step("search", {"q": "x"}, "")
    others = [step("search", {"q": str(i)}, "") for i in range(CALL_WINDOW)]
    assert run([first, *others, first])[-1] == ()
    assert run([first, *others[1:], first])[-1] == ("repeated_call",)


def test_one_key_with_two_values_fires_contradiction() -> None:
    a = {"order": "A-1"}
    fired = run(
        [
            step("status", a, "status: pending\ncarrier: DHL", 0),
            step("status", {"order": "B-2"}, "status: shipped", 1),  # another order's status
            step("track", a, "status: shipped", 2),  # another call's key
            step("status", a, "carrier: DHL", 3),  # same value again
        ],
        changed=True,
    )
    assert all("contradiction" not in f for f in fired)
    later = run([step("status", a, "status: pending"), step("status", a, "status: shipped")])
    assert "contradiction" in later[1]


def test_json_results_are_keyed_by_record_id() -> None:
    text = '{"orders": [{"id": "A-1", "eta": "Mon"}, {"id": "B-2", "eta": "Tue"}]}'
    assert facts_of("s", text) == {
        "s.orders.A-1.id": "A-1",
        "s.orders.A-1.eta": "Mon",
        "s.orders.B-2.id": "B-2",
        "s.orders.B-2.eta": "Tue",
    }


def test_stall_turns_updates_without_checklist_change_fire_no_progress() -> None:
    steps = [step("search", {"q": str(i)}, "") for i in range(4)]
    assert run(steps, changed=False) == [(), (), ("no_progress",), ("no_progress",)]
    assert run(steps, changed=True) == [(), (), (), ()]


def test_progress_counting_restarts_after_a_reflection() -> None:
    stall = StallState(unchanged=5).reflected()
    assert stall.unchanged == 0 and stall.reflections == 1


@pytest.mark.parametrize(("flagged", "expected"), [(True, ("manager_flag",)), (False, ())])
def test_the_managers_flag(flagged: bool, expected: tuple[str, ...]) -> None:
    assert run([step("a", {}, "")], flagged=flagged) == [expected]


@pytest.mark.parametrize(("tokens", "expected"), [(1_001, ("memory_full",)), (1_000, ())])
def test_a_memory_over_its_cap_fires_memory_full(tokens: int, expected: tuple[str, ...]) -> None:
    assert run([step("a", {}, "")], memory=tokens) == [expected]


def test_triggers_are_reported_in_one_order_and_the_state_round_trips() -> None:
    a = {"k": 1}
    fired = run([step("s", a, "v: 1"), step("s", a, "v: 2")], flagged=True, memory=5_000)
    assert fired[1] == ("repeated_call", "contradiction", "manager_flag", "memory_full")
    assert set(fired[1]) <= set(TRIGGERS)
    state = StallState(turn=4, unchanged=2, calls=("s({})",), facts={"k": "v"}, reflections=1)
    assert StallState.from_json(state.to_json()) == state
    assert signature("s", {"b": 1, "a": 2}) == 's({"a": 2, "b": 1})'
