"""Ranking by best passage, and the snippet recall cuts from it."""

from __future__ import annotations

from langgraph_ctx.middleware._snippets import excerpt
from langgraph_ctx.retrieval.passages import PassageRanking, passages
from langgraph_ctx.tokens import TokenCounter

QUESTION = "What is the freight booking reference for Brennan Textiles?"


def rows(fact_at: int) -> str:
    """Order rows of one customer; each note shares a query word, one row has the fact."""
    out = [
        f'{{"order_id": "SO-{i:04d}", "customer": "Brennan Textiles", '
        f'"note": "Finance updated the freight schedule for week {i}."}}'
        for i in range(20)
    ]
    out.insert(
        fact_at,
        '{"order_id": "SO-9999", "customer": "Brennan Textiles", "booking_ref": "BKG-556383"}',
    )
    return "\n".join(out)


def test_a_long_text_ranks_by_its_best_passage_not_its_length() -> None:
    long = "\n".join(f"Line {i}: the crates were counted and stacked." for i in range(60))
    long += "\nThe freight booking reference for Brennan Textiles is BKG-556383."
    texts = [
        "What is the freight booking reference for Brennan Foods?",
        long,
        "Crates were counted.",
    ]
    ranking = PassageRanking(QUESTION, texts)
    assert ranking.order() == [1, 0, 2]
    assert ranking.best(2) == 0.0  # no query term in it
    # Each a stem, as every index holds them ("booking" and "booked" are one).
    assert set(ranking.weights) == {"freight", "book", "refer", "brennan", "textil"}


def test_ties_keep_the_given_order_and_no_text_is_no_ranking() -> None:
    same = "The freight booking reference is pending."
    assert PassageRanking(QUESTION, [same, same, "nothing here"]).order() == [0, 1, 2]
    assert PassageRanking(QUESTION, []).order() == []
    assert PassageRanking("the of and", ["The freight is late."]).weights == {}


def test_passages_are_lines_and_sentences_and_cached() -> None:
    text = 'First line. Second sentence.\n{"row": 1}'
    assert [p.text for p in passages(text)] == ["First line.", "Second sentence.", '{"row": 1}']
    assert passages(text) is passages(text)


def test_a_snippet_shows_the_row_with_the_rare_term_not_the_first_with_as_many() -> None:
    # Every row shares two or three query words ("freight", the customer's name); the
    # fact's row shares "booking", which no other row has: it is the one to show.
    counter = TokenCounter()
    for fact_at in (0, 11, 20):
        text = rows(fact_at)
        ranking = PassageRanking(QUESTION, [text])
        shown = excerpt(text, ranking.scored(0), ranking.weights, 40, counter)
        assert "BKG-556383" in shown, (fact_at, shown)
        assert counter.count_text(shown) <= 40


def test_a_passage_that_names_the_thing_asked_about_comes_first() -> None:
    question = "What was the invoice number for the Nakamura Supply order?"
    texts = [
        "The invoice number for the Whitfield Supply order is INV-2023-4173.",
        '{"customer": "Nakamura Supply", "contact": "P. Okafor", "invoice": "INV-2025-7770"}',
        "P. Nakamura sent the invoice number for the supply order.",
    ]
    words_only = PassageRanking(question, texts)
    assert words_only.order()[-1] == 1  # the fewest of the question's words
    named = PassageRanking(question, texts, names=["Nakamura Supply"])
    assert named.order()[0] == 1  # the name whole, not its words apart
    assert PassageRanking(question, texts, names=["nakamura   supply"]).order()[0] == 1
    assert PassageRanking(question, texts, names=["Nakamura Sup"]).order() == words_only.order()


def test_a_snippet_leads_with_the_passage_the_search_matched() -> None:
    # Ranked among the candidates alone, the freight rows come first; the archive's search
    # matched the message by its booking row (over the whole thread), and that row leads.
    counter = TokenCounter()
    text = rows(11)
    booking = text.splitlines()[11]
    plain = PassageRanking("freight schedule", [text])
    assert "BKG-556383" not in excerpt(text, plain.scored(0), plain.weights, 40, counter)
    shown = excerpt(text, plain.scored(0), plain.weights, 40, counter, first=booking)
    assert shown.startswith(booking) and counter.count_text(shown) <= 40
