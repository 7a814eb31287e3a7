"""Budget settings, zones and rebalancing."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_ctx import Budget, ConfigurationError, Zones, rebalance
from langgraph_ctx.budget import COMPONENTS, measure


def test_defaults_are_the_papers_128k_table() -> None:
    b = Budget()
    assert (b.window, b.system, b.messages, b.tools, b.auxiliary) == (
        128_000,
        4_000,
        70_000,
        12_000,
        20_000,
    )
    assert (b.output_reserve, b.safety_margin) == (16_000, 6_000)
    assert b.allocated_total + b.output_reserve + b.safety_margin == b.window


def test_other_windows_scale_the_shares() -> None:
    b = Budget.for_window(32_000)
    assert (b.system, b.messages, b.tools, b.auxiliary, b.output_reserve, b.safety_margin) == (
        1_000,
        17_500,
        3_000,
        5_000,
        4_000,
        1_500,
    )
    assert Budget.for_window(32_000, tools=1_000).tools == 1_000


def test_window_from_the_model_profile() -> None:
    class Model:
        profile: ClassVar[dict[str, int]] = {"max_input_tokens": 200_000}

    assert Budget.from_model(Model()).window == 200_000
    assert Budget.from_model(object()).window == 128_000


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"messages": 200_000}, "Budget.window"),  # allocations larger than the window
        ({"tools": -1}, "Budget.tools"),
        ({"window": 0}, "Budget.window"),
        ({"auxiliary": 1.5}, "Budget.auxiliary"),
        ({"zones": "tight"}, "Budget.zones"),
    ],
)
def test_invalid_settings_are_rejected_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Budget(**kwargs)
    assert info.value.field == field
    assert field in str(info.value)


@pytest.mark.parametrize(("yellow", "red"), [(0.9, 0.8), (0.7, 0.7), (0.0, 0.5), (0.5, 1.2)])
def test_thresholds_out_of_order_are_rejected(yellow: float, red: float) -> None:
    with pytest.raises(ConfigurationError, match="yellow < red"):
        Zones(yellow=yellow, red=red)


def test_budget_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        Budget(128_000)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("utilization", "zone"),
    [
        (0.0, "green"),
        (0.6999, "green"),
        (0.70, "yellow"),
        (0.8499, "yellow"),
        (0.85, "red"),
        (1.3, "red"),
    ],
)
def test_zone_boundaries(utilization: float, zone: str) -> None:
    assert Zones().classify(utilization) == zone


def test_zones_are_per_model() -> None:
    assert Zones(yellow=0.8, red=0.95).classify(0.9) == "yellow"


def test_zone_from_total_tokens() -> None:
    b = Budget()
    assert measure(b, {"messages": 89_599}).zone == "green"  # 0.69999
    assert measure(b, {"messages": 89_600}).zone == "yellow"  # exactly 0.70
    assert measure(b, {"messages": 108_800}).zone == "red"  # exactly 0.85


def test_red_line_is_capped_at_the_prompt_limit() -> None:
    b = Budget.for_window(64_000)
    assert b.prompt_limit == 53_000 < int(0.85 * 64_000) == 54_400
    assert b.red_line == min(int(b.zones.red * b.window), b.prompt_limit) == 53_000
    loose = Budget.for_window(128_000, output_reserve=4_000, safety_margin=2_000)
    assert loose.red_line == min(108_800, 122_000) == 108_800  # the zone wins


def test_a_prompt_at_the_prompt_limit_is_red_under_085() -> None:
    b = Budget.for_window(64_000)
    at_limit = measure(b, {"system": 1_000, "messages": b.prompt_limit - 1_000})
    assert at_limit.utilization < b.zones.red  # 0.828: utilization alone says yellow
    assert at_limit.utilization == at_limit.total / b.window
    assert at_limit.zone == "red"
    assert measure(b, {"messages": b.red_line - 1}).zone == "yellow"


def test_surplus_goes_to_messages_first() -> None:
    alloc = {"system": 4_000, "messages": 70_000, "tools": 12_000, "auxiliary": 20_000}
    used = {"system": 1_000, "messages": 80_000, "tools": 2_000, "auxiliary": 25_000}
    # Surplus: system 3,000 + tools 10,000 = 13,000. Messages need 10,000, auxiliary 5,000.
    out = rebalance(alloc, used)
    assert out["messages"] == 80_000
    assert out["auxiliary"] == 23_000  # only the 3,000 left after messages
    assert sum(out.values()) == sum(alloc.values())
    assert out["system"] >= used["system"] and out["tools"] >= used["tools"]


def test_nothing_moves_when_nobody_is_over() -> None:
    alloc = {"system": 10, "messages": 10, "tools": 10, "auxiliary": 10}
    assert rebalance(alloc, {"messages": 5}) == alloc


def test_tools_are_served_last() -> None:
    alloc = {"system": 0, "messages": 100, "tools": 100, "auxiliary": 100}
    used = {"messages": 150, "tools": 150, "auxiliary": 0}
    out = rebalance(alloc, used)
    assert out == {"system": 0, "messages": 150, "tools": 150, "auxiliary": 0}


@given(
    alloc=st.fixed_dictionaries({c: st.integers(0, 50_000) for c in COMPONENTS}),
    used=st.fixed_dictionaries({c: st.integers(0, 80_000) for c in COMPONENTS}),
)
def test_rebalancing_invariants(alloc: dict[str, int], used: dict[str, int]) -> None:
    out = rebalance(alloc, used)  # type: ignore[arg-type]
    assert sum(out.values()) == sum(alloc.values())  # reserve and margin untouched
    for c in COMPONENTS:
        if used[c] <= alloc[c]:
            assert used[c] <= out[c] <= alloc[c]  # donors keep what they use
        else:
            assert alloc[c] <= out[c] <= used[c]  # receivers get at most their deficit
    assert out["system"] <= alloc["system"]  # the system prompt is never grown
    # Messages are served first: if they are still short, nobody else received anything.
    if used["messages"] > out["messages"]:
        assert out["auxiliary"] <= alloc["auxiliary"] and out["tools"] <= alloc["tools"]
