"""Long texts ranked by their best passage: how archives and recall order originals.

BM25's length normalization, right for texts about one thing, sinks a
3,000-token tool result whose one line answers the question below a two-line
message that only shares the question's wording: that line's match is spread
over the whole result. So every archive indexes passages (a sentence; a line
break always ends one, so a log line or a JSON row is one: :func:`passage_texts`)
and ranks a message by its best passage among all the thread's (the "MaxP" of
passage retrieval). Recall then re-orders the candidates a search returns here
(:class:`PassageRanking`), each passage scored by BM25 against the passages of
all the candidates, and the same scores choose the passages a snippet shows.

The passages of the candidates are the corpus, not the whole archive: every
backend can give the candidates, and among them a query term found in every
passage (the question's own wording, repeated in earlier questions) tells none
apart, while one found in a few picks the passages that answer.

A name is matched whole. Words cannot tell "the invoice for Nakamura Supply" from
the invoice for Whitfield Supply or a contact called Nakamura: each shares words
with the question. So the caller may give the question's ``names`` (its entities:
proper names, ids, dates), and a passage that names more of them outranks any
that names fewer: it gets, for each, more than any passage can score on words,
and the name's own words are not scored again (they would favour the shortest
passages that name it, a heading or a log line, over the row that answers).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import NamedTuple

from langgraph_ctx.retrieval.index import query_terms
from langgraph_ctx.retrieval.text import K1, idf, sentences, stems, tf_weight

__all__ = ["Passage", "PassageRanking", "passage_texts", "passages"]


class Passage(NamedTuple):
    """One sentence of a text, with its terms counted."""

    text: str
    terms: Counter[str]
    length: int


def passage_texts(text: str) -> list[str]:
    """The passages of ``text``, in order: its sentences, a line break always ending
    one. What the archives index (a row per passage) and what recall ranks."""
    return sentences(text)


@lru_cache(maxsize=1_024)
def passages(text: str) -> tuple[Passage, ...]:
    """The passages of ``text``, in order. Cached: an archived original never
    changes, and the same ones come back turn after turn."""
    out = []
    for sentence in passage_texts(text):
        # Stemmed as the archives index them and as query_terms reads the question.
        counts = Counter(stems(sentence))
        out.append(Passage(sentence, counts, sum(counts.values())))
    return tuple(out)


class PassageRanking:
    """BM25 of every passage of ``texts`` for ``query``, their passages as the corpus;
    a passage that names more of ``names`` outranks one that names fewer (see the
    module doc).

    Costs the candidates' length (tokenized once each, then cached), never the
    archive's size.
    """

    def __init__(self, query: str, texts: Sequence[str], names: Collection[str] = ()) -> None:
        # A name counts once, as a name: its words again would favour the shortest
        # passages that name it (a heading, a log line) over the one that answers.
        named = {t for name in names for t in query_terms(name)}
        wanted = [t for t in query_terms(query) if t not in named]
        self._texts = [passages(t) for t in texts]
        every = [p for ps in self._texts for p in ps]
        df = Counter(t for p in every for t in wanted if t in p.terms)
        n = len(every)
        self.weights = {t: idf(n, df[t]) for t in wanted if df[t]}
        """Each query term found in some passage, and its weight (BM25's idf)."""
        avg = (sum(p.length for p in every) / n if n else 0.0) or 1.0
        # BM25 adds less than idf * (k1 + 1) per term: a name is worth more than all words.
        name_worth = 1.0 + sum(self.weights.values()) * (K1 + 1)
        found = [_name(name) for name in names if name.strip()]
        self._scores = [
            [
                sum(
                    w * tf_weight(p.terms[t], p.length, avg)
                    for t, w in self.weights.items()
                    if t in p.terms
                )
                + (name_worth * sum(1 for f in found if f.search(p.text)) if found else 0.0)
                for p in ps
            ]
            for ps in self._texts
        ]

    def best(self, i: int) -> float:
        """The score of text ``i``: its best passage's (0 if it matches nowhere)."""
        return max(self._scores[i], default=0.0)

    def order(self) -> list[int]:
        """The texts' indexes, best passage first; a tie keeps the given order."""
        return sorted(range(len(self._texts)), key=lambda i: -self.best(i))

    def scored(self, i: int) -> list[tuple[str, float]]:
        """Text ``i``'s passages, in order, with their scores."""
        return [(p.text, s) for p, s in zip(self._texts[i], self._scores[i], strict=True)]


def _name(name: str) -> re.Pattern[str]:
    """``name`` as a whole, any case, any spacing: "Nakamura Supply" is not in
    "Nakamura Supplyco" nor "P. Nakamura"."""
    words = (re.escape(w) for w in name.split())
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)
