"""Tiered compression's planner, without a graph: generated histories and budget
figures in, a plan out (property-based). The middleware's behaviour with it is
what tests/middleware/test_compression*.py and test_prepared_compression.py check."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, ToolMessage

from langgraph_ctx.history.structure import split_tiers, turn_starts
from langgraph_ctx.markers import is_summary
from langgraph_ctx.strategies.tiered.planner import BudgetFigures, TierPlan, TierPlanner
from langgraph_ctx.strategies.tiered.settings import TieredSettings
from langgraph_ctx.strategies.tiered.summaries import summary_message
from tests.test_tiers import assert_whole, histories

pytestmark = pytest.mark.slow


def count(message: BaseMessage) -> int:
    return len(message.text) // 4 + 3


@dataclass
class Situation:
    history: list[BaseMessage]
    planner: TierPlanner
    figures: BudgetFigures

    @property
    def raw_used(self) -> int:
        return sum(count(m) for m in self.history)


@st.composite
def situations(draw: st.DrawFn, zone: str = "red") -> Situation:
    """A history (earlier summaries after the task, pins, tool exchanges in any
    order) with budget figures measured on it, and settings within their bounds."""
    history = draw(histories())
    layers = [
        summary_message("fact " * draw(st.integers(1, 400)), seq, "x", covers=[f"old{seq}"])
        for seq in range(1, draw(st.integers(0, 4)) + 1)
    ]
    history = [*history[:1], *layers, *history[1:]]
    low = draw(st.integers(20, 300))
    tiered = TieredSettings(
        target_utilization=draw(st.floats(0.2, 0.9)),
        min_protected_turns=draw(st.integers(1, 4)),
        protected_share=draw(st.floats(0.1, 0.9)),
        expected_ratio=draw(st.floats(1.0, 8.0)),
        summary_tokens=(low, draw(st.integers(low, 3_000))),
        max_summary_layers=draw(st.integers(1, 5)),
        max_summary_share=draw(st.floats(0.05, 0.6)),
        prepare_headroom=draw(st.floats(0.0, 0.5)),
    )
    calibration = draw(st.sampled_from([1.0, 0.8, 1.3]))
    used = math.ceil(sum(count(m) for m in history) * calibration)
    figures = BudgetFigures(
        zone=zone,  # type: ignore[arg-type]
        messages_over=draw(st.booleans()),
        messages_used=used,
        messages_budget=draw(st.integers(100, 40_000)),
        messages_capped=draw(st.booleans()),
        kept_recall=draw(st.integers(0, 300)),
        room=draw(st.integers(50, 40_000)),
        calibration=calibration,
    )
    planner = TierPlanner(tiered, pin_task=draw(st.booleans()))
    return Situation(history, planner, figures)


def decide(s: Situation, **options: bool) -> TierPlan:
    return s.planner.decide(s.history, count, s.figures, **options)


def tokens_after(s: Situation, plan: TierPlan) -> int:
    """Raw message tokens once the plan is applied, each summary at the size the
    summarizer is asked for (what it writes is fitted to it)."""
    work = plan.work
    assert work is not None
    tiers = work.plan.tiers
    kept = [m for m in (*tiers.pinned, *work.plan.keep) if m.type != "system"]
    tokens = sum(count(m) for m in kept)
    tokens -= sum(count(m) - size for m, size in work.compact)
    existing = sum(count(m) for m in tiers.summaries)
    if not work.source:
        return tokens + existing
    return tokens + work.max_tokens + (0 if work.meta else existing)


@settings(max_examples=300, deadline=None)
@given(situations(), st.booleans())
def test_a_plan_never_splits_a_tool_exchange(s: Situation, ahead: bool) -> None:
    work = decide(s, ahead=ahead).work
    assume(work is not None)
    assert work is not None
    assert_whole(work.plan.compress)  # what is summarized is whole...
    assert_whole(work.plan.messages([]))  # ...and so is what stays
    # A compacted result stays in place (same id, same call): it must be one kept.
    stays = {id(m) for m in work.plan.messages([])}
    assert all(isinstance(m, ToolMessage) and id(m) in stays for m, _ in work.compact)


@settings(max_examples=300, deadline=None)
@given(situations(), st.booleans())
def test_a_plan_never_compresses_or_compacts_a_pinned_message(s: Situation, ahead: bool) -> None:
    work = decide(s, ahead=ahead).work
    assume(work is not None)
    assert work is not None
    tiers = split_tiers(s.history, pin_task=s.planner.pin_task)
    # Pinned in its own right; a partner a pin only drags along may be compacted.
    pinned = {id(m) for m in tiers.pinned} - {id(m) for m in tiers.dragged}
    span = {id(m) for m in work.plan.compress}
    for m in work.source:
        assert id(m) not in pinned, m.id
        assert id(m) in span or is_summary(m), m.id  # nothing outside the span
    assert not pinned & {id(m) for m, _ in work.compact}
    assert not pinned & span


@settings(max_examples=400, deadline=None)
@given(situations())
def test_a_plan_meets_the_target_when_it_is_reachable(s: Situation) -> None:
    """Reachable: the pinned messages, the current turn verbatim and a summary at
    its cap fit the goal. Then what is left, each summary at the size asked for,
    is within the goal, up to the smallest summary's size: the span is chosen by
    the expected ratio, and a summary is never asked for less than that size."""
    plan = decide(s)
    assume(plan.work is not None)
    tiers = split_tiers(s.history, pin_task=s.planner.pin_task)
    _, goal = s.planner.line_and_goal(tiers, count, s.figures)
    pinned = sum(count(m) for m in tiers.pinned if m.type != "system")
    current = tiers.rest[turn_starts(tiers.rest)[-1] :] if tiers.rest else []
    cap = s.planner.summary_cap(s.figures)
    assume(pinned + sum(count(m) for m in current) + cap <= goal)
    low = s.planner.settings.summary_tokens[0]
    assert tokens_after(s, plan) <= goal + low
    assert plan.unreachable is None


@settings(max_examples=300, deadline=None)
@given(situations())
def test_a_red_call_left_over_the_line_says_why(s: Situation) -> None:
    """In the red zone the plan compresses, or the messages are within the red
    line already, or it reports the target unreachable: never silently over."""
    plan = decide(s)
    line, _ = s.planner.line_and_goal(
        split_tiers(s.history, pin_task=s.planner.pin_task), count, s.figures
    )
    if plan.work is None:
        raw_used = s.figures.raw(s.figures.messages_used)
        assert raw_used <= line or plan.unreachable is not None


@settings(max_examples=200, deadline=None)
@given(situations())
def test_a_plan_made_ahead_records_nothing(s: Situation) -> None:
    plan = decide(s, ahead=True)
    assert plan.candidates is None and plan.unreachable is None


@settings(max_examples=200, deadline=None)
@given(situations(zone="yellow"))
def test_the_yellow_zone_advises_once_and_compresses_only_when_over(s: Situation) -> None:
    figures = s.figures
    over = figures.messages_over or (
        figures.messages_capped
        and figures.messages_used + figures.kept_recall > figures.messages_budget
    )
    plan, again = decide(s), decide(s, advised=True)
    if over:  # over the messages' allocation: as urgent as the red zone
        assert plan.candidates is None and plan == again
        return
    assert plan.work is None and plan.unreachable is None
    assert again == TierPlan()  # advised already on this approach: nothing
    if plan.candidates is not None:
        span = split_tiers(s.history, pin_task=s.planner.pin_task).rest
        assert plan.candidates.messages <= len(span)
        assert plan.candidates.through in {m.id for m in span}


@settings(max_examples=100, deadline=None)
@given(situations(zone="green"))
def test_the_green_zone_plans_nothing_unless_the_messages_are_over(s: Situation) -> None:
    figures = s.figures
    over = figures.messages_over or (
        figures.messages_capped
        and figures.messages_used + figures.kept_recall > figures.messages_budget
    )
    assume(not over)
    assert decide(s) == TierPlan()


@settings(max_examples=100, deadline=None)
@given(situations())
def test_the_plan_is_a_function_of_its_inputs(s: Situation) -> None:
    """Pure: the same inputs give the same plan, and the history is not touched."""
    before = [(m.id, m.text, dict(m.additional_kwargs)) for m in s.history]
    first, second = decide(s), decide(s)
    assert first == second
    assert [(m.id, m.text, dict(m.additional_kwargs)) for m in s.history] == before
