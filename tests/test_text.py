"""The one text module: words, terms, sentences and BM25, as every caller sees them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_ctx.retrieval.text import (
    BM25,
    STOP_WORDS,
    bm25,
    content_words,
    sentence_starts,
    sentences,
    terms,
    words,
)

# --- sentences ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Smith met Mr. J. R. Ewing at 5 p.m. in St. Louis. He agreed.",
            ["Dr. Smith met Mr. J. R. Ewing at 5 p.m. in St. Louis.", "He agreed."],
        ),
        (
            "Bring fruit, e.g. apples, i.e. something fresh. Then go.",
            ["Bring fruit, e.g. apples, i.e. something fresh.", "Then go."],
        ),
        ("Pack pens, paper, etc. Then leave.", ["Pack pens, paper, etc.", "Then leave."]),
        ("The U.S. economy grew. It slowed.", ["The U.S. economy grew.", "It slowed."]),
        ("She moved to the U.S. Later she left.", ["She moved to the U.S.", "Later she left."]),
        (
            "Acme Inc. paid $3.5 million on Jan. 5. Done.",
            ["Acme Inc. paid $3.5 million on Jan. 5.", "Done."],
        ),
        (
            "We shipped v1.2.3 today. It costs 3.5 dollars.",
            ["We shipped v1.2.3 today.", "It costs 3.5 dollars."],
        ),
        ("Well... I am not sure. Maybe later.", ["Well... I am not sure.", "Maybe later."]),
        ("Wait\u2026 what? No way!", ["Wait\u2026 what?", "No way!"]),
        (
            "Write to maria@northwind.com now. Thanks.",
            ["Write to maria@northwind.com now.", "Thanks."],
        ),
        ("See Fig. 3 and No. 5 for details. OK?", ["See Fig. 3 and No. 5 for details.", "OK?"]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        (
            "Prof. Müller arrived. Émile left.",
            ["Prof. Müller arrived.", "Émile left."],
        ),
        ("- item one\n- item two\n\nNext part.", ["- item one", "- item two", "Next part."]),
        (
            "東京に行きました。大阪も。",
            ["東京に行きました。", "大阪も。"],
        ),
        ("", []),
        ("  \n ", []),
    ],
)
def test_sentences_keep_abbreviations_initials_and_numbers_whole(
    text: str, expected: list[str]
) -> None:
    assert sentences(text) == expected


def test_sentence_starts_index_the_text_itself() -> None:
    text = "Dr. Müller came.  Then Bob left.\nAnd so on."
    starts = sentence_starts(text)
    assert sorted(text[i : i + 4] for i in starts) == ["And ", "Dr. ", "Then"]


@given(st.text(st.sampled_from(list("ab .!?\néD3")), max_size=40))
def test_sentences_lose_no_character(text: str) -> None:
    assert "".join("".join(sentences(text)).split()) == "".join(text.split())
    assert all(s == s.strip() and "\n" not in s for s in sentences(text))


# --- words and terms ----------------------------------------------------------


def test_words_keep_case_accents_digits_and_inner_marks() -> None:
    text = "Dr. Müller's follow-up on v2 in Łódź, 3.5 don\u2019t"
    text += " search_tools 東京"
    assert words(text) == [
        "Dr",
        "Müller's",
        "follow-up",
        "on",
        "v2",
        "in",
        "Łódź",
        "3",
        "5",
        "don\u2019t",
        "search",
        "tools",
        "東京",
    ]


def test_terms_split_compounds_cut_possessives_and_drop_stop_words() -> None:
    assert terms("Ann\u2019s plan: we don\u2019t ship") == ["ann", "plan", "ship"]
    assert terms("What's Bob's follow-up? We don't know, Zürich_Office.") == [
        "bob",
        "follow",
        "up",
        "know",
        "zürich",
        "office",
    ]
    assert content_words("the budget, the BUDGET and a car for Bob's") == ["budget", "car", "bob"]
    # A compound is one concept where texts are compared, and two terms where ranked.
    assert content_words("a follow-up call") == ["follow-up", "call"]
    assert all(w == w.casefold() for w in STOP_WORDS)


# --- BM25 ---------------------------------------------------------------------


def test_bm25_matches_possessives_and_ignores_contraction_pieces() -> None:
    docs = ["Tom's car is red.", "Bob plans a trip to Oslo.", "Weather report."]
    scores = bm25("What's Bob's plan for the trip?", docs)
    assert scores[1] == 1.0
    # "'s" used to be the term "s": Tom's car matched a question about Bob.
    assert scores[0] == 0.0 and scores[2] == 0.0


def test_bm25_prefers_rarer_terms_and_shorter_docs() -> None:
    docs = ["invoice", "invoice payment", "invoice payment overdue reminder sent twice"]
    scores = bm25("overdue invoice", docs)
    assert scores.index(1.0) == 2  # the only doc with the rare term
    assert scores[0] > scores[1] > 0  # same match, the shorter doc first
    assert bm25("nothing here", docs) == [0.0, 0.0, 0.0]
    assert bm25("invoice", []) == []


def test_an_index_ranks_like_the_one_shot_function() -> None:
    docs = ["alpha beta", "beta gamma gamma", "delta", ""]
    index = BM25(docs)
    for query in ("beta", "gamma delta", "alpha alpha beta", "zeta", ""):
        assert index.scores(query) == bm25(query, docs)
