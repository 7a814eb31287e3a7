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


def test_langmem_recall_writes_what_it_summarized_into_the_system_prompt(
    session, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """langmem's quickstart recall, as prompt_cache measures it: what summarize_messages
    took out comes back as memories in the first (system) message, found by the last
    message, so that message changes from call to call."""
    from harness import runner
    from harness.recorder import Recorder
    from harness.strategies import Strategy, _peer
    from langchain_core.messages import SystemMessage

    prompts: list[list] = []  # type: ignore[type-arg]

    class Keeping(Recorder):
        def observe(self, messages) -> None:  # type: ignore[no-untyped-def]
            super().observe(messages)
            prompts.append(list(messages))

    monkeypatch.setattr(runner, "Recorder", Keeping)
    strategy = Strategy("langmem-recall", "langmem + recall", _peer("build_langmem_recall"))
    run_pair(strategy, [session], window=WINDOW, backend="memory", tally=TokenTally())
    assert prompts and all(isinstance(p[0], SystemMessage) for p in prompts)
    assert prompts[0][0].text.endswith("<memories>\n\n</memories>")  # nothing summarized yet
    filled = [p for p in prompts if not p[0].text.endswith("<memories>\n\n</memories>")]
    assert filled, "no memory was ever recalled"
    for prompt in filled:
        _, _, memories = prompt[0].text.partition("<memories>\n")
        lines = memories.removesuffix("\n</memories>").split("\n")
        rest = "\n".join(m.text for m in prompt[1:])
        # Each memory is a summarized message's text: one no longer in the prompt.
        assert any(line.removeprefix("- ")[:80] not in rest for line in lines)
    assert len({p[0].text for p in filled}) > 1  # the system message changes with the query
