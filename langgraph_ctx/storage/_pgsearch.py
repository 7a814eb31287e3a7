"""Search over the package's PostgreSQL full-text indexes (migrations 0003-0006): BM25 by MaxScore.

A search is a generator of queries (sans I/O): it yields ``(sql, params)``,
receives the rows, and returns the ranked keys, so that one function serves
the sync and the async pools (:func:`run`, :func:`arun`). Its queries:

1. the query's words as PostgreSQL lexemes, with each one's document frequency
   in the scope and the scope's size (``lgctx_search_terms``/``_scopes``). The
   words arrive stemmed (:func:`~langgraph_ctx.retrieval.index.query_terms`), by the Snowball
   English the index's ``lgctx_english`` configuration runs (migration 0006), so
   they are read with ``'simple'``: stemming a stem again may change it;
2. rounds of :class:`~langgraph_ctx.retrieval.index.MaxScorePlan`: the scope's
   rows holding a round's terms (GIN), scored by BM25 in the database, the
   round's best ``limit`` returned (for a table of passages, the best ``limit``
   owners, each by its best passage of the round).

A term counts once per row (tf = 1): reading how often a word occurs means
unpacking the row's whole tsvector, about 20 microseconds a row against 3 for
testing whether it holds the word. The SQL computes
:func:`~langgraph_ctx.retrieval.text.tf_weight` with tf = 1 (a test holds the
two together). Rounds after the first stop at :data:`BUDGET` rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from langgraph_ctx.retrieval.maxscore import MaxScorePlan, bound
from langgraph_ctx.retrieval.text import K1, B, idf

BUDGET = 4_000
"""Rows a search scores at most beyond its first round: a bound on the work per search."""

Query: TypeAlias = tuple[str, Mapping[str, Any]]
Rows: TypeAlias = list[dict[str, Any]]
Steps: TypeAlias = Generator[Query, Rows, Any]


@dataclass(frozen=True)
class Table:
    """An indexed table (with ``search`` and ``search_scope`` columns): its name, key
    column, tie-breaking order and group column (SQL on ``d``, the table)."""

    name: str
    key: str
    order: str
    """How ties are broken, e.g. ``d.position``."""
    group: str = "''"
    passage: str | None = None
    """For a table of passages: the column of a passage's text. ``key`` then names
    what owns the passages (a message), ranked by its best passage, and each result
    carries that passage's text."""


def scope_lexeme(kind: str, *labels: str) -> str:
    """The lexeme a row of these labels carries first (see the migration): ``kind`` and
    an md5 per label, so scopes of a long thread id still fit a lexeme."""
    return kind + "".join(hashlib.md5(label.encode("utf-8")).hexdigest() for label in labels)


# 'simple', not lgctx_english: the words are stems already (see the module doc).
# A primary-key lookup per term (LIMIT 1 keeps the subquery apart): as a plain join,
# stale statistics let the planner read every term of the scope and filter.
_STATS = """
SELECT q.term, coalesce(t.df, 0) AS df, s.docs, s.length
FROM (SELECT DISTINCT unnest(tsvector_to_array(
        to_tsvector('simple'::regconfig, lgctx_search_words(%(words)s))))) AS q(term)
JOIN lgctx_search_scopes AS s ON s.scope = %(scope)s
LEFT JOIN LATERAL (
    SELECT df FROM lgctx_search_terms WHERE scope = %(scope)s AND term = q.term LIMIT 1
) AS t ON true
"""

# The scope is selected by its generated column, which has no index of its own: with
# stale statistics (a table just filled, not yet analyzed) the planner would otherwise
# walk the (thread, namespace) index through the whole thread and test every row.
_SCORE = """coalesce((%(weights)s::jsonb ->> ({group}))::float8, 1.0)
       * (%(k1)s + 1) / (1 + %(k1)s * (1 - %(b)s + %(b)s * (length(d.search) - 1) / %(avg)s))
       * ({held})"""
_ROUND = """
SELECT d.{key} AS key, {score} AS score
FROM {table} AS d
WHERE d.search_scope = %(scope)s AND d.search @@ %(match)s::tsquery
ORDER BY score DESC, {order}
LIMIT %(limit)s
"""
# A table of passages: each owner once, by its best passage, so LIMIT counts owners.
_OWNERS_ROUND = """
SELECT key, score, passage FROM (
    SELECT DISTINCT ON (d.{key}) d.{key} AS key, {score} AS score, d.{passage} AS passage,
           {order} AS tie
    FROM {table} AS d
    WHERE d.search_scope = %(scope)s AND d.search @@ %(match)s::tsquery
    ORDER BY d.{key}, score DESC, {order}
) AS best
ORDER BY score DESC, tie
LIMIT %(limit)s
"""


def _lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _any(terms: Sequence[str]) -> str:
    return "(" + " | ".join(_lexeme(t) for t in terms) + ")"


def search(
    table: Table,
    *,
    scope: str,
    words: Sequence[str],
    limit: int,
    weights: Mapping[str, float] | None = None,
    required: Sequence[str] = (),
) -> Steps:
    """Steps of a search of ``table``'s rows of ``scope`` (the lexeme of their
    ``search_scope``) for ``words``: returns the best ``limit`` (key, score), score =
    BM25 times the weight of the row's group; (key, score, passage) for a table of
    passages. The caller checks the rows it reads for the scope's own labels: a lexeme
    is an md5, and the labels are the guarantee. ``required``: words every row ranked
    must hold (ANDed with each round)."""
    weights = weights or {}
    stats = yield _STATS, {"words": " ".join(words), "scope": scope}
    df = {r["term"]: int(r["df"]) for r in stats if int(r["df"]) > 0}
    if not df or int(stats[0]["docs"]) <= 0:
        return []
    docs = int(stats[0]["docs"])
    avg = int(stats[0]["length"]) / docs or 1.0
    terms = sorted(df)
    idfs = [idf(docs, df[t]) for t in terms]
    wmax = max([1.0, *weights.values()])
    plan: MaxScorePlan[str] = MaxScorePlan(
        {t: bound(i, wmax) for t, i in zip(terms, idfs, strict=True)},
        limit,
        sizes=df,
        budget=BUDGET,
    )
    held = " + ".join(
        f"(CASE WHEN d.search @@ %(t{i})s::tsquery THEN %(i{i})s ELSE 0 END)"
        for i in range(len(terms))
    )
    score = _SCORE.format(group=table.group, held=held)
    sql = (_ROUND if table.passage is None else _OWNERS_ROUND).format(
        table=table.name, key=table.key, order=table.order, score=score, passage=table.passage
    )
    fixed = {
        "scope": scope,
        **{f"t{i}": _lexeme(t) for i, t in enumerate(terms)},
        **{f"i{i}": v for i, v in enumerate(idfs)},
        "weights": json.dumps(dict(weights)),
        "k1": K1,
        "b": B,
        "avg": avg,
        "limit": limit,
    }
    passages: dict[str, tuple[float, str]] = {}  # an owner's best passage so far
    while (step := plan.next_round()) is not None:
        new, done = step
        match = f"{_lexeme(scope)} & {_any(new)}" + (f" & !{_any(done)}" if done else "")
        match += "".join(f" & {_lexeme(w)}" for w in required)
        rows = yield sql, {**fixed, "match": match}
        scored = [(str(r["key"]), float(r["score"])) for r in rows]
        if table.passage is not None:
            for (key, value), r in zip(scored, rows, strict=True):
                if key not in passages or value > passages[key][0]:
                    passages[key] = (value, str(r["passage"]))
        plan.add(scored)
    if table.passage is None:
        return plan.best()
    return [(key, value, passages[key][1]) for key, value in plan.best()]


@dataclass(frozen=True)
class _Done:
    value: Any


def _send(steps: Steps, rows: Rows | None) -> Query | _Done:
    try:
        return steps.send(rows)  # type: ignore[arg-type]  # None starts the generator
    except StopIteration as stop:
        return _Done(stop.value)


def run(steps: Steps, read: Callable[[str, Mapping[str, Any]], Rows]) -> Any:
    """Drive ``steps`` with a sync ``read``; its return value."""
    query = _send(steps, None)
    while not isinstance(query, _Done):
        query = _send(steps, read(*query))
    return query.value


async def arun(steps: Steps, aread: Callable[[str, Mapping[str, Any]], Awaitable[Rows]]) -> Any:
    """Drive ``steps`` with an async ``aread``; its return value."""
    query = _send(steps, None)
    while not isinstance(query, _Done):
        query = _send(steps, await aread(*query))
    return query.value
