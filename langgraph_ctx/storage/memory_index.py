"""Lexical indexes of long-term memories in SQLite and PostgreSQL, shared by every process.

:class:`~langgraph_ctx.retrieval.memory.MemoryBank` searches a store without an
embedding index through a :class:`~langgraph_ctx.retrieval.index.TextIndex`.
Its default lives in the process; these live in the database (migration 0004),
so banks in several processes see each other's memories::

    bank = MemoryBank(SqliteStore(conn), index=SQLiteMemoryIndex("memory.sqlite"))
    bank = MemoryBank(postgres_store, index=PostgresMemoryIndex(postgres_store.conn))

They search as the archives do: FTS5's bm25() (:mod:`~langgraph_ctx.storage._fts`),
or BM25 over PostgreSQL's tsvector (:mod:`~langgraph_ctx.storage._pgsearch`),
times each memory's level boost. psycopg is imported only when a
:class:`PostgresMemoryIndex` is built.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable
from typing import Any

from langgraph_ctx._workers import in_thread
from langgraph_ctx.retrieval.index import Doc, Namespace, Ranked, Weights, query_terms, split_words
from langgraph_ctx.retrieval.maxscore import check_limit
from langgraph_ctx.storage import _fts
from langgraph_ctx.storage import _pgsearch as pgsearch
from langgraph_ctx.storage._base import SQLiteTable
from langgraph_ctx.storage._passages import memory_terms
from langgraph_ctx.storage._pgtable import PgTable

__all__ = ["PostgresMemoryIndex", "SQLiteMemoryIndex", "scope_key"]

# terms: the body's stems, which the index holds (migration 0006).
_UPSERT = """
INSERT INTO lgctx_memory_index (namespace, key, grp, body, terms) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (namespace, key) DO UPDATE
    SET grp = excluded.grp, body = excluded.body, terms = excluded.terms
WHERE grp IS NOT excluded.grp OR body IS NOT excluded.body
"""
_RANKED = """
SELECT f.rowid, -f.rank * coalesce(json_extract(:weights, '$."' || m.grp || '"'), 1.0) AS score
FROM lgctx_memory_fts AS f JOIN lgctx_memory_index AS m ON m.id = f.rowid
WHERE lgctx_memory_fts MATCH :match
ORDER BY score DESC
LIMIT :limit
"""


def scope_key(scope: Namespace) -> str:
    """A scope as one string, injectively (labels may hold any character): JSON."""
    return json.dumps(list(scope), ensure_ascii=False)


class SQLiteMemoryIndex(SQLiteTable):
    """A :class:`~langgraph_ctx.retrieval.index.TextIndex` in a SQLite file (or ``":memory:"``)."""

    def add(self, scope: Namespace, docs: Iterable[Doc]) -> None:
        rows = [(scope_key(scope), d.key, d.group, d.text, memory_terms(d.text)) for d in docs]
        if not rows:
            return
        with self._write() as cur:
            cur.executemany(_UPSERT, rows)

    def search(
        self, scope: Namespace, query: str, *, limit: int = 10, weights: Weights = None
    ) -> Ranked:
        check_limit(limit)
        words = split_words(query_terms(query))
        if not words:
            return []
        key = scope_key(scope)
        weights = dict(weights or {})
        with self._lock:
            found, _ = _fts.search(
                self._conn,
                table="lgctx_memory_index",
                ranked=_RANKED,
                scope=_fts.scope_token(key),
                words=words,
                limit=limit,
                weight=max([1.0, *weights.values()]),
                params={"weights": json.dumps(weights)},
            )
            marks = ", ".join("?" * len(found))
            keys = dict(
                self._conn.execute(
                    f"SELECT id, key FROM lgctx_memory_index WHERE id IN ({marks})"
                    " AND +namespace = ?",  # "+": by key, not by the namespace's index
                    (*(i for i, _ in found), key),
                ).fetchall()
            )
        return [(keys[i], score) for i, score in found if i in keys]

    aadd, asearch = in_thread(add), in_thread(search)


_MEMORY = pgsearch.Table("lgctx_memory_index", key="key", order="d.key", group="d.grp")
# A primary-key lookup per key, as the archive's hits (see postgres._HITS).
_MEMORY_OWN = """
SELECT m.key FROM unnest(%(keys)s::text[]) AS u(key)
CROSS JOIN LATERAL (
    SELECT key FROM lgctx_memory_index WHERE namespace = %(ns)s AND key = u.key LIMIT 1
) AS m
"""
# One statement per batch; a row whose text and level did not change is left alone.
_MEMORY_PUT = """
INSERT INTO lgctx_memory_index AS m (namespace, key, grp, body)
SELECT %s, u.key, u.grp, u.body FROM unnest(%s::text[], %s::text[], %s::text[]) AS u(key, grp, body)
ON CONFLICT (namespace, key) DO UPDATE SET grp = excluded.grp, body = excluded.body
WHERE (m.grp, m.body) IS DISTINCT FROM (excluded.grp, excluded.body)
"""


class PostgresMemoryIndex(PgTable):
    """A :class:`~langgraph_ctx.retrieval.index.TextIndex` in ``lgctx_memory_index``: what
    :class:`~langgraph_ctx.retrieval.memory.MemoryBank` searches a store without an
    embedding index with, shared by every process (see the module doc)."""

    what = "memory index"

    def add(self, scope: Namespace, docs: Iterable[Doc]) -> None:
        params = _memory_rows(scope, docs)
        if params is not None:
            self._write(_MEMORY_PUT, params)

    async def aadd(self, scope: Namespace, docs: Iterable[Doc]) -> None:
        params = _memory_rows(scope, docs)
        if params is not None:
            await self._awrite(_MEMORY_PUT, params)

    def search(
        self, scope: Namespace, query: str, *, limit: int = 10, weights: Weights = None
    ) -> Ranked:
        found: Ranked = pgsearch.run(_memory_search(scope, query, limit, weights), self._read)
        return found

    async def asearch(
        self, scope: Namespace, query: str, *, limit: int = 10, weights: Weights = None
    ) -> Ranked:
        found: Ranked = await pgsearch.arun(
            _memory_search(scope, query, limit, weights), self._aread
        )
        return found


def _memory_rows(scope: Namespace, docs: Iterable[Doc]) -> tuple[Any, ...] | None:
    # The last write of a key in one batch wins, as it would in a loop of puts.
    latest = {d.key: d for d in docs}
    if not latest:
        return None
    rows = builtins.list(latest.values())
    return (
        scope_key(scope),
        [d.key for d in rows],
        [d.group for d in rows],
        [d.text for d in rows],
    )


def _memory_search(scope: Namespace, query: str, limit: int, weights: Weights) -> pgsearch.Steps:
    check_limit(limit)
    words = split_words(query_terms(query))
    if not words:
        return []
    key = scope_key(scope)
    found = yield from pgsearch.search(
        _MEMORY, scope=pgsearch.scope_lexeme("m", key), words=words, limit=limit, weights=weights
    )
    if not found:
        return []
    # The lexeme selected the scope; its own namespace is the guarantee.
    rows = yield _MEMORY_OWN, {"ns": key, "keys": [k for k, _ in found]}
    own = {r["key"] for r in rows}
    return [(k, score) for k, score in found if k in own]
