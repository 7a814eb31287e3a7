"""The fuzz suite at a CI size: random sessions through a real compiled graph
(see ``tests/fuzz_sessions.py`` for what is drawn and what is checked at every
model call). The long run is ``benchmarks/fuzz.py``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_ctx.strategies.registry import STRATEGIES
from tests.fuzz_sessions import FUZZED, NO_STRATEGY, provider_rejects, run_session


@pytest.mark.parametrize("strategy", FUZZED)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(4, 10))
@pytest.mark.slow
def test_random_sessions_keep_every_invariant_at_every_call(
    strategy: str, seed: int, steps: int
) -> None:
    outcome = run_session(seed, steps=steps, strategy=strategy)
    assert outcome.calls or outcome.refused  # the session did run
    assert outcome.violations == [], f"{strategy}, seed {seed}: {outcome.violations}"


def test_every_registered_strategy_is_fuzzed() -> None:
    """A strategy added to the agent's registry joins the fuzz suite by itself."""
    assert set(STRATEGIES) <= set(FUZZED) and NO_STRATEGY in FUZZED


def test_the_orphan_check_catches_both_directions() -> None:
    """The invariant itself must be able to fail."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call = {"name": "f", "args": {}, "id": "call_0"}
    result = ToolMessage("x", tool_call_id="call_0", id="r")
    assert provider_rejects([HumanMessage("t", id="t"), result]) is not None
    assert provider_rejects([AIMessage("", tool_calls=[call], id="c")]) is not None
    pending = [AIMessage("", tool_calls=[call], id="c"), HumanMessage("t", id="t"), result]
    assert provider_rejects(pending) is not None
    assert provider_rejects([AIMessage("", tool_calls=[call], id="c"), result]) is None
