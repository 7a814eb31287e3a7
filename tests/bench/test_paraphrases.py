"""The paraphrase recall set (issue 34) holds what its benchmark claims of it."""

from __future__ import annotations

import pytest
from harness import paraphrases as module
from harness.paraphrases import paraphrases

from langgraph_ctx.retrieval.index import query_terms


def test_the_set_has_sixty_facts_a_third_sharing_no_word() -> None:
    pairs = paraphrases()
    assert len(pairs) >= 60
    unshared = [p for p in pairs if not p.shared]
    assert 3 * len(unshared) >= len(pairs)
    # As search reads them: a question of this kind has no term its fact is indexed under.
    for p in unshared:
        assert not set(query_terms(p.question)) & set(query_terms(p.fact)), p.question


def test_a_set_that_breaks_its_claims_fails_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    good = list(module._SET)
    fact, question, _ = good[0]
    monkeypatch.setattr(module, "_SET", [(fact, question, ("Nothing in common here.",)), *good[1:]])
    with pytest.raises(AssertionError, match="shares no word"):
        paraphrases()
    monkeypatch.setattr(module, "_SET", good[:59])
    with pytest.raises(AssertionError, match="fewer than 60"):
        paraphrases()
