"""Lexical ranking (BM25): how memories are ranked when the store has no embedding index.

Offline and model-free, so recall works on the embedded defaults. The corpus
is the candidate set itself, so IDF reflects the scope being searched.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"\w+")
_STOPWORDS = (
    "a an and are as at be by did do does for from had has have how i in is it its me my of "
    "on or our so that the their them then there these they this to was we were what when "
    "where which who whom why will with you your"
)
_STOP = frozenset(_STOPWORDS.split())


def terms(text: str) -> list[str]:
    """Lower-cased words, stop words dropped."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def bm25(query: str, docs: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 of each doc for ``query`` over ``docs`` as the corpus, scaled to a max of 1."""
    tokenized = [terms(d) for d in docs]
    q = set(terms(query))
    if not q or not tokenized:
        return [0.0] * len(docs)
    avg = sum(len(t) for t in tokenized) / len(tokenized) or 1.0
    df = Counter(w for t in tokenized for w in set(t) & q)
    n = len(tokenized)
    idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in df}
    scores: list[float] = []
    for t in tokenized:
        tf = Counter(w for w in t if w in idf)
        norm = k1 * (1 - b + b * len(t) / avg)
        scores.append(sum(idf[w] * c * (k1 + 1) / (c + norm) for w, c in tf.items()))
    top = max(scores)
    return [s / top if top > 0 else 0.0 for s in scores]
