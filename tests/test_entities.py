"""Entities: names in any script, sentence starts, and retention by whole words."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from langgraph_ctx.compression._entities import _whole_word_in, entities, norm, retention


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Müller at the Charité in Zürich",
            {"Müller", "Charité", "Zürich"},
        ),
        (
            "Ólafur flew from Łódź to São Paulo.",
            {"Ólafur", "Łódź", "São Paulo"},
        ),
        (
            "We read Émile Zola with Søren Kierkegaard.",
            {"Émile Zola", "Søren Kierkegaard"},
        ),
        (
            "Flights to Αθήνα and Москва, via ÅRHUS.",
            {"Αθήνα", "Москва", "ÅRHUS"},
        ),
        # CJK has no case: no name is guessed from it, and it splits no Latin name.
        ("東京で田中さんに会った。", set()),
        ("We met 田中 at Tokyo Station.", {"Tokyo Station"}),
        # A title is no name, and the period after it ends no sentence: "Hope" is a
        # common word, a name here; "Nobody" does start a sentence after "p.m.".
        ("Ask Mrs. Hope about it.", {"Hope"}),
        ("It was 5 p.m. Nobody came.", {"5 p.m."}),
        ("Mr. J. R. Ewing and the US team.", {"Ewing", "US"}),
        ("- INV-7 Customer asked again.", {"INV-7"}),  # a list item starts like a sentence
    ],
)
def test_names_in_any_script(text: str, expected: set[str]) -> None:
    assert entities(text) == expected


def regex_retention(originals: Sequence[str], summary: str) -> float:
    """The previous implementation, one regex per entity: the reference."""
    wanted = {norm(e) for e in originals}
    if not wanted:
        return 1.0
    hay = norm(summary)
    kept = sum(1 for e in wanted if re.search(rf"(?<!\w){re.escape(e)}(?!\w)", hay))
    return kept / len(wanted)


def regex_whole_word_in(needle: str, hay: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", hay) is not None


@pytest.mark.parametrize(
    ("originals", "summary", "expected"),
    [
        ([], "anything", 1.0),
        (["12"], "in 2012 we paid", 0.0),  # not inside a longer number
        (["12"], "2012 and 12.", 1.0),  # a later hit at a boundary counts
        (["$12,480.50"], "paid 12480.50 usd", 1.0),  # separators and symbols ignored
        (["ACC-48213"], "see acc-48213_x", 0.0),  # "_" is a word character
        (["ACC-48213"], "(acc-48213)", 1.0),
        (["a-a"], "ba-a-a", 1.0),  # only the overlapping occurrence is whole
        (["aa"], "aaa", 0.0),
        (["Zoë"], "zoë's", 1.0),
        (["Zoë"], "zoëa", 0.0),
        (["x1"], "x1é", 0.0),  # non-ASCII letters are word characters
        (["x1"], "x1²", 0.0),  # so are superscript digits, as for \w
        (["Bank of America", "AWS"], "bank  of america on aws", 1.0),
        (["Bank of America", "GCP"], "bank of america", 0.5),
        (["$", "€ "], "a - b", 1.0),  # normalizes to "": found between two non-words
        (["$"], "ab", 0.0),  # "" with a word character on one side at every position
        (["$"], "", 1.0),
    ],
)
def test_retention_table(originals: list[str], summary: str, expected: float) -> None:
    assert retention(originals, summary) == expected
    assert regex_retention(originals, summary) == expected


# Few distinct characters, so that hits, overlaps and boundaries are common.
_ALPHABET = st.sampled_from(list("ab1_ -.,$é²ßİ\n"))
_TEXT = st.text(_ALPHABET, max_size=40)


@given(needle=st.text(_ALPHABET, max_size=4), hay=_TEXT)
@example(needle="", hay="")
@example(needle="a-a", hay="ba-a-a")
def test_whole_word_in_agrees_with_the_regex(needle: str, hay: str) -> None:
    assert _whole_word_in(needle, hay) == regex_whole_word_in(needle, hay)


@given(data=st.data(), summary=_TEXT)
def test_retention_agrees_with_the_regex(data: st.DataObject, summary: str) -> None:
    # Entities cut from the summary itself (likely found) and made up (likely not).
    cuts = st.tuples(st.integers(0, len(summary)), st.integers(0, 6)).map(
        lambda t: summary[t[0] : t[0] + t[1]]
    )
    originals = data.draw(st.lists(st.one_of(cuts, st.text(_ALPHABET, max_size=6)), max_size=8))
    assert retention(originals, summary) == regex_retention(originals, summary)


@given(
    originals=st.lists(st.text(max_size=8), max_size=6),
    summary=st.text(max_size=60),
)
def test_retention_agrees_with_the_regex_on_any_text(originals: list[str], summary: str) -> None:
    assert retention(originals, summary) == regex_retention(originals, summary)
