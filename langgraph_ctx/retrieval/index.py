"""Lexical search that never scans: an inverted index kept up to date on every write.

Three engines share one idea. A query is a natural-language question: its
:func:`query_terms` (stop words dropped, stemmed as texts are: see
:func:`~langgraph_ctx.retrieval.text.stems`) are OR-ed, and texts are ranked by
BM25. Ranking every text that shares a word with the question would be a scan
in disguise (a common word is in most texts), so all three use MaxScore: a
term can add at most ``idf * (k1 + 1)`` to a text's score, so once the k-th
best score found exceeds what the remaining (common) terms could add together,
texts holding only those terms cannot reach the top k and are never scored.
The result is the exact top k, at a cost that follows the rare terms' postings.
Past :data:`BUDGET` postings a common term only adds to the best texts found,
as the SQL engines' plans do, so a search's cost stops growing with the scope.

- :class:`LexicalIndex`: in process, for the in-memory archive and memory bank.
- :class:`~langgraph_ctx.retrieval.maxscore.MaxScorePlan`: the rounds of the same
  algorithm for an engine that can list the texts holding some terms and score
  them (SQLite FTS5, PostgreSQL).
"""

from __future__ import annotations

import heapq
import threading
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import partial
from typing import NamedTuple, Protocol

from langgraph_ctx._workers import in_thread
from langgraph_ctx.retrieval.maxscore import bound, check_limit
from langgraph_ctx.retrieval.text import K1, B, idf, stem, stems, terms

__all__ = ["Doc", "LexicalIndex", "TextIndex", "query_terms", "split_words"]

BUDGET = 2_000
"""Postings a search walks at most (see :meth:`_Shard.search`): a term whose postings
would pass it only adds to the best ``limit * 8`` docs the rarer terms found, by a
bisection each, and a query whose every term is that common walks its rarest term's
newest postings. So a search costs at most this many postings and a few bisections
per common term, however large the scope grows; below it, the top k is exact. Small
enough that a session's common words (a customer's name, "order", "status") pass it
within its first few hundred turns: from then on a turn's recall costs the same
(tests/storage/test_recall_cost.py counts it)."""
_FINISHED = 8

MAX_QUERY_TERMS = 64
"""Terms of a query kept (its first distinct ones): a pasted document is no question."""


class Doc(NamedTuple):
    """One text to index under ``key``; ``group`` selects its weight at search time;
    ``owner`` is what :meth:`LexicalIndex.search_owners` ranks it under (a passage's
    message), the key itself when empty."""

    key: str
    text: str
    group: str = ""
    owner: str = ""


# The shapes of a text index's calls: a store namespace, group weights, and the
# ``(key, score)`` hits, best first.
Namespace = tuple[str, ...]
Weights = Mapping[str, float] | None
Ranked = list[tuple[str, float]]
Owned = list[tuple[str, float, str]]


class TextIndex(Protocol):
    """A lexical index of texts by scope, as :class:`~langgraph_ctx.retrieval.memory.MemoryBank`
    uses it for a store without an embedding index: :class:`LexicalIndex` (in process),
    ``storage.SQLiteMemoryIndex``, ``storage.PostgresMemoryIndex``. A scope is a store
    namespace; searches rank by BM25 times the weight of each doc's group."""

    def add(self, scope: Namespace, docs: Iterable[Doc]) -> None:
        """Index ``docs`` (a key already there takes the new text)."""
        ...

    async def aadd(self, scope: Namespace, docs: Iterable[Doc]) -> None: ...

    def search(
        self, scope: Namespace, query: str, *, limit: int = 10, weights: Weights = None
    ) -> Ranked:
        """The best ``(key, score)`` of ``scope`` for ``query``, best first: BM25 (or the
        engine's) times the weight of the doc's group in ``weights`` (1 if not named)."""
        ...

    async def asearch(
        self, scope: Namespace, query: str, *, limit: int = 10, weights: Weights = None
    ) -> Ranked: ...


def query_terms(query: str) -> list[str]:
    """The distinct stems of ``query``'s terms in order, stop words dropped: what is
    OR-ed, in every backend ("Who does my taxes?" asks for ``tax``)."""
    return list(dict.fromkeys(stem(t) for t in terms(query)))[:MAX_QUERY_TERMS]


def split_words(words: Iterable[str]) -> list[str]:
    """Terms as SQL engines' tokenizers cut them: apart at apostrophes ("o'brien" is
    "o" and "brien" to FTS5 and PostgreSQL alike), distinct, in order."""
    return list(dict.fromkeys(p for w in words for p in w.split("'") if p))


class _Shard:
    """One scope's index. Doc numbers only grow; a removed doc's length is -1 until
    :meth:`compact` drops its postings, so posting lists stay sorted by number.
    A term's document frequency is its postings' length less its removed docs."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.owners: list[str] = []
        self.groups: list[str] = []
        self.lengths = array("q")
        self.signatures: list[int] = []
        self.doc_terms: list[tuple[str, ...]] = []
        self.numbers: dict[str, int] = {}
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.removed: Counter[str] = Counter()
        self.live = 0
        self.tokens = 0
        self.dead = 0
        self.reads = 0
        """Entries the searches have read so far: postings walked, postings looked up
        (a bisection each), candidates ranked. What a search costs, counted."""

    def df(self, term: str) -> int:
        postings = self.postings.get(term)
        return 0 if postings is None else len(postings[0]) - self.removed[term]

    def add(self, docs: Iterable[Doc]) -> None:
        postings, numbers, lengths = self.postings, self.numbers, self.lengths
        for doc in docs:
            signature = hash((doc.text, doc.group))
            old = numbers.get(doc.key)
            if old is not None:
                if self.signatures[old] == signature:
                    continue  # the same text again: nothing to do
                self.remove(doc.key)
            counts = Counter(stems(doc.text))
            number = len(self.keys)
            self.keys.append(doc.key)
            self.owners.append(doc.owner or doc.key)
            self.groups.append(doc.group)
            self.signatures.append(signature)
            self.doc_terms.append(tuple(counts))
            length = sum(counts.values())
            lengths.append(length)
            numbers[doc.key] = number
            for term, tf in counts.items():
                entry = postings.get(term)
                if entry is None:
                    entry = postings[term] = (array("q"), array("q"))
                entry[0].append(number)
                entry[1].append(tf)
            self.live += 1
            self.tokens += length

    def remove(self, key: str) -> None:
        number = self.numbers.pop(key, None)
        if number is None:
            return
        self.removed.update(self.doc_terms[number])
        self.tokens -= self.lengths[number]
        self.lengths[number] = -1
        self.doc_terms[number] = ()
        self.live -= 1
        self.dead += 1
        if self.dead > max(1_000, self.live):
            self.compact()

    def compact(self) -> None:
        for term in list(self.removed):
            docs, tfs = self.postings[term]
            kept = [(d, f) for d, f in zip(docs, tfs, strict=True) if self.lengths[d] >= 0]
            if kept:
                self.postings[term] = (
                    array("q", [d for d, _ in kept]),
                    array("q", [f for _, f in kept]),
                )
            else:
                del self.postings[term]
        self.removed.clear()
        self.dead = 0

    def search(
        self,
        query: Sequence[str],
        limit: int,
        weights: Mapping[str, float],
        *,
        owners: bool,
        required: Sequence[str] = (),
    ) -> list[tuple[float, int]]:
        """The best ``limit`` ``(-score, doc)``, best first; with ``owners``, each owner's
        best doc only (so the k-th score, and what can still beat it, is an owner's).

        ``required``: only docs holding every one of these terms are ranked, by the
        ``query`` terms. A candidate comes from the query terms' postings and is tested
        against the required terms' postings (a bisection each), so a name held by
        thousands of passages costs no more than a rare one; when fewer than ``limit``
        candidates share a query term, the earliest holders fill the places, as ties."""
        if not self.live:
            return []
        musts = [self.postings.get(t) for t in dict.fromkeys(required)]
        if any(m is None for m in musts):
            return []
        holds = self._holder([m[0] for m in musts if m is not None])
        n, avg = self.live, (self.tokens / self.live) or 1.0
        groups = self.groups
        top = partial(best, owners=self.owners if owners else None)
        get_weight = weights.get

        # Strongest term first; rest[i]: the most terms i.. can add to any doc's score.
        found = sorted(((idf(n, df), t) for t in query if (df := self.df(t)) > 0), reverse=True)
        wmax = max([1.0, *weights.values()])
        rest = [0.0] * (len(found) + 1)
        for i in range(len(found) - 1, -1, -1):
            rest[i] = rest[i + 1] + bound(found[i][0], wmax)
        lengths = self.lengths
        # BM25's tf weight, inlined: this loop is the whole cost of a search.
        k1p, base, slope = K1 + 1, K1 * (1 - B), K1 * B / avg
        acc: dict[int, float] = {}
        probing = False
        spent = 0
        for i, (term_idf, term) in enumerate(found):
            docs, tfs = self.postings[term]
            if i == 0 and len(docs) > BUDGET:  # every term common: its newest docs
                docs, tfs = docs[-BUDGET:], tfs[-BUDGET:]
            elif not probing and i > 0 and spent + len(docs) > BUDGET:
                # Too common to walk: it only adds to the best docs the rarer terms
                # found (as the SQL engines' plans do), each by a bisection.
                probing = True
                acc = dict(
                    heapq.nlargest(
                        limit * _FINISHED,
                        acc.items(),
                        key=lambda kv: kv[1] * get_weight(groups[kv[0]], 1.0),
                    )
                )
            spent += len(docs)
            self.reads += len(acc) if probing else len(docs)
            if not probing and len(acc) >= limit:
                kept = top(ranked(acc, groups, weights), limit)
                kth = -kept[-1][0]
                probing = len(kept) >= limit and kth > rest[i]
                if probing:  # and a doc found that cannot reach the k-th score is dropped
                    acc = {
                        d: score
                        for d, score in acc.items()
                        if score * get_weight(groups[d], 1.0) + rest[i] >= kth
                    }
            if probing:  # no new doc can reach the top k: only finish the ones found
                for d in acc:
                    j = bisect_left(docs, d)
                    if j < len(docs) and docs[j] == d:
                        tf = tfs[j]
                        acc[d] += term_idf * tf * k1p / (tf + base + slope * lengths[d])
                continue
            get = acc.get
            for d, tf in zip(docs, tfs, strict=True):
                length = lengths[d]
                if length >= 0 and (holds is None or d in acc or holds(d)):
                    acc[d] = get(d, 0.0) + term_idf * tf * k1p / (tf + base + slope * length)
        if holds is not None:
            self._fill(acc, limit, owners, musts, holds, found, (k1p, base, slope))
        self.reads += len(acc)
        return top(ranked(acc, groups, weights), limit)

    def _holder(self, lists: list[array[int]]) -> Callable[[int], bool] | None:
        """A test of whether a doc is in every one of ``lists`` (a bisection each, counted
        in :attr:`reads`); ``None`` when there is nothing to hold."""
        if not lists:
            return None

        def holds(d: int) -> bool:
            for docs in lists:
                self.reads += 1
                j = bisect_left(docs, d)
                if j == len(docs) or docs[j] != d:
                    return False
            return True

        return holds

    def _fill(
        self,
        acc: dict[int, float],
        limit: int,
        owners: bool,
        musts: Sequence[tuple[array[int], array[int]] | None],
        holds: Callable[[int], bool],
        found: Sequence[tuple[float, str]],
        weight: tuple[float, float, float],
    ) -> None:
        """Places the query terms left empty go to the earliest holders of the required
        terms (ties, ranked by doc number), each scored on the query terms by lookup:
        walked from the rarest required term's postings, at most :data:`BUDGET` of them."""
        have: set[object] = {self.owners[d] for d in acc} if owners else set(acc)
        if len(have) >= limit:
            return
        rarest = min((m[0] for m in musts if m is not None), key=len)
        lengths = self.lengths
        k1p, base, slope = weight
        for d in rarest[:BUDGET]:
            self.reads += 1
            if d in acc or lengths[d] < 0 or not holds(d):
                continue
            score = 0.0
            for term_idf, term in found:
                docs, tfs = self.postings[term]
                self.reads += 1
                j = bisect_left(docs, d)
                if j < len(docs) and docs[j] == d:
                    tf = tfs[j]
                    score += term_idf * tf * k1p / (tf + base + slope * lengths[d])
            acc[d] = score
            have.add(self.owners[d] if owners else d)
            if len(have) >= limit:
                return


def best(
    scored: list[tuple[float, int]], limit: int, *, owners: Sequence[str] | None
) -> list[tuple[float, int]]:
    """The ``limit`` smallest of ``scored`` (``(-score, doc)``: the best); with ``owners``,
    only each owner's best doc competes."""
    if owners is None:
        return heapq.nsmallest(limit, scored)
    # The best docs in order name their owners' best scores: a few times ``limit`` of
    # them usually name ``limit`` owners, and all of them always do.
    take = 4 * limit
    while True:
        first: dict[str, tuple[float, int]] = {}
        for entry in heapq.nsmallest(take, scored):
            first.setdefault(owners[entry[1]], entry)
            if len(first) == limit:
                return list(first.values())
        if take >= len(scored):
            return list(first.values())
        take *= 4


def ranked(
    acc: Mapping[int, float], groups: Sequence[str], weights: Mapping[str, float]
) -> list[tuple[float, int]]:
    """``(-weighted score, doc)`` of every doc in ``acc``: ascending order is best
    first, ties to the earlier added, compared in C (no key function per doc)."""
    if not weights:
        return [(-score, d) for d, score in acc.items()]
    get = weights.get
    return [(-score * get(groups[d], 1.0), d) for d, score in acc.items()]


class LexicalIndex:
    """An in-process inverted index ranked by BM25, partitioned by scope.

    Each scope (any hashable: ``(thread_id, namespace)``, a store namespace) has
    its own postings and statistics, so a search can only ever return keys added
    under its own scope. Writes tokenize once (:func:`~langgraph_ctx.retrieval.text.stems`);
    a search costs the postings of the query's rare terms (see the module doc),
    not the number of texts. Safe to share between threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shards: dict[Hashable, _Shard] = {}

    def add(self, scope: Hashable, docs: Iterable[Doc]) -> None:
        """Index ``docs`` under ``scope``. A key already there is replaced when its text
        or group changed, else left as it is (so a rewrite costs nothing)."""
        with self._lock:
            self._shards.setdefault(scope, _Shard()).add(docs)

    async def aadd(self, scope: Hashable, docs: Iterable[Doc]) -> None:
        """Async :meth:`add` (in-process work, no I/O)."""
        self.add(scope, docs)

    def remove(self, scope: Hashable, key: str) -> None:
        """Forget ``key`` in ``scope`` (nothing happens if it is not there)."""
        with self._lock:
            shard = self._shards.get(scope)
            if shard is not None:
                shard.remove(key)

    def reads(self, scope: Hashable) -> int:
        """Entries the searches of ``scope`` have read so far (see ``_Shard.reads``): the
        work a search does, counted, for tests that hold it flat as a session grows."""
        with self._lock:
            shard = self._shards.get(scope)
            return 0 if shard is None else shard.reads

    def has(self, scope: Hashable) -> bool:
        """Whether anything was ever added under ``scope``."""
        with self._lock:
            return scope in self._shards

    def search(
        self, scope: Hashable, query: str, *, limit: int = 10, weights: Weights = None
    ) -> Ranked:
        """The ``limit`` best keys of ``scope`` for ``query``, with their scores.

        A score is BM25 times the weight of the doc's group (``weights``, 1 for a
        group not named); best first, ties to the earlier added. Only docs
        sharing a term with the query are returned; an empty or stop-word-only
        query returns nothing.
        """
        shard, found = self._search(scope, query, limit, weights or {}, owners=False)
        return [(shard.keys[d], -score) for score, d in found]

    def search_owners(
        self, scope: Hashable, query: str, *, limit: int = 10, within: str = ""
    ) -> Owned:
        """The ``limit`` best owners of ``scope`` (see :class:`Doc`), each ranked by its
        best doc: ``(owner, score, that doc's key)``, best first. Exact, by the same
        MaxScore as :meth:`search`, with the k-th score an owner's.

        ``within``: only docs that hold every term of it (a name asked about) are
        ranked, by the question's other words, so a question about one of many things
        that share its wording finds the passages that name it. The candidates are
        the question's words' postings tested against the name's (the same budget as
        any search), so a name in thousands of passages costs no more than a rare one.
        A ``within`` with no terms (stop words only) constrains nothing: a plain search.
        """
        shard, found = self._search(scope, query, limit, {}, owners=True, within=within)
        return [(shard.owners[d], -score, shard.keys[d]) for score, d in found]

    def _search(
        self,
        scope: Hashable,
        query: str,
        limit: int,
        weights: Mapping[str, float],
        *,
        owners: bool,
        within: str = "",
    ) -> tuple[_Shard, list[tuple[float, int]]]:
        check_limit(limit)
        wanted = query_terms(query)
        required = query_terms(within)
        with self._lock:
            shard = self._shards.get(scope)
            if shard is None or not wanted:
                return _Shard(), []
            # Keys are read after the lock: a shard's lists only grow (compact keeps them).
            # Every candidate holds the required words: only the other words rank.
            words = [t for t in wanted if t not in required]
            return shard, shard.search(words, limit, weights, owners=owners, required=required)

    # A large scope takes milliseconds: off the event loop.
    asearch = in_thread(search)
