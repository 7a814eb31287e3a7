"""The lexical index and the MaxScore rounds: exactly BM25's top k, never a scan's worth."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import Doc, LexicalIndex, query_terms, split_words
from langgraph_ctx.retrieval.maxscore import MaxScorePlan, bound
from langgraph_ctx.retrieval.text import idf, stems, tf_weight

WORDS = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "the", "SHP-0042"]


def brute_force(
    docs: dict[str, tuple[str, str]], query: str | list[str], weights: dict[str, float]
) -> dict[str, float]:
    """Weighted BM25 of every doc sharing a term with ``query`` (a question, or its terms
    already): what the index must rank. Texts are counted by their stems, as indexed."""
    wanted = set(query) if isinstance(query, list) else set(query_terms(query))
    counted = {k: Counter(stems(text)) for k, (text, _) in docs.items()}
    if not counted:
        return {}
    n = len(counted)
    avg = sum(sum(c.values()) for c in counted.values()) / n or 1.0
    scores = {}
    for key, c in counted.items():
        length = sum(c.values())
        score = sum(
            idf(n, sum(1 for d in counted.values() if t in d)) * tf_weight(c[t], length, avg)
            for t in wanted
            if t in c
        )
        if score > 0:
            scores[key] = score * weights.get(docs[key][1], 1.0)
    return scores


operations = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "remove"]),
        st.integers(0, 14),  # the key: rewrites and removals hit earlier keys
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
        st.sampled_from(["", "high"]),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    ops=operations,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    limit=st.integers(1, 6),
    high=st.sampled_from([1.0, 1.5, 3.0]),
)
@pytest.mark.slow
def test_search_is_bm25s_exact_top_k_after_any_writes(
    ops: list[tuple[str, int, str, str]], query: str, limit: int, high: float
) -> None:
    index = LexicalIndex()
    docs: dict[str, tuple[str, str]] = {}
    for op, n, text, group in ops:
        key = f"k{n}"
        if op == "add":
            index.add("scope", [Doc(key, text, group)])
            docs[key] = (text, group)
        else:
            index.remove("scope", key)
            docs.pop(key, None)
    weights = {"high": high}
    expected = brute_force(docs, query, weights)
    found = index.search("scope", query, limit=limit, weights=weights)
    assert len(found) == min(limit, len(expected))
    ranked = sorted(expected.values(), reverse=True)
    assert [score for _, score in found] == pytest.approx(ranked[:limit])
    for key, score in found:  # each key with its own weighted BM25
        assert score == pytest.approx(expected[key])


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    within=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    limit=st.integers(1, 6),
)
def test_within_ranks_only_docs_holding_every_word_by_the_other_words(
    texts: list[str], query: str, within: str, limit: int
) -> None:
    index = LexicalIndex()
    index.add("scope", [Doc(f"k{i}", t, owner=f"k{i}") for i, t in enumerate(texts)])
    required = set(query_terms(within))
    holders = {f"k{i}" for i, t in enumerate(texts) if required <= set(stems(t))}
    found = index.search_owners("scope", query, limit=limit, within=within)
    if not required:  # a name of stop words constrains nothing: a plain search
        assert found == index.search_owners("scope", query, limit=limit)
        return
    assert {key for key, _, _ in found} <= holders
    assert len(found) == (min(limit, len(holders)) if query_terms(query) else 0)
    # Scored on the question's other words only (every holder has the name's).
    others = [t for t in query_terms(query) if t not in required]
    expected = brute_force({f"k{i}": (t, "") for i, t in enumerate(texts)}, others, {})
    for key, score, _ in found:
        assert score == pytest.approx(expected.get(key, 0.0))
    scores = [score for _, score, _ in found]
    assert scores == sorted(scores, reverse=True)
    best = max((expected.get(k, 0.0) for k in holders), default=0.0)
    assert not found or scores[0] == pytest.approx(best)


@pytest.mark.slow
def test_a_doc_with_the_rare_term_is_first_when_the_common_terms_pass_the_budget() -> None:
    # Common words in far more docs than a search walks; the answer holds the rare one.
    index = LexicalIndex()
    common = [Doc(f"c{i}", f"shipment update {i}: the vessel left port") for i in range(25_000)]
    index.add("scope", common[:12_000])
    index.add("scope", [Doc("answer", "the vessel Ever Given carries shipment SHP-0042 now")])
    index.add("scope", common[12_000:])
    found = index.search("scope", "Which vessel carries shipment SHP-0042?", limit=3)
    assert found[0][0] == "answer"
    # Every term common: the newest docs that hold them, still the best by BM25 among them.
    assert len(index.search("scope", "shipment vessel port", limit=5)) == 5


def test_scopes_have_their_own_docs_and_statistics() -> None:
    index = LexicalIndex()
    index.add(("t1", ""), [Doc("a", "apple pear"), Doc("b", "apple")])
    index.add(("t2", ""), [Doc("a", "plum")])
    assert [k for k, _ in index.search(("t1", ""), "apple plum")] == ["b", "a"]
    assert [k for k, _ in index.search(("t2", ""), "apple plum")] == ["a"]
    assert index.search(("t3", ""), "apple") == []
    assert index.has(("t2", "")) and not index.has(("t3", ""))


def test_a_rewrite_replaces_the_old_text_and_an_identical_one_keeps_one_doc() -> None:
    index = LexicalIndex()
    index.add("s", [Doc("k", "apple pear")])
    index.add("s", [Doc("k", "apple pear")])
    assert [k for k, _ in index.search("s", "pear", limit=5)] == ["k"]  # one doc, not two
    index.add("s", [Doc("k", "plum")])
    assert index.search("s", "pear") == []
    assert [k for k, _ in index.search("s", "plum")] == ["k"]


def test_many_removals_compact_the_postings() -> None:
    index = LexicalIndex()
    index.add("s", [Doc(f"k{i}", f"apple w{i}") for i in range(3_000)])
    for i in range(2_990):
        index.remove("s", f"k{i}")
    assert sorted(k for k, _ in index.search("s", "apple", limit=50)) == sorted(
        f"k{i}" for i in range(2_990, 3_000)
    )


def test_queries_without_terms_and_bad_limits() -> None:
    index = LexicalIndex()
    index.add("s", [Doc("k", "apple")])
    assert index.search("s", "") == index.search("s", "the of and") == []
    for limit in (0, -1, True, 2.5):
        with pytest.raises(ConfigurationError) as info:
            index.search("s", "apple", limit=limit)  # type: ignore[arg-type]
        assert info.value.field == "limit"


def test_identifiers_split_as_the_tokenizers_split_them() -> None:
    assert query_terms("What was the vessel for SHP-0042, SHP-0042?") == ["vessel", "shp", "0042"]
    assert split_words(["o'brien", "call", "o"]) == ["o", "brien", "call"]


async def test_async_forms_are_the_sync_ones() -> None:
    index = LexicalIndex()
    await index.aadd("s", [Doc("k", "apple pear"), Doc("j", "pear")])
    assert await index.asearch("s", "pear apple") == index.search("s", "pear apple")


# -- MaxScore rounds over an engine ----------------------------------------------------


class Engine:
    """A stand-in for FTS5 or PostgreSQL: lists docs by term and scores them in full."""

    def __init__(self, docs: list[str]) -> None:
        self.docs = {f"d{i}": Counter(stems(t)) for i, t in enumerate(docs)}
        self.n = len(docs)
        self.avg = sum(sum(c.values()) for c in self.docs.values()) / max(self.n, 1) or 1.0
        self.fetched = 0

    def df(self, term: str) -> int:
        return sum(1 for c in self.docs.values() if term in c)

    def score(self, c: Counter[str], query: list[str]) -> float:
        length = sum(c.values())
        return sum(
            idf(self.n, self.df(t)) * tf_weight(c[t], length, self.avg) for t in query if t in c
        )

    def run(self, query: list[str], limit: int, budget: int | None = None) -> MaxScorePlan[str]:
        present = [t for t in query if self.df(t)]
        plan: MaxScorePlan[str] = MaxScorePlan(
            {t: bound(idf(self.n, self.df(t))) for t in present},
            limit,
            sizes={t: self.df(t) for t in present},
            budget=budget,
        )
        while (step := plan.next_round()) is not None:
            new, done = step
            rows = [
                (k, self.score(c, present))
                for k, c in self.docs.items()
                if any(t in c for t in new) and not any(t in c for t in done)
            ]
            self.fetched += len(rows)
            plan.add(rows)
        return plan


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
    limit=st.integers(1, 5),
    budget=st.sampled_from([None, 2, 10]),
)
@pytest.mark.slow
def test_rounds_give_the_exact_top_k_unless_the_budget_cut_them(
    docs: list[str], query: str, limit: int, budget: int | None
) -> None:
    engine = Engine(docs)
    words = query_terms(query)
    plan = engine.run(words, limit, budget)
    everything = sorted(
        (s for c in engine.docs.values() if (s := engine.score(c, words)) > 0), reverse=True
    )
    got = [score for _, score in plan.best()]
    if not plan.cut:
        assert got == pytest.approx(everything[:limit])
    else:
        assert budget is not None and len(got) <= limit
        assert all(s in everything for s in got)


def test_a_rare_term_spares_the_common_terms_rows() -> None:
    docs = [f"apple pear common{i % 3}" for i in range(2_000)] + ["apple SHP-0042 pear"]
    engine = Engine(docs)
    plan = engine.run(query_terms("apple SHP-0042"), limit=1)
    assert plan.best()[0][0] == "d2000" and not plan.cut
    assert engine.fetched == 1  # "apple" is in every doc: its rows were never fetched


def test_the_budget_stops_rounds_and_says_so() -> None:
    docs = [f"apple w{i}" for i in range(50)] + ["pear"] * 3
    engine = Engine(docs)
    plan = engine.run(query_terms("pear apple"), limit=5, budget=10)
    assert plan.cut and engine.fetched == 3  # pear's rows; apple's 50 exceed the budget
    unbounded = Engine(docs).run(query_terms("pear apple"), limit=5)
    assert not unbounded.cut and len(unbounded.best()) == 5
