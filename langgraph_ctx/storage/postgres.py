"""The archive, the event log and the memory index in PostgreSQL (``langgraph-ctx migrate``).

Each takes a psycopg pool, sync or async, usually the checkpointer's own::

    with checkpointer_from_url(url) as saver:
        archive = PostgresArchive(saver.conn)
        events = PostgresEventSink(saver.conn)
        memory = MemoryBank(store, index=PostgresMemoryIndex(saver.conn))

or a URL, in which case they open (and own) a small pool. With a sync pool
the async methods run in a worker thread; with an async pool the sync
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
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any, TypeAlias

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from langgraph_ctx.errors import ConfigurationError, ContextRunError
from langgraph_ctx.retrieval.index import Doc, check_limit, query_terms, split_words
from langgraph_ctx.state import LedgerEntry
from langgraph_ctx.storage import _pgconn as pgconn
from langgraph_ctx.storage import _pgsearch as pgsearch
from langgraph_ctx.storage._base import Closing
from langgraph_ctx.storage.archive import ArchiveHit, build_hits, check_batch, check_search
from langgraph_ctx.storage.memory_index import scope_key
from langgraph_ctx.storage.urls import parse_url
from langgraph_ctx.tokens import TokenCounter

_dumps = partial(json.dumps, default=str)
Params: TypeAlias = Sequence[Any] | Mapping[str, Any]


class _PgTable(Closing):
    """A pool (sync or async) plus the four primitives every table here needs."""

    what = "table"

    def __init__(self, conn: Any, *, max_size: int = 4) -> None:
        """``conn``: a ``ConnectionPool``, an ``AsyncConnectionPool``, a URL, or one sync
        ``Connection`` (a ``PostgresStore.from_conn_string`` store's ``conn``)."""
        import psycopg
        from psycopg_pool import AsyncConnectionPool, ConnectionPool

        self._owned = isinstance(conn, str)
        if isinstance(conn, str):
            url, field = self._postgres_url(conn), type(self).__name__
            conn = pgconn.open_pool(url, max_size=max_size, field=field)
        self._pool: ConnectionPool[Any] | None = None
        self._apool: AsyncConnectionPool[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: psycopg.Connection[Any] | None = None
        if isinstance(conn, ConnectionPool):
            self._pool = conn
        elif isinstance(conn, psycopg.Connection):
            # Shared with its owner: one statement at a time, each in its own transaction.
            self._conn, self._conn_lock = conn, threading.Lock()
        elif isinstance(conn, AsyncConnectionPool):
            self._apool = conn
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None  # sync calls need it; async ones do not
        else:
            raise ConfigurationError(
                type(self).__name__,
                f"expected a psycopg pool, connection or URL, got {type(conn).__name__}",
            )

    def _postgres_url(self, url: str) -> str:
        # Parsed like every other URL: a key=value string or a bad port is refused
        # here, with the password hidden, before libpq could echo any of it.
        db = parse_url(url, field=type(self).__name__)
        if db.kind != "postgres":
            raise ConfigurationError(
                type(self).__name__, f"needs a postgresql:// URL, got {db.redacted!r}"
            )
        return db.url

    # -- primitives --------------------------------------------------------

    def _write(self, sql: str, params: Params) -> None:
        self._sync(self._awrite, sql, params, fn=lambda conn: conn.execute(sql, params))

    async def _awrite(self, sql: str, params: Params) -> None:
        if self._apool is None:
            await asyncio.to_thread(self._write, sql, params)
            return
        try:
            async with self._apool.connection() as conn:
                await conn.execute(sql, params)
        except _errors() as exc:
            raise self._failed(exc) from exc

    def _read(self, sql: str, params: Params) -> builtins.list[dict[str, Any]]:
        result: builtins.list[dict[str, Any]] = self._sync(
            self._aread, sql, params, fn=lambda conn: _read(conn, sql, params)
        )
        return result

    async def _aread(self, sql: str, params: Params) -> builtins.list[dict[str, Any]]:
        if self._apool is None:
            return await asyncio.to_thread(self._read, sql, params)
        from psycopg.rows import dict_row

        try:
            async with (
                self._apool.connection() as conn,
                conn.cursor(row_factory=dict_row) as cur,
            ):
                await cur.execute(sql, params)
                rows: builtins.list[dict[str, Any]] = await cur.fetchall()
                return rows
        except _errors() as exc:
            raise self._failed(exc) from exc

    def _sync(self, afn: Any, *args: Any, fn: Any) -> Any:
        if self._conn is not None:
            try:
                with self._conn_lock, self._conn.transaction():
                    return fn(self._conn)
            except _errors() as exc:
                raise self._failed(exc) from exc
        if self._pool is not None:
            try:
                with self._pool.connection() as conn:
                    return fn(conn)
            except _errors() as exc:
                raise self._failed(exc) from exc
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if self._loop is None or running is self._loop:
            raise ContextRunError(
                f"{type(self).__name__} has an async pool: call its async methods "
                "(aput, alist, awrite, ...) from the event loop, or pass a sync pool"
            )
        return asyncio.run_coroutine_threadsafe(afn(*args), self._loop).result()

    def _failed(self, exc: BaseException) -> ContextRunError:
        import psycopg.errors as pg

        missing = (pg.UndefinedTable, pg.UndefinedFunction, pg.UndefinedColumn)
        hint = (
            " (is the database migrated? run `langgraph-ctx migrate`)"
            if isinstance(exc, missing)
            else ""
        )
        return ContextRunError(
            f"{self.what} in PostgreSQL failed: {type(exc).__name__}: {exc}{hint}"
        )

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the pool if this object opened it (never a pool you passed in)."""
        if self._owned and self._pool is not None:
            self._pool.close()


def _read(conn: Any, sql: str, params: Params) -> builtins.list[dict[str, Any]]:
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, params)
        rows: builtins.list[dict[str, Any]] = cur.fetchall()
        return rows


def _errors() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.Error,)


def _jsonb(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value, dumps=_dumps)


# One statement per batch: one round trip and one commit, whatever the batch size.
# WITH ORDINALITY ... ORDER BY: positions follow the batch's order.
_PUT = """
INSERT INTO lgctx_archive (thread_id, namespace, message_id, role, content, tokens, reason)
SELECT %s, %s, u.message_id, u.role, u.content, u.tokens, %s
FROM unnest(%s::text[], %s::text[], %s::jsonb[], %s::integer[])
    WITH ORDINALITY AS u(message_id, role, content, tokens, n)
ORDER BY u.n
ON CONFLICT DO NOTHING
"""
_GET = (
    "SELECT content FROM lgctx_archive WHERE thread_id = %s AND namespace = %s AND message_id = %s"
)
_LIST = (
    "SELECT content FROM lgctx_archive WHERE thread_id = %s AND namespace = %s ORDER BY position"
)
_ARCHIVE = pgsearch.Table(
    "lgctx_archive",
    key="message_id",
    where="d.thread_id = %(thread)s AND d.namespace = %(ns)s",
    order="d.position",
)
_HITS = """
SELECT message_id, position, reason, extract(epoch FROM archived_at)::float8 AS archived_at,
       content
FROM lgctx_archive
WHERE thread_id = %(thread)s AND namespace = %(ns)s AND message_id = ANY(%(ids)s)
"""
_SIZE = (
    "SELECT count(*) AS n, COALESCE(sum(tokens), 0) AS tokens FROM lgctx_archive"
    " WHERE thread_id = %s"
)


class PostgresArchive(_PgTable):
    """A :class:`~langgraph_ctx.storage.archive.MessageArchive` in ``lgctx_archive``."""

    what = "archive"

    def __init__(
        self, conn: Any, *, counter: TokenCounter | None = None, max_size: int = 4
    ) -> None:
        super().__init__(conn, max_size=max_size)
        self._counter = counter or TokenCounter()

    def _params(
        self, thread_id: str, messages: Sequence[BaseMessage], reason: str, namespace: str
    ) -> tuple[Any, ...]:
        check_batch(thread_id, messages)
        return (
            thread_id,
            namespace,
            reason,
            [m.id for m in messages],
            [m.type for m in messages],
            [_jsonb(d) for d in messages_to_dict(messages)],
            [self._counter.count_message(m) for m in messages],
        )

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        if messages:
            self._write(_PUT, self._params(thread_id, messages, reason, namespace))

    async def aput(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        if messages:
            await self._awrite(_PUT, self._params(thread_id, messages, reason, namespace))

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
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = ""
    ) -> builtins.list[ArchiveHit]:
        hits: builtins.list[ArchiveHit] = pgsearch.run(
            _search(thread_id, query, limit, namespace), self._read
        )
        return hits

    async def asearch(
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = ""
    ) -> builtins.list[ArchiveHit]:
        hits: builtins.list[ArchiveHit] = await pgsearch.arun(
            _search(thread_id, query, limit, namespace), self._aread
        )
        return hits

    def size(self, thread_id: str) -> tuple[int, int]:
        """(rows, tokens) archived for ``thread_id``, all namespaces."""
        row = self._read(_SIZE, (thread_id,))[0]
        return int(row["n"]), int(row["tokens"])


def _decode(rows: Sequence[dict[str, Any]]) -> builtins.list[BaseMessage]:
    return messages_from_dict([r["content"] for r in rows])


def _search(thread_id: str, query: str, limit: int, namespace: str) -> pgsearch.Steps:
    words = split_words(check_search(thread_id, query, limit))
    if not words:
        return []
    params = {"thread": thread_id, "ns": namespace}
    scope = pgsearch.scope_lexeme("a", thread_id, namespace)
    found = yield from pgsearch.search(_ARCHIVE, params, scope=scope, words=words, limit=limit)
    if not found:
        return []
    rows = yield _HITS, {**params, "ids": [key for key, _ in found]}
    # The scope lexeme selects the thread; the equality in _HITS is the guarantee.
    by_id = {r["message_id"]: r for r in rows}
    kept = [(by_id[key], score) for key, score in found if key in by_id]
    messages = _decode([r for r, _ in kept])
    return build_hits(
        [
            (r["message_id"], int(r["position"]), r["reason"], float(r["archived_at"]), m, score)
            for (r, score), m in zip(kept, messages, strict=True)
        ]
    )


_EVENT = """
INSERT INTO lgctx_events (thread_id, namespace, seq, kind, node, ts, data)
SELECT %s, %s, u.seq, u.kind, u.node, to_timestamp(u.ts), u.data
FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::float8[], %s::jsonb[])
    AS u(seq, kind, node, ts, data)
ON CONFLICT DO NOTHING
"""
_EVENTS = (
    "SELECT seq, kind, node, extract(epoch FROM ts)::float8 AS ts, data FROM lgctx_events"
    " WHERE thread_id = %s AND namespace = %s ORDER BY seq"
)


class PostgresEventSink(_PgTable):
    """An :class:`~langgraph_ctx.pipeline.EventSink` into ``lgctx_events``."""

    what = "event log"

    def write(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None:
        if entries:
            self._write(_EVENT, _event_params(thread_id, namespace, entries))

    async def awrite(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None:
        if entries:
            await self._awrite(_EVENT, _event_params(thread_id, namespace, entries))

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[LedgerEntry]:
        """Every event of one thread and namespace, in ``seq`` order."""
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
        [_jsonb(e["data"]) for e in entries],
    )


def _entry(row: dict[str, Any]) -> LedgerEntry:
    return LedgerEntry(
        seq=int(row["seq"]),
        kind=str(row["kind"]),
        node=str(row["node"]),
        ts=float(row["ts"]),
        data=dict(row["data"]),
    )


_MEMORY = pgsearch.Table(
    "lgctx_memory_index", key="key", where="d.namespace = %(ns)s", order="d.key", group="d.grp"
)
# One statement per batch; a row whose text and level did not change is left alone.
_MEMORY_PUT = """
INSERT INTO lgctx_memory_index AS m (namespace, key, grp, body)
SELECT %s, u.key, u.grp, u.body FROM unnest(%s::text[], %s::text[], %s::text[]) AS u(key, grp, body)
ON CONFLICT (namespace, key) DO UPDATE SET grp = excluded.grp, body = excluded.body
WHERE (m.grp, m.body) IS DISTINCT FROM (excluded.grp, excluded.body)
"""


class PostgresMemoryIndex(_PgTable):
    """A :class:`~langgraph_ctx.retrieval.index.TextIndex` in ``lgctx_memory_index``: what
    :class:`~langgraph_ctx.retrieval.memory.MemoryBank` searches a store without an
    embedding index with, shared by every process (see the module doc)."""

    what = "memory index"

    def add(self, scope: tuple[str, ...], docs: Iterable[Doc]) -> None:
        params = _memory_rows(scope, docs)
        if params is not None:
            self._write(_MEMORY_PUT, params)

    async def aadd(self, scope: tuple[str, ...], docs: Iterable[Doc]) -> None:
        params = _memory_rows(scope, docs)
        if params is not None:
            await self._awrite(_MEMORY_PUT, params)

    def search(
        self,
        scope: tuple[str, ...],
        query: str,
        *,
        limit: int = 10,
        weights: Mapping[str, float] | None = None,
    ) -> builtins.list[tuple[str, float]]:
        found: builtins.list[tuple[str, float]] = pgsearch.run(
            _memory_search(scope, query, limit, weights), self._read
        )
        return found

    async def asearch(
        self,
        scope: tuple[str, ...],
        query: str,
        *,
        limit: int = 10,
        weights: Mapping[str, float] | None = None,
    ) -> builtins.list[tuple[str, float]]:
        found: builtins.list[tuple[str, float]] = await pgsearch.arun(
            _memory_search(scope, query, limit, weights), self._aread
        )
        return found


def _memory_rows(scope: tuple[str, ...], docs: Iterable[Doc]) -> tuple[Any, ...] | None:
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


def _memory_search(
    scope: tuple[str, ...], query: str, limit: int, weights: Mapping[str, float] | None
) -> pgsearch.Steps:
    check_limit(limit)
    words = split_words(query_terms(query))
    if not words:
        return []
    key = scope_key(scope)
    found = yield from pgsearch.search(
        _MEMORY,
        {"ns": key},
        scope=pgsearch.scope_lexeme("m", key),
        words=words,
        limit=limit,
        weights=weights,
    )
    return found
