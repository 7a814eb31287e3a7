"""Search over an FTS5 index of the package's (migrations 0004-0006): MaxScore rounds on bm25().

Both indexes hold stems the package computes (:func:`~langgraph_ctx.retrieval.text.stems`,
migration 0006 says why not FTS5's porter), and a search's words are stems too.

An FTS5 query that ORs a question's terms ranks every row holding any of them,
and most rows hold a common word: ranking is then a scan. FTS5's ``bm25()``
gives a term at most ``idf * (k1 + 1)`` (k1 = 1.2, as ours), and ``fts5vocab``
gives each term's document count, so :class:`~langgraph_ctx.retrieval.maxscore.MaxScorePlan` can
fetch the rows of the rare terms first, and a common term's rows only when its
bound could still change the top k. Every FTS5 statement pays for counting each
of its terms' rows (bm25's idf), so the plan is greedy: its first round takes
every term whose rows fit :data:`BUDGET`, which is usually the only round. A
round's expression scores a row on every query term while matching only the
round's own terms::

    scope:"s.." AND (body:("rare1" OR "rare2") NOT body:("done"))
                AND (body:("common1" OR "common2") OR scope:"s..")

The last clause always matches (the scope token is in every row of the scope),
so it selects nothing, but it puts the common terms' hits into ``bm25()``.

The archive's passages (migration 0005) have no scope token: each term carries
its scope (:func:`scoped_terms`), because bm25() counts a scope token's rows, the
whole thread, in every statement. Their rounds match the round's terms alone, so
a term too common for :data:`BUDGET` weighs nothing there, as a stop word.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_ctx.retrieval.maxscore import MaxScorePlan, bound

BUDGET = 10_000
"""Rows a search ranks at most, beyond its rarest term's (see MaxScorePlan): a
bound on bm25() work per search, so a common term cannot make one slow."""
MIN_IDF = 1e-6  # what bm25() uses for a term in more than half of all rows


def scope_token(*labels: str) -> str:
    """The token a row of these labels carries in its ``scope`` column (see the view):
    hex of each label's UTF-8, so distinct scopes never share a token."""
    return "s" + "g".join(label.encode("utf-8").hex() for label in labels)


def scoped_terms(scope: str, words: Sequence[str]) -> list[str]:
    """``words`` as the archive's passages index them: each prefixed by its ``scope``
    token and ``x`` (neither hex nor ``g``, so a term cannot pass for a scope)."""
    return [f"{scope}x{w}" for w in words]


def fts_idf(rows: int, df: int) -> float:
    """FTS5's bm25() idf: ``log((N - df + 0.5) / (df + 0.5))``, floored at 1e-6."""
    value = math.log((rows - df + 0.5) / (df + 0.5))
    return value if value > 0 else MIN_IDF


def _any(column: str, words: Sequence[str]) -> str:
    return f"{column}:(" + " OR ".join(f'"{w}"' for w in words) + ")"


# Each indexed table's fts5vocab table (of type ``col``) and indexed column.
_VOCAB = {
    "lgctx_archive_passages": ("lgctx_archive_passages_vocab", "terms"),  # sql/0005
    "lgctx_memory_index": ("lgctx_memory_vocab", "terms"),  # sql/0004, 0006
}


def search(
    conn: sqlite3.Connection,
    *,
    table: str,
    ranked: str,
    scope: str | None,
    words: Sequence[str],
    limit: int,
    weight: float = 1.0,
    params: Mapping[str, Any] | None = None,
    required: Sequence[str] = (),
) -> tuple[list[tuple[Any, ...]], MaxScorePlan[Any]]:
    """The best ``limit`` rows ``ranked`` gave for ``scope`` and ``words`` (one per key,
    its best), and the plan that ran.

    ``table``: the indexed table (a key of ``_VOCAB``, from the migrations).
    ``scope``: the scope token ANDed with each round, or ``None`` when ``words`` carry
    their scope (:func:`scoped_terms`). ``ranked``: a query
    taking ``:match`` (the expression), ``:limit`` and ``params``, returning
    (key, score, anything else) best first, a key at most once: a rowid, or a
    message id whose passages it groups. ``weight``: the largest factor ``ranked``
    multiplies a bm25() score by. ``required``: terms every row ranked must hold
    (ANDed with each round; none found, nothing is).
    """
    # An upper bound of the row count (ids only grow; bounds stay bounds when it is
    # too high): cheaper than count(*).
    (rows,) = conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()
    vocab, column = _VOCAB[table]
    marks = ", ".join("?" * len(words))
    df = dict(
        conn.execute(
            f"SELECT term, doc FROM {vocab} WHERE col = ? AND term IN ({marks})", (column, *words)
        ).fetchall()
    )
    present = [w for w in words if df.get(w)]
    if any(not df.get(w) for w in required):
        return [], MaxScorePlan({}, limit)
    plan: MaxScorePlan[Any] = MaxScorePlan(
        {w: bound(fts_idf(rows, df[w]), weight) for w in present},
        limit,
        sizes=df,
        budget=BUDGET,
        greedy=True,
    )
    token = None if scope is None else f'scope:"{scope}"'
    best: dict[Any, tuple[Any, ...]] = {}
    while (step := plan.next_round()) is not None:
        new, done = step
        later = [w for w in present if w not in new and w not in done]
        match = f"({_any(column, new)}" + (f" NOT {_any(column, done)})" if done else ")")
        if required:
            match = f"{column}:(" + " AND ".join(f'"{w}"' for w in required) + f") AND {match}"
        if token is not None:
            match = f"{token} AND {match}"
            if later:
                match += f" AND ({_any(column, later)} OR {token})"
        rows = conn.execute(ranked, {**(params or {}), "match": match, "limit": limit}).fetchall()
        for row in rows:  # a key again, in a later round: its better row stays
            if row[0] not in best or row[1] > best[row[0]][1]:
                best[row[0]] = row
        plan.add((row[0], row[1]) for row in rows)
    return [best[key] for key, _ in plan.best()], plan
