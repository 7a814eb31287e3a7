"""A lexical index of long-term memories in SQLite (FTS5), shared by every process on the file.

:class:`~langgraph_ctx.retrieval.memory.MemoryBank` searches a store without an
embedding index through a :class:`~langgraph_ctx.retrieval.index.TextIndex`.
Its default lives in the process; this one lives in the database (migration
0004), so banks in several processes see each other's memories::

    bank = MemoryBank(SqliteStore(conn), index=SQLiteMemoryIndex("memory.sqlite"))

Ranking is FTS5's bm25() times each memory's level boost, in the MaxScore
rounds of the archive's search (:mod:`~langgraph_ctx.storage._fts`).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping

from langgraph_ctx.retrieval.index import Doc, check_limit, query_terms, split_words
from langgraph_ctx.storage import _fts
from langgraph_ctx.storage._base import SQLiteTable, in_thread

__all__ = ["SQLiteMemoryIndex", "scope_key"]

_UPSERT = """
INSERT INTO lgctx_memory_index (namespace, key, grp, body) VALUES (?, ?, ?, ?)
ON CONFLICT (namespace, key) DO UPDATE SET grp = excluded.grp, body = excluded.body
WHERE grp IS NOT excluded.grp OR body IS NOT excluded.body
"""
_RANKED = """
SELECT f.rowid, -f.rank * coalesce(json_extract(:weights, '$."' || m.grp || '"'), 1.0) AS score
FROM lgctx_memory_fts AS f JOIN lgctx_memory_index AS m ON m.id = f.rowid
WHERE lgctx_memory_fts MATCH :match
ORDER BY score DESC
LIMIT :limit
"""


def scope_key(scope: tuple[str, ...]) -> str:
    """A scope as one string, injectively (labels may hold any character): JSON."""
    return json.dumps(list(scope), ensure_ascii=False)


class SQLiteMemoryIndex(SQLiteTable):
    """A :class:`~langgraph_ctx.retrieval.index.TextIndex` in a SQLite file (or ``":memory:"``)."""

    def add(self, scope: tuple[str, ...], docs: Iterable[Doc]) -> None:
        rows = [(scope_key(scope), d.key, d.group, d.text) for d in docs]
        if not rows:
            return
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                cur.executemany(_UPSERT, rows)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            finally:
                cur.close()

    def search(
        self,
        scope: tuple[str, ...],
        query: str,
        *,
        limit: int = 10,
        weights: Mapping[str, float] | None = None,
    ) -> builtins.list[tuple[str, float]]:
        check_limit(limit)
        words = split_words(query_terms(query))
        if not words:
            return []
        key = scope_key(scope)
        weights = dict(weights or {})
        with self._lock:
            (rows,) = self._conn.execute(
                "SELECT coalesce(max(id), 0) FROM lgctx_memory_index"
            ).fetchone()
            found, _ = _fts.search(
                self._conn,
                vocab="lgctx_memory_vocab",
                ranked=_RANKED,
                scope=_fts.scope_token(key),
                words=words,
                rows=rows,
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
