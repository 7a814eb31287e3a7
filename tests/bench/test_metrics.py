"""The metric functions on numbers small enough to check by hand."""

from __future__ import annotations

import pytest
from harness.metrics import (
    calls_before_overflow,
    common_ratio,
    longevity,
    reduction_ratios,
    utilization,
)
from harness.runner import SessionRun


def test_utilization_is_prompt_over_window() -> None:
    assert utilization([13, 40, 77], 100) == [0.13, 0.40, 0.77]


def test_longevity_counts_the_calls_made_before_the_first_overflow() -> None:
    assert calls_before_overflow([13, 40, 77], 67) == 2
    assert calls_before_overflow([13, 40, 67], 67) is None  # at the limit still fits
    assert calls_before_overflow([90], 67) == 0


def test_a_reduction_is_a_prompt_smaller_than_the_last_one_plus_what_arrived() -> None:
    # Growth 13 -> 40 (+27 arrived) is no reduction; 77 expected (40 + 37) but 60 sent is one.
    assert reduction_ratios([13, 40, 60], [13, 27, 37]) == [pytest.approx(77 / 60)]
    assert reduction_ratios([13, 40, 76], [13, 27, 37]) == []  # within the tolerance


def run(steps: list[float], tokens: list[int] | None = None) -> SessionRun:
    r = SessionRun("s", step_seconds=steps, turns=list(range(len(steps))))
    r.prompt_tokens = tokens or [1] * len(steps)
    return r


def test_ratios_to_the_baseline_use_only_the_calls_both_made() -> None:
    ours = [run([2.0, 2.0, 2.0]), run([1.0])]
    # The baseline's first session was cut after 2 calls: ours' third call does not count.
    none = [run([1.0, 1.0]), run([1.0, 5.0])]
    assert common_ratio(ours, none, "step_seconds") == pytest.approx((2 + 2 + 1) / (1 + 1 + 1))


def test_longevity_claims_from_hand_made_runs() -> None:
    turns = 400
    ours = SessionRun("long", turns=list(range(turns)), prompt_tokens=[100] * turns)
    ours.prompt_tokens[10] = 108  # peak
    ours.managed_seconds = [0.001] * turns
    ours.managed_seconds[300:] = [0.0015] * 100  # the last 100 turns: 1.5 ms
    ours.step_seconds = [0.01] * turns
    none = SessionRun("long", turns=[0, 0, 1, 1, 2], prompt_tokens=[50, 60, 90, 95, 130])
    claim = longevity(none, ours, window=128)
    # Budget.for_window(128): prompt limit 128 - 16 - 6 = 106; the window itself is 128.
    assert (claim.none_overflow_call, claim.none_overflow_turn) == (4, 3)
    assert claim.none_window_turn == 3
    assert claim.ours_turns == turns
    assert claim.ours_peak == pytest.approx(108 / 128)
    assert (claim.early_ms, claim.late_ms) == (pytest.approx(1.0), pytest.approx(1.5))
