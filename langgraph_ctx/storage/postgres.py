"""The archive and the event log in PostgreSQL (tables from ``langgraph-ctx migrate``).

Both take a psycopg pool, sync or async, usually the checkpointer's own::

    with checkpointer_from_url(url) as saver:
        archive = PostgresArchive(saver.conn)
        events = PostgresEventSink(saver.conn)

or a URL, in which case they open (and own) a small pool, or one sync
connection, shared under a lock (see :mod:`~langgraph_ctx.storage._pgtable`).
With a sync pool the async methods run in a worker thread; with an async pool the sync
methods run on the pool's event loop from other threads (as LangGraph's
``AsyncPostgresSaver`` does) and refuse to run on that loop itself.

Writes are idempotent (``ON CONFLICT DO NOTHING``): LangGraph re-runs the step
that was in flight when a process died, and the re-run writes the same keys.
Every read names the thread and namespace: one session never sees another's rows.
psycopg is imported only when one of these is built.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from langgraph_ctx.retrieval.index import query_terms, split_words
from langgraph_ctx.retrieval.vectors import FUSED_DEPTH, check_embeddings, fuse
from langgraph_ctx.state import LedgerEntry
from langgraph_ctx.storage import _pgsearch as pgsearch
from langgraph_ctx.storage._passages import PassageRow, first_of_each, passage_rows
from langgraph_ctx.storage._pgtable import PgTable, jsonb
from langgraph_ctx.storage._pgvectors import PgVectors, nearest
from langgraph_ctx.storage.archive import check_batch
from langgraph_ctx.storage.hits import ArchiveHit, build_hits, check_search
from langgraph_ctx.tokens import TokenCounter

# One statement per batch: one round trip and one commit, whatever the batch size.
# WITH ORDINALITY ... ORDER BY: positions follow the batch's order. The passages
# (migration 0005) join the rows the insert returns: an id archived before, which
# the conflict skips, writes none.
_PUT = """
WITH archived AS (
    INSERT INTO lgctx_archive (thread_id, namespace, message_id, role, content, tokens, reason)
    SELECT %(thread)s, %(ns)s, u.message_id, u.role, u.content, u.tokens, %(reason)s
    FROM unnest(%(ids)s::text[], %(roles)s::text[], %(contents)s::jsonb[], %(tokens)s::integer[])
        WITH ORDINALITY AS u(message_id, role, content, tokens, n)
    ORDER BY u.n
    ON CONFLICT DO NOTHING
    RETURNING message_id, position
)
INSERT INTO lgctx_archive_passages (thread_id, namespace, message_id, ordinal, position, body)
SELECT %(thread)s, %(ns)s, p.message_id, p.ordinal, a.position, p.body
FROM unnest(%(owners)s::text[], %(ordinals)s::integer[], %(bodies)s::text[])
    AS p(message_id, ordinal, body)
JOIN archived AS a USING (message_id)
"""
_GET = (
    "SELECT content FROM lgctx_archive WHERE thread_id = %s AND namespace = %s AND message_id = %s"
)
_LIST = (
    "SELECT content FROM lgctx_archive WHERE thread_id = %s AND namespace = %s ORDER BY position"
)
_PASSAGES = pgsearch.Table(
    "lgctx_archive_passages", key="message_id", order="d.position", passage="body"
)
# One primary-key lookup per id (LIMIT 1 keeps the subquery apart). Written as a join,
# a planner without statistics (a table just filled) reads the thread's whole range.
_HITS = """
SELECT a.message_id, a.position, a.reason,
       extract(epoch FROM a.archived_at)::float8 AS archived_at, a.content
FROM unnest(%(ids)s::text[]) AS u(id)
CROSS JOIN LATERAL (
    SELECT * FROM lgctx_archive
    WHERE thread_id = %(thread)s AND namespace = %(ns)s AND message_id = u.id
    LIMIT 1
) AS a
"""
_SIZE = (
    "SELECT count(*) AS n, COALESCE(sum(tokens), 0) AS tokens FROM lgctx_archive"
    " WHERE thread_id = %s"
)


class PostgresArchive(PgTable):
    """A :class:`~langgraph_ctx.storage.archive.MessageArchive` in ``lgctx_archive``.

    ``embeddings`` (any LangChain ``Embeddings``) makes search hybrid, as
    :class:`~langgraph_ctx.storage.archive.InMemoryArchive`'s: each passage is also
    embedded, in a background thread after ``put`` returns, into
    ``lgctx_archive_vectors`` (migration 0007; the database needs pgvector), and a
    search fuses its lexical ranking with the passages nearest by cosine (HNSW) by
    reciprocal-rank fusion. :meth:`wait_for_vectors` waits for the background work;
    :meth:`backfill_vectors` embeds what was archived without them. Without it,
    search is lexical alone and nothing touches the vectors' table.
    """

    what = "archive"

    def __init__(
        self,
        conn: Any,
        *,
        counter: TokenCounter | None = None,
        max_size: int = 4,
        lock: threading.Lock | None = None,
        embeddings: Embeddings | None = None,
    ) -> None:
        if embeddings is not None:
            check_embeddings(embeddings)  # before a pool is opened for nothing
        super().__init__(conn, max_size=max_size, lock=lock)
        self._counter = counter or TokenCounter()
        self._vectors = (
            None if embeddings is None else PgVectors(embeddings, self._read, self._write)
        )

    def _params(
        self, thread_id: str, messages: Sequence[BaseMessage], reason: str, namespace: str
    ) -> dict[str, Any]:
        check_batch(thread_id, messages)
        # Each id's first copy is the one archived (ORDER BY u.n): its passages only.
        cut = passage_rows(thread_id, namespace, first_of_each(messages, ()))
        return {
            "thread": thread_id,
            "ns": namespace,
            "reason": reason,
            "ids": [m.id for m in messages],
            "roles": [m.type for m in messages],
            "contents": [jsonb(d) for d in messages_to_dict(messages)],
            "tokens": [self._counter.count_message(m) for m in messages],
            "owners": [row[2] for row in cut],
            "ordinals": [row[3] for row in cut],
            "bodies": [row[4] for row in cut],
        }

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        if messages:
            params = self._params(thread_id, messages, reason, namespace)
            self._write(_PUT, params)
            self._embed(params)

    async def aput(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        if messages:
            params = self._params(thread_id, messages, reason, namespace)
            await self._awrite(_PUT, params)
            self._embed(params)

    def _embed(self, params: dict[str, Any]) -> None:
        """Queue the batch's passages for their vectors (committed: searchable by words)."""
        if self._vectors is not None:
            thread, ns = params["thread"], params["ns"]
            rows: builtins.list[PassageRow] = [
                (thread, ns, owner, ordinal, body)
                for owner, ordinal, body in zip(
                    params["owners"], params["ordinals"], params["bodies"], strict=True
                )
            ]
            self._vectors.submit(rows)

    def close(self) -> None:
        """Close the pool if this object opened it, once the vectors queued are written."""
        self.wait_for_vectors()
        super().close()

    def wait_for_vectors(self) -> None:
        """Block until every passage archived so far by this object has its vector
        (nothing to wait for without ``embeddings``)."""
        if self._vectors is not None:
            self._vectors.wait()

    def backfill_vectors(self, *, batch: int = 256) -> int:
        """Embed, in this thread, every archived passage that has no vector of this
        model (archived before ``embeddings`` was given, or lost to a crash or a
        model error); the number embedded (0 without ``embeddings``)."""
        return 0 if self._vectors is None else self._vectors.backfill(batch=batch)

    def get(self, thread_id: str, message_id: str, *, namespace: str = "") -> BaseMessage | None:
        rows = self._read(_GET, (thread_id, namespace, message_id))
        return _decode(rows)[0] if rows else None

    async def aget(
        self, thread_id: str, message_id: str, *, namespace: str = ""
    ) -> BaseMessage | None:
        rows = await self._aread(_GET, (thread_id, namespace, message_id))
        return _decode(rows)[0] if rows else None

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[BaseMessage]:
        return _decode(self._read(_LIST, (thread_id, namespace)))

    async def alist(self, thread_id: str, *, namespace: str = "") -> builtins.list[BaseMessage]:
        return _decode(await self._aread(_LIST, (thread_id, namespace)))

    def search(
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = "", within: str = ""
    ) -> builtins.list[ArchiveHit]:
        near = self._near(thread_id, query, limit, within)
        hits: builtins.list[ArchiveHit] = pgsearch.run(
            _search(thread_id, query, limit, namespace, within, near), self._read
        )
        return hits

    async def asearch(
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = "", within: str = ""
    ) -> builtins.list[ArchiveHit]:
        near = await asyncio.to_thread(self._near, thread_id, query, limit, within)
        hits: builtins.list[ArchiveHit] = await pgsearch.arun(
            _search(thread_id, query, limit, namespace, within, near), self._aread
        )
        return hits

    def _near(self, thread_id: str, query: str, limit: int, within: str) -> _Near | None:
        """The vectors and the question's vector, for a hybrid search; None for a
        lexical one (no embeddings, or ``within``: a name a passage must hold is words)."""
        if self._vectors is None or within or not check_search(thread_id, query, limit):
            return None
        self._vectors.ready()
        return self._vectors, self._vectors.query(query)

    def size(self, thread_id: str) -> tuple[int, int]:
        """(rows, tokens) archived for ``thread_id``, all namespaces."""
        row = self._read(_SIZE, (thread_id,))[0]
        return int(row["n"]), int(row["tokens"])


def _decode(rows: Sequence[dict[str, Any]]) -> builtins.list[BaseMessage]:
    return messages_from_dict([r["content"] for r in rows])


_Near = tuple[PgVectors, builtins.list[float]]


def _search(
    thread_id: str, query: str, limit: int, namespace: str, within: str, near: _Near | None
) -> pgsearch.Steps:
    words = split_words(check_search(thread_id, query, limit))
    required = split_words(query_terms(within))
    if not words:
        return []
    params = {"thread": thread_id, "ns": namespace}
    scope = pgsearch.scope_lexeme("p", thread_id, namespace)
    # Hybrid: each list deeper than ``limit`` (FUSED_DEPTH), fused as in memory.
    depth = limit if near is None else max(limit, FUSED_DEPTH)
    found = yield from pgsearch.search(
        _PASSAGES,
        scope=scope,
        words=list(dict.fromkeys([*words, *required])),
        limit=depth,
        required=required,
    )
    meaning: set[str] = set()
    if near is not None:
        close = yield from nearest(near[0], near[1], thread_id, namespace, depth)
        meaning = {key for key, _, _ in close}
        found = fuse(found, close, limit=limit)
    if not found:
        return []
    rows = yield _HITS, {**params, "ids": [key for key, _, _ in found]}
    # The scope lexeme selects the thread; the equality in _HITS is the guarantee.
    by_id = {r["message_id"]: r for r in rows}
    kept = [(by_id[key], score, passage) for key, score, passage in found if key in by_id]
    messages = _decode([r for r, _, _ in kept])
    return build_hits(
        [
            (r["message_id"], int(r["position"]), r["reason"], float(r["archived_at"]), m, s, p)
            for (r, s, p), m in zip(kept, messages, strict=True)
        ],
        meaning,
    )


_EVENT = """
INSERT INTO lgctx_events (thread_id, namespace, seq, kind, node, ts, data)
SELECT %s, %s, u.seq, u.kind, u.node, to_timestamp(u.ts), u.data
FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::float8[], %s::jsonb[])
    AS u(seq, kind, node, ts, data)
ON CONFLICT DO NOTHING
"""
# Parallel nodes of one step share a seq: the node orders them, as in SQLite (by
# seq alone PostgreSQL returned ties in whatever order its sort left them).
_EVENTS = (
    "SELECT seq, kind, node, extract(epoch FROM ts)::float8 AS ts, data FROM lgctx_events"
    " WHERE thread_id = %s AND namespace = %s ORDER BY seq, node"
)


class PostgresEventSink(PgTable):
    """An :class:`~langgraph_ctx.pipeline.EventSink` into ``lgctx_events``."""

    what = "event log"

    def write(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None:
        if entries:
            self._write(_EVENT, _event_params(thread_id, namespace, entries))

    async def awrite(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None:
        if entries:
            await self._awrite(_EVENT, _event_params(thread_id, namespace, entries))

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[LedgerEntry]:
        """Every event of one thread and namespace, in ``seq`` order (then ``node``)."""
        return [_entry(r) for r in self._read(_EVENTS, (thread_id, namespace))]

    async def alist(self, thread_id: str, *, namespace: str = "") -> builtins.list[LedgerEntry]:
        return [_entry(r) for r in await self._aread(_EVENTS, (thread_id, namespace))]


def _event_params(
    thread_id: str, namespace: str, entries: Sequence[LedgerEntry]
) -> tuple[Any, ...]:
    return (
        thread_id,
        namespace,
        [e["seq"] for e in entries],
        [e["kind"] for e in entries],
        [e["node"] for e in entries],
        [float(e["ts"]) for e in entries],
        [jsonb(e["data"]) for e in entries],
    )


def _entry(row: dict[str, Any]) -> LedgerEntry:
    return LedgerEntry(
        seq=int(row["seq"]),
        kind=str(row["kind"]),
        node=str(row["node"]),
        ts=float(row["ts"]),
        data=dict(row["data"]),
    )
