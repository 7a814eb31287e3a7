"""The prompt ceiling's reduction (``fit_prompt``), on random histories: what it
returns is what a provider accepts and keeps everything pinned, whatever it is
asked to free."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage

from langgraph_ctx.compression.ceiling import fit_prompt
from langgraph_ctx.history.structure import repair_pairs, split_tiers
from langgraph_ctx.strategies.tiered.summaries import summary_message
from langgraph_ctx.tokens import TokenCounter
from tests.fuzz_sessions import provider_rejects
from tests.test_tiers import histories

COUNTER = TokenCounter()
SIZES = (0, 0, 40, 1_500)
"""Words of a summary put first in the history (0: none)."""


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(1, 6_000), st.booleans(), st.booleans(), st.sampled_from(SIZES))
@pytest.mark.slow
def test_a_fitted_prompt_keeps_pairs_and_pinned_and_frees_what_it_says(
    history: list[BaseMessage], over: int, history_only: bool, memo: bool, summary_words: int
) -> None:
    prompt, _ = repair_pairs(history)  # as pre-flight hands it on
    summary = summary_message("earlier facts " * summary_words, 1, "x", covers=["x"])
    if summary_words:  # where placement puts summaries: first
        prompt = [summary, *prompt]
    assert provider_rejects(prompt) is None
    fit = fit_prompt(
        prompt,
        over,
        COUNTER.count_message,
        COUNTER,
        history=history_only,
        memo={} if memo else None,
    )
    assert provider_rejects(fit.messages) is None  # no pair split, in either direction
    tiers = split_tiers(prompt)
    dragged = {id(m) for m in tiers.dragged}
    pinned = [p for p in tiers.pinned if id(p) not in dragged]
    assert all(any(m is p for m in fit.messages) for p in pinned)  # untouched, in place
    # A pinned message's tool partners stay in the prompt (reduced in place, maybe).
    sent = {str(m.id) for m in fit.messages}
    assert all(str(p.id) in sent for p in tiers.dragged)
    ids = [str(m.id) for m in prompt]
    assert [str(m.id) for m in fit.messages] == [i for i in ids if i not in fit.omitted]
    if history_only:
        assert not fit.omitted  # a persisted history never loses a message here
    saved = COUNTER.count_messages(prompt) - COUNTER.count_messages(fit.messages)
    assert saved == fit.tokens_before - fit.tokens_after
    if fit.over <= 0:
        assert saved >= over  # it freed what it was asked to
    assert {str(m.id) for m in fit.originals} == set(fit.reduced)
    if summary_words:
        assert summary.id not in fit.omitted  # cut for the prompt at most, never left out
        if history_only:
            assert fit.messages[0] is summary  # a persisted history's summary is the strategy's
        elif fit.over > 0:
            assert summary.id in fit.cut  # refused only with the summary cut to its header
