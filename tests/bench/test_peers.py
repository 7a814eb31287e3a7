"""The baselines run through their real packages, with our summarizer where they take one."""

from __future__ import annotations

import pytest
from harness import STRATEGIES, TokenTally
from harness.metrics import measure
from harness.runner import run_pair
from harness.synthetic import typed_sessions

from langgraph_ctx.budget import Budget

# The peers are real dependencies of the test command (the dev extra): no skip.

WINDOW = 4_000
LIMIT = min(int(WINDOW * 0.85), Budget.for_window(WINDOW).prompt_limit)


@pytest.fixture(scope="module")
def session():  # type: ignore[no-untyped-def]
    (s,) = typed_sessions("analysis", seed=1, count=1)
    return s


def test_the_session_needs_management(session) -> None:  # type: ignore[no-untyped-def]
    pair = run_pair(STRATEGIES["none"], [session], window=WINDOW, backend="memory",
                    tally=TokenTally())  # fmt: skip
    assert max(pair.runs[0].prompt_tokens) > 2 * LIMIT


@pytest.mark.parametrize("name", ["summarization", "langmem"])
def test_summarizing_peers_use_the_logged_extractive_summarizer(session, name: str) -> None:  # type: ignore[no-untyped-def]
    pair = run_pair(STRATEGIES[name], [session], window=WINDOW, backend="memory",
                    tally=TokenTally())  # fmt: skip
    m = measure(pair, WINDOW)
    assert m.summaries >= 1 and m.summary_tokens > 0  # our log saw every summary
    assert m.reductions >= 1
    assert max(pair.runs[0].prompt_tokens) < 2 * LIMIT
    assert m.managed_ms > 0


def test_context_editing_clears_tool_results(session) -> None:  # type: ignore[no-untyped-def]
    pair = run_pair(STRATEGIES["context-editing"], [session], window=WINDOW, backend="memory",
                    tally=TokenTally())  # fmt: skip
    m = measure(pair, WINDOW)
    assert m.reductions >= 1 and m.summaries == 0
