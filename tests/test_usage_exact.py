"""Every strategy reports the usage of what it sends, exactly.

The prompt ceiling (:meth:`PreflightCheck.fit`) trusts the usage report the
layers leave when it is clearly under the limit, and counts nothing then: a
layer that under-reports would let a prompt over the limit reach the provider.
So, through the fuzz suite's random sessions (a real compiled graph, the
scripted model), for every registered strategy and none:

- right after the strategy, its report equals a fresh count of the view it
  passes on (and of the node's system prompt);
- at the model, the final report is never under a fresh count of the prompt
  the model received (the node adds its system prompt and places it itself,
  which may cost a few tokens less than counted, never more).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import SystemMessage

from langgraph_ctx import Middleware, View, as_middleware
from langgraph_ctx.pipeline import CallContext
from langgraph_ctx.strategies.base import ContextStrategy
from langgraph_ctx.tokens import TokenCounter
from tests.fuzz_sessions import FUZZED, run_session

COUNTER = TokenCounter()
PLACED_SAVING = 2 * 3
"""Most a node's placement may save on what was counted: merging its system prompt
into the leading system message drops a message's overhead (3), twice at most (the
summaries' merge too)."""


class UsageProbe:
    """A layer right after the strategy that compares its report with a fresh count."""

    def __init__(self) -> None:
        self.after_strategy: list[tuple[int, int]] = []
        """(reported, counted) at each call."""

    def layer(self) -> Middleware:
        # Between the strategy (30) and recall (40): in the fuzz sessions, the
        # strategy's view as it left it.
        return as_middleware(
            priority=ContextStrategy.priority + 1, nodes=["call_llm"], name="probe_after_strategy"
        )(self._after_strategy)

    def _after_strategy(self, view: View, ctx: CallContext, call_next: Callable[..., Any]) -> Any:
        counted = sum(COUNTER.count_message(m) for m in view.get("messages") or ())
        counted += _fixed(ctx)
        self.after_strategy.append((ctx.measured().raw_total, counted))
        return call_next(view)


def _fixed(ctx: CallContext) -> int:
    """What the prompt has besides the view's messages: the node's system prompt, tools."""
    prompt = COUNTER.count_message(SystemMessage(ctx.system_prompt)) if ctx.system_prompt else 0
    return prompt + sum(COUNTER.count_tool(t) for t in ctx.tools)


@pytest.mark.parametrize("strategy", FUZZED)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(4, 10))
@pytest.mark.slow
def test_the_usage_report_is_what_is_sent(strategy: str, seed: int, steps: int) -> None:
    probe = UsageProbe()
    outcome = run_session(seed, steps=steps, strategy=strategy, probes=[probe.layer()])
    assert outcome.violations == [], f"{strategy}, seed {seed}: {outcome.violations}"
    wrong = [(i, r, c) for i, (r, c) in enumerate(probe.after_strategy) if r != c]
    assert not wrong, f"{strategy}, seed {seed}: (call, reported, counted) {wrong}"
    # The report each call ends with (the fuzz sessions record it: under the prompt
    # sent is a violation there), against the prompt the model received.
    for i, (reported, sent) in enumerate(zip(outcome.reported, outcome.prompt_tokens, strict=True)):
        assert sent <= reported <= sent + PLACED_SAVING, (
            f"{strategy}, seed {seed}, call {i}: reported {reported}, the model got {sent}"
        )


def test_the_probe_catches_a_layer_that_under_reports() -> None:
    """A layer that adds a message without counting it fails the check above."""
    from langchain_core.messages import HumanMessage

    probe = UsageProbe()

    @as_middleware(priority=20, nodes=["call_llm"], name="sloppy")
    def sloppy(view: View, ctx: CallContext, call_next: Callable[..., Any]) -> Any:
        extra = HumanMessage("an unmeasured reminder 📦", id="sloppy")
        return call_next(view.replace(messages=[*view["messages"], extra]))

    # Seed 0: a prompt well under the limit, which the ceiling trusts without counting.
    outcome = run_session(0, steps=4, strategy="none", probes=[sloppy, probe.layer()])
    assert any(reported < counted for reported, counted in probe.after_strategy)
    assert any("usage" in v for v in outcome.violations)
