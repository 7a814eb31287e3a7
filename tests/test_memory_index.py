"""Memory search through an index: every memory ranked, any scale, levels, the store as truth."""

from __future__ import annotations

import pytest
from langgraph.store.memory import InMemoryStore

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.memory import ROOT, MemoryBank, namespace
from langgraph_ctx.storage.memory_index import SQLiteMemoryIndex
from tests.test_memory import HashEmbeddings

# -- any scale ------------------------------------------------------------------------------

PLANTED = {
    0: ("The loading dock code is 4471.", "What is the code of the loading dock?"),
    4_999: ("Invoices for Acme go out in EUR.", "Which currency do Acme invoices use?"),
    49_999: ("The backup generator lives in room B12.", "Where is the backup generator?"),
    99_999: ("Maria prefers calls after 3 pm.", "When does Maria prefer calls?"),
}


@pytest.mark.slow
def test_the_best_match_is_found_wherever_it_sits_among_100_000_memories() -> None:
    # The 1st, the 5,000th, the 50,000th and the newest: the old lexical search ranked
    # only the first 2,000 of a scope, so three of these were never found.
    texts = [
        f"Shift log {i}: pump {i % 89} pressure checked on line {i % 97}." for i in range(100_000)
    ]
    for at, (fact, _) in PLANTED.items():
        texts[at] = fact
    bank = MemoryBank()
    bank.remember_many(("plant",), texts)
    for fact, question in PLANTED.values():
        found = bank.search(("plant",), question, limit=3)
        assert found[0].text == fact, (question, [m.text for m in found])
        assert found[0].relevance == 1.0


def test_the_newest_of_many_matches_is_ranked_like_the_first() -> None:
    bank = MemoryBank()
    bank.remember_many(("u",), [f"note {i} about the weather" for i in range(3_000)])
    bank.remember(("u",), "note about the invoice currency: EUR")
    assert bank.search(("u",), "invoice currency")[0].text.endswith("EUR")


# -- the index's behaviour, in memory ---------------------------------------------------------


def test_levels_boost_the_ranking_and_relevance_stays_the_bm25() -> None:
    bank = MemoryBank()
    bank.remember(("u",), "Invoices go out in EUR.", level="observation")
    bank.remember(("u",), "Invoices go out in EUR, always.", level="framework")
    found = bank.search(("u",), "invoices EUR")
    assert [m.level for m in found] == ["framework", "observation"]
    assert max(m.relevance for m in found) == 1.0
    for m in found:
        assert m.score == pytest.approx(m.relevance * bank.boosts[m.level])


def test_banks_on_one_store_share_its_index_and_read_what_it_held() -> None:
    store = InMemoryStore()
    writer = MemoryBank(store)
    writer.remember(("u",), "The audit is due in March.")
    assert MemoryBank(store).search(("u",), "audit due")[0].text == "The audit is due in March."
    # Written to the store before any bank touched the scope: read once, then indexed.
    store.put(
        namespace(ROOT, ("v",)),
        "k1",
        {"text": "Deploys freeze on Fridays.", "level": "principle", "source": "x", "scope": ["v"]},
    )
    later = MemoryBank(store)
    assert [m.key for m in later.search(("v",), "deploy freeze Fridays")] == ["k1"]


def test_the_store_stays_the_truth() -> None:
    bank = MemoryBank()
    memory = bank.remember(("u",), "The vault code is 1234.")
    bank.store.delete(namespace(ROOT, ("u",)), memory.key)
    assert bank.search(("u",), "vault code") == []
    bank.remember(("u",), "The vault code is 1234.", key="vault")
    bank.remember(("u",), "The safe holds gold.", key="vault")  # rewritten under its key
    assert bank.search(("u",), "vault code") == []
    assert [m.text for m in bank.search(("u",), "safe gold")] == ["The safe holds gold."]


def test_bad_input_is_refused_before_anything_is_written() -> None:
    bank = MemoryBank()
    with pytest.raises(ConfigurationError, match="key"):
        bank.remember_many(("u",), ["a fact", "another fact"], key="same")
    with pytest.raises(ConfigurationError, match="text"):
        bank.remember_many(("u",), ["a fact", "  "])
    with pytest.raises(ConfigurationError, match="scope"):
        bank.remember_many((), ["a fact"])
    assert bank.store.search(namespace(ROOT, ("u",))) == []
    assert bank.search(("u",), "fact") == [] and bank.search(("u",), "") == []
    with pytest.raises(ConfigurationError, match="scope"):
        bank.search((), "fact")


def test_lexical_scan_is_deprecated_and_an_index_needs_a_store_without_one() -> None:
    with pytest.warns(DeprecationWarning, match="lexical_scan"):
        MemoryBank(lexical_scan=100)
    semantic = InMemoryStore(index={"embed": HashEmbeddings(), "dims": 64, "fields": ["text"]})
    with pytest.raises(ConfigurationError) as info:
        MemoryBank(semantic, index=SQLiteMemoryIndex())
    assert info.value.field == "MemoryBank.index"
    assert MemoryBank(semantic).index is None


# Every index's shared behaviour (ranking, scopes, async, reopen, several banks on one
# index) is checked on every backend by tests/storage/conformance/test_memory_index.py.
