"""MaxScore: the exact top k of a BM25 search without ranking every text that matches.

A term adds at most ``idf * (k1 + 1)`` to a text's BM25 score (:func:`bound`).
Once the k-th best score found beats what the terms not yet looked at could add
together, a text holding only those terms cannot reach the top k. So an engine
fetches the rare terms' texts first and a common term's texts only when its
bound could still change the result: :class:`MaxScorePlan` says which, round
by round, for an engine that can list and score texts by term (SQLite FTS5,
PostgreSQL); :class:`~langgraph_ctx.retrieval.index.LexicalIndex` runs the same
idea over its own postings.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.text import K1

__all__ = ["MaxScorePlan", "bound", "check_limit"]

K = TypeVar("K", bound=Hashable)


def check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigurationError("limit", f"must be an int >= 1, got {limit!r}")


class MaxScorePlan(Generic[K]):
    """The rounds of MaxScore over an engine that lists and scores texts by term.

    Give it each query term's bound (the most it can add to a text's score) and
    ask :meth:`next_round` which terms' texts to fetch next: the engine returns
    the texts holding one of ``new`` terms but none of ``done`` (those were
    scored before), each with its full score over all the query's terms (or only
    the best ``limit`` of them), and :meth:`add` takes them. When
    :meth:`next_round` returns ``None``, :meth:`best` is the top ``limit``.

    The first round fetches the rarest term's texts; each next round the terms
    whose bounds, summed with the rest, could still beat the k-th score. With a
    ``budget`` (and each term's document count in ``sizes``), rounds after the
    first fetch only the terms whose texts fit in it: the top k is then exact
    among the texts holding one of the rarer terms, and the commonest terms only
    add to their scores (:attr:`cut` says when that may have changed the top k).
    ``greedy``: each round also takes every further term that fits the budget,
    for an engine whose every query has a cost of its own (FTS5 counts each
    term's rows per statement), so that one round is usually all.
    """

    def __init__(
        self,
        bounds: Mapping[str, float],
        limit: int,
        *,
        sizes: Mapping[str, int] | None = None,
        budget: int | None = None,
        greedy: bool = False,
    ) -> None:
        check_limit(limit)
        self._order = sorted(bounds, key=lambda t: (-bounds[t], t))
        self._rest = [sum(bounds[t] for t in self._order[i:]) for i in range(len(self._order))]
        self._rest.append(0.0)
        self._limit = limit
        self._sizes = sizes or {}
        self._budget = budget
        self._greedy = greedy
        self._fetched = 0
        self._spent = 0
        self._scores: dict[K, float] = {}
        self.rounds = 0
        self.cut = False
        """Whether the budget left terms unfetched that could still change the top k."""

    def next_round(self) -> tuple[list[str], list[str]] | None:
        """``(new, done)``: the terms to fetch texts by now, and the terms already fetched."""
        if self._fetched == len(self._order) or self.cut:
            return None
        kth = self._kth()
        if kth is not None and self._rest[self._fetched] <= kth:
            return None  # nothing unseen can reach the top k
        needed = self._fetched + 1
        if kth is not None:
            while self._rest[needed] > kth:
                needed += 1
        upto = needed if self._budget is None else self._within_budget(needed)
        if upto == self._fetched:
            return None
        done, self._fetched = self._order[: self._fetched], upto
        self.rounds += 1
        return self._order[len(done) : upto], done

    def _within_budget(self, needed: int) -> int:
        assert self._budget is not None
        end = self._fetched
        first = self._fetched == 0  # the rarest term is fetched whatever it costs
        stop = len(self._order) if self._greedy else needed
        while end < stop and (
            (first and end == 0) or self._spent + self._size(end) <= self._budget
        ):
            self._spent += self._size(end)
            end += 1
        self.cut = end < needed
        return end

    def add(self, scored: Iterable[tuple[K, float]]) -> None:
        """Take a round's ``(key, score)``; a key met again keeps its best score (a
        message ranked by its best passage may have passages in several rounds)."""
        scores = self._scores
        for key, score in scored:
            if key not in scores or score > scores[key]:
                scores[key] = score

    def best(self) -> list[tuple[K, float]]:
        """The top ``limit`` ``(key, score)`` found, best first (ties: the first found)."""
        ranked = sorted(self._scores.items(), key=lambda kv: -kv[1])  # stable: ties keep order
        return ranked[: self._limit]

    def _size(self, i: int) -> int:
        return self._sizes.get(self._order[i], 0)

    def _kth(self) -> float | None:
        if len(self._scores) < self._limit:
            return None
        return heapq.nlargest(self._limit, self._scores.values())[-1]


def bound(term_idf: float, weight: float = 1.0) -> float:
    """The most a term of this idf adds to a BM25 score (times the largest doc weight)."""
    return max(term_idf, 0.0) * (K1 + 1) * weight
