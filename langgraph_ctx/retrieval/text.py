"""The package's one text module: words, terms, the stop list, sentences and BM25.

Recall, tool search, the topic-change test of tiered compression, the
``think`` node's gap check, the extractive summarizer and entity extraction
all read text through these functions, so a word means the same thing
everywhere. Two tokenizations, because callers need two things:

- :func:`words`: words as written (case, digits, accents, inner apostrophes
  and hyphens kept: "Müller", "don't", "follow-up", "v2"), for code that looks
  at shape and case (entities, telegraphic notes);
- :func:`terms`: lower-cased words without stop words, for code
  that matches text against text (BM25, topic overlap). "Bob's" and
  "follow-up" come apart here, so that "Bob" and "follow up" match them.

Search goes one step further: :func:`stems` are terms reduced to their English
stem ("taxes" and "tax" are ``tax``, "anniversaries" and "anniversary" are
``anniversari``), so a question finds a fact however either inflects it. The stemmer
is Snowball's English (Porter2, ``snowballstemmer``), because it is the algorithm
PostgreSQL's ``snowball`` dictionary runs: the in-process index, SQLite (which
indexes the terms this module writes) and PostgreSQL (which stems in the server)
then hold the same terms for the same text, and rank alike.

Offline and model-free: sentence boundaries come from ``sentencex`` (rules and
abbreviation lists compiled into the wheel; nothing is downloaded at run time).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import sentencex  # type: ignore[import-untyped]
import snowballstemmer  # type: ignore[import-untyped]

WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")
"""A word: letters and digits of any script, with inner ``'`` and ``-``; ``_`` separates
("search_tools" is two). For rewriting text word by word (``WORD.sub``)."""
# For matching, a hyphen separates too, and "'s" goes: every "x's" contraction
# ("what's", "it's") is a stop word without it, and a possessive is its owner.
_TERM = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_S = re.compile(r"'s\b")

_STOP_WORDS = """
a an the this that these those some any each every all both either neither no none such
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves
i'm i've i'd i'll you're you've you'd you'll he's she's it's we're we've we'd we'll they're
they've they'd they'll there's that's what's who's where's here's how's let's let
what which who whom whose when where why how
am is are was were be been being do does did doing have has had having
can could will would shall should may might must
not nor never cannot don't doesn't didn't isn't aren't wasn't weren't won't wouldn't can't
couldn't shouldn't hasn't haven't hadn't
of in on at to for with by from as into onto about than after before since until while
and or but so if then because although though unless whether
also just there here now too more like please thanks thank
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS.split())
"""Function words (and "please", "thanks"): what ranking and overlap tests ignore.
Lower case, apostrophes straight."""

_LANGUAGE = "en"  # sentencex's abbreviation list; other scripts' stops work under it too


def words(text: str) -> list[str]:
    """Words as written: case, digits and accents kept; inner ``'`` and ``-`` too."""
    return WORD.findall(text)


def terms(text: str) -> list[str]:
    """Lower-cased words, stop words dropped, "'s" cut and compounds split: what text is
    matched on ("Bob's follow-up" gives ``bob``, ``follow``, ``up``)."""
    lowered = text.casefold()
    if "'" in lowered or "\u2019" in lowered:
        lowered = _S.sub("", lowered.replace("\u2019", "'"))
    return [t for t in _TERM.findall(lowered) if t not in STOP_WORDS]


_ENGLISH = snowballstemmer.stemmer("english")
_ENGLISH_LOCK = threading.Lock()  # a Snowball stemmer keeps its word in its own fields


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    with _ENGLISH_LOCK:
        stemmed: str = _ENGLISH.stemWord(word)
    return stemmed


def stem(term: str) -> str:
    """A term's English stem (Snowball's Porter2, as PostgreSQL's ``english_stem``):
    "taxes" -> ``tax``, "booked" -> ``book``. Each part around an apostrophe is stemmed
    alone, so cutting a stem at apostrophes (as the SQL engines' tokenizers do) gives
    the stems of the parts."""
    if "'" in term:
        return "'".join(_stem(part) for part in term.split("'"))
    return _stem(term)


def stems(text: str) -> list[str]:
    """The :func:`stem` of each of ``text``'s :func:`terms`, in order, repeats kept: what
    every search index holds of a text, and what a question is matched on."""
    return [stem(t) for t in terms(text)]


def content_words(text: str) -> list[str]:
    """Distinct lower-cased words of three or more characters, no stop words, "'s" cut,
    in order of first appearance: the concepts two texts can share. Unlike :func:`terms`,
    a compound stays whole: "follow-up" is one concept, and "up" none."""
    out: dict[str, None] = {}
    for word in WORD.findall(text.casefold().replace("\u2019", "'")):
        word = word.removesuffix("'s")
        if len(word) > 2 and word not in STOP_WORDS:
            out[word] = None
    return list(out)


def _segments(text: str) -> list[str]:
    # sentencex is lossless: its segments add up to ``text``, whitespace included.
    segments: list[str] = sentencex.segment(_LANGUAGE, text)
    return segments


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped; a line break always ends one.

    Abbreviations, initials, decimals, version numbers and ellipses do not end
    a sentence: "Dr. Smith met Mr. J. R. Ewing at 5 p.m. in St. Louis." is one.
    """
    out: list[str] = []
    for segment in _segments(text):
        out.extend(s for line in segment.split("\n") if (s := line.strip()))
    return out


def sentence_starts(text: str) -> set[int]:
    """Indexes in ``text`` where a sentence's first non-space character is."""
    starts: set[int] = set()
    pos = 0
    for segment in _segments(text):
        lead = len(segment) - len(segment.lstrip())
        if lead < len(segment):
            starts.add(pos + lead)
        pos += len(segment)
    return starts


K1 = 1.2
"""BM25's term-frequency saturation: a word's fifth use in a text counts about half as
much as its first."""
B = 0.75
"""BM25's length normalization: a match in a long text counts less than in a short one."""


def idf(docs: int, df: int) -> float:
    """BM25's inverse document frequency of a term found in ``df`` of ``docs`` texts:
    high for rare terms, never negative (Lucene's form, so a common term still counts)."""
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


def tf_weight(tf: int, length: int, avg_length: float, *, k1: float = K1, b: float = B) -> float:
    """BM25's weight of a term used ``tf`` times in a text of ``length`` terms; below
    ``k1 + 1`` however large ``tf`` is (what lets an index bound a term's contribution)."""
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))


class BM25:
    """BM25 over a fixed corpus, tokenized once; :meth:`scores` ranks it for a query.

    Use it where the corpus outlives one query (the tool registry); :func:`bm25`
    builds one per call for a corpus that changes. A corpus that grows by writes
    and is searched often belongs in :class:`~langgraph_ctx.retrieval.index.LexicalIndex`.
    """

    def __init__(self, docs: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self._docs = [terms(d) for d in docs]
        total = sum(len(d) for d in self._docs)
        self._avg = (total / len(self._docs) if self._docs else 0.0) or 1.0

    def scores(self, query: str) -> list[float]:
        """BM25 of each doc for ``query``, scaled so the best is 1 (all 0 if none matches)."""
        wanted = set(terms(query))
        # Only the query's terms are counted: a query has few, a corpus many.
        hits = [Counter([t for t in doc if t in wanted]) for doc in self._docs]
        df = Counter(t for tf in hits for t in tf)
        if not df:
            return [0.0] * len(self._docs)
        n = len(self._docs)
        weights = {t: idf(n, c) for t, c in df.items()}
        scores = [
            sum(
                weights[t] * tf_weight(c, len(doc), self._avg, k1=self.k1, b=self.b)
                for t, c in tf.items()
            )
            for tf, doc in zip(hits, self._docs, strict=True)
        ]
        top = max(scores)
        return [s / top if top > 0 else 0.0 for s in scores]


def bm25(query: str, docs: Sequence[str], *, k1: float = K1, b: float = B) -> list[float]:
    """BM25 of each doc for ``query`` over ``docs`` as the corpus, scaled to a max of 1."""
    return BM25(docs, k1=k1, b=b).scores(query)
