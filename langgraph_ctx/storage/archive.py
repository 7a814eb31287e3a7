"""The archive of original messages: what makes compression lossless.

Every message that compression removes from the active state is written here
first, keyed by ``(thread_id, namespace, message id)``, so that it stays
retrievable after its summary replaced it. Two properties matter:

- Writes are idempotent. LangGraph retries a failed step from its last
  checkpoint, so the same messages may be archived twice; the second write must
  be a no-op, not a duplicate row.
- Reads are scoped by thread (and namespace): one session never sees another's
  history, even when many sessions share one database.

``position`` records the order of archiving within a thread. It only grows, but
may have gaps (an ignored duplicate does not consume one in memory, may in SQL).

Every archive is also searchable (:meth:`MessageArchive.search`): a question in
plain words finds the archived originals that answer it, ranked by BM25 over an
index kept up to date by each write (never a scan of the thread). What is
indexed of a message is :func:`searchable_text`: its text, its name, the tool
call id it answers, and the name, id and arguments of each tool call it makes,
one row per passage of it (:func:`~langgraph_ctx.storage.hits.message_passages`);
a message ranks by its best passage, so the one line of a long tool result that
answers is not drowned by the rest of it.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from langgraph_ctx._workers import in_thread
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import Doc, LexicalIndex, query_terms, split_words
from langgraph_ctx.retrieval.vectors import FUSED_DEPTH, VectorIndex, fuse
from langgraph_ctx.storage import _fts
from langgraph_ctx.storage._base import SQLiteTable
from langgraph_ctx.storage._passages import first_of_each, passage_rows, write_sqlite
from langgraph_ctx.storage.hits import (
    ArchiveHit,
    Found,
    HitKind,
    build_hits,
    check_search,
    message_passages,
    searchable_text,
)
from langgraph_ctx.tokens import TokenCounter

__all__ = [
    "ArchiveHit",
    "HitKind",
    "InMemoryArchive",
    "MessageArchive",
    "SQLiteArchive",
    "check_batch",
    "searchable_text",
]


class MessageArchive(Protocol):
    """Where messages removed from active state are kept, by thread and message id."""

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        """Archive ``messages`` for ``thread_id``; ones already archived are skipped.

        ``reason`` says why they left the state (``"compression"``, ...). Every
        message needs an id: it is the key. Raises :class:`ConfigurationError`
        before writing anything if one lacks it.
        """
        ...

    async def aput(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None: ...

    def get(self, thread_id: str, message_id: str, *, namespace: str = "") -> BaseMessage | None:
        """The archived message, or ``None`` if this thread never archived that id."""
        ...

    async def aget(
        self, thread_id: str, message_id: str, *, namespace: str = ""
    ) -> BaseMessage | None: ...

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[BaseMessage]:
        """Every message archived for ``thread_id`` in ``namespace``, in archive order."""
        ...

    async def alist(self, thread_id: str, *, namespace: str = "") -> builtins.list[BaseMessage]: ...

    def search(
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = "", within: str = ""
    ) -> builtins.list[ArchiveHit]:
        """The archived messages of ``thread_id`` (and ``namespace``) that best match ``query``.

        ``query`` is plain words, such as the user's question: its terms (stop
        words dropped) are OR-ed, and hits are ranked by relevance (BM25 or the
        engine's equivalent), best first, at most ``limit``. Only this thread's
        and namespace's messages are ever returned. A query with no terms, or a
        thread that archived nothing, returns ``[]``; an empty thread id or a
        ``limit`` below 1 raises :class:`ConfigurationError`.

        ``within``: only passages that hold every term of it (a name the question
        asks about) are ranked, by ``query``: the engine intersects their postings.
        """
        ...

    async def asearch(
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = "", within: str = ""
    ) -> builtins.list[ArchiveHit]: ...


def check_batch(thread_id: str, messages: Sequence[BaseMessage]) -> None:
    # Validate the whole batch first so a bad message never leaves half a batch written.
    if not thread_id:
        raise ConfigurationError("thread_id", "an archive write needs a non-empty thread id")
    for i, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise ConfigurationError(
                "messages", f"message {i}: expected a LangChain message, got {message!r:.80}"
            )
        if not message.id:
            raise ConfigurationError(
                "message.id",
                f"message {i} ({message.type}) has no id, so it cannot be archived by id; "
                "give every message an id before it can be compressed",
            )


class InMemoryArchive:
    """A process-local archive: the default, and enough for tests and short sessions.

    Messages are copied in and out, so later mutation by the caller (pinning,
    marking) cannot alter what was archived. Search runs on a
    :class:`~langgraph_ctx.retrieval.index.LexicalIndex` of passages (each owned
    by its message) fed by each ``put``.

    ``embeddings`` (any LangChain ``Embeddings``; the ``embeddings`` extra's
    :class:`~langgraph_ctx.retrieval.embeddings.MiniLMEmbeddings` runs offline) makes
    search hybrid: each passage is also embedded, in a background thread after ``put``
    returns (:class:`~langgraph_ctx.retrieval.vectors.VectorIndex`), and a search fuses
    the lexical and the vector ranking (:func:`~langgraph_ctx.retrieval.vectors.fuse`),
    so a question that shares no word with what answers it still finds it. Without
    it, search is lexical alone. :meth:`wait_for_vectors` waits for the embedding.
    """

    def __init__(self, *, embeddings: Embeddings | None = None) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], dict[str, _Row]] = {}
        self._next: dict[str, int] = {}  # thread -> next position, shared by namespaces
        self._index = LexicalIndex()
        self._vectors = None if embeddings is None else VectorIndex(embeddings)

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        check_batch(thread_id, messages)
        scope = (thread_id, namespace)
        now = time.time()
        with self._lock:
            rows = self._rows.setdefault(scope, {})
            new: builtins.list[Doc] = []
            for message in messages:
                assert message.id is not None  # checked above
                if message.id in rows:
                    continue  # idempotent: a retried step re-archives the same ids
                position = self._next.get(thread_id, 0)
                self._next[thread_id] = position + 1
                cut = tuple(message_passages(message))
                rows[message.id] = _Row(position, message.model_copy(deep=True), now, reason, cut)
                # A passage's key: the message id and its ordinal (ids hold any character).
                new += [Doc(f"{i}:{message.id}", p, owner=message.id) for i, p in enumerate(cut)]
            # Under the archive's lock: a search never sees a row without its index entry.
            self._index.add(scope, new)
        if self._vectors is not None:
            self._vectors.submit(scope, new)

    def wait_for_vectors(self) -> None:
        """Block until every passage archived so far is embedded (nothing to wait for
        without ``embeddings``)."""
        if self._vectors is not None:
            self._vectors.wait()

    def get(self, thread_id: str, message_id: str, *, namespace: str = "") -> BaseMessage | None:
        with self._lock:
            row = self._rows.get((thread_id, namespace), {}).get(message_id)
        return None if row is None else row.message.model_copy(deep=True)

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[BaseMessage]:
        with self._lock:
            rows = builtins.list(self._rows.get((thread_id, namespace), {}).values())
        # Insertion order is archive order: positions are handed out under the lock.
        return [row.message.model_copy(deep=True) for row in rows]

    def search(
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = "", within: str = ""
    ) -> builtins.list[ArchiveHit]:
        if not check_search(thread_id, query, limit):
            return []
        scope = (thread_id, namespace)
        meaning: set[str] = set()
        if self._vectors is None or within:
            # ``within`` names what the passage must hold: words decide that, not meaning.
            found = self._index.search_owners(scope, query, limit=limit, within=within)
        else:
            depth = max(limit, FUSED_DEPTH)
            near = self._vectors.search_owners(scope, query, limit=depth)
            meaning = {owner for owner, _, _ in near}
            found = fuse(self._index.search_owners(scope, query, limit=depth), near, limit=limit)
        with self._lock:
            rows = self._rows.get(scope, {})
            kept = [(key, rows[key], score, passage) for key, score, passage in found]
        hits: builtins.list[Found] = []
        for key, r, score, passage in kept:
            text = r.passages[int(passage.split(":", 1)[0])]  # the key is "ordinal:id"
            message = r.message.model_copy(deep=True)
            hits.append((key, r.position, r.reason, r.archived_at, message, score, text))
        return build_hits(hits, meaning)

    aput, aget, alist = in_thread(put), in_thread(get), in_thread(list)
    asearch = in_thread(search)


@dataclass(frozen=True)
class _Row:
    position: int
    message: BaseMessage
    archived_at: float
    reason: str
    passages: tuple[str, ...]


class SQLiteArchive(SQLiteTable):
    """An archive in a SQLite file (or ``":memory:"``), safe across threads and processes.

    One connection, guarded by a lock, serves all threads. Writes take the
    database write lock up front (``BEGIN IMMEDIATE``) so that two processes
    archiving into one thread cannot hand out the same position. The file is
    in WAL mode so readers do not block the writer. Async methods run the sync
    ones in a worker thread (:func:`~langgraph_ctx.storage._base.in_thread`):
    SQLite calls are short and local.
    """

    def __init__(self, path: str = ":memory:", *, counter: TokenCounter | None = None) -> None:
        super().__init__(path)
        self._counter = counter or TokenCounter()

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        check_batch(thread_id, messages)
        if not messages:
            return
        # Serialize, count and cut before taking the lock: only the SQL runs under it.
        rows = [
            (m.id, m.type, json.dumps(d, default=str), self._counter.count_message(m))
            for m, d in zip(messages, messages_to_dict(messages), strict=True)
        ]
        cut = {m.id: passage_rows(thread_id, namespace, [m]) for m in reversed(messages)}
        now = time.time()
        with self._write() as cur:
            (last,) = cur.execute(
                "SELECT COALESCE(MAX(position), -1) FROM lgctx_archive WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            # Under the write lock: the ids archived before stay as they were, passages too.
            known = cur.execute(
                "SELECT message_id FROM lgctx_archive WHERE thread_id = ? AND namespace = ?"
                " AND message_id IN (SELECT value FROM json_each(?))",
                (thread_id, namespace, json.dumps([m.id for m in messages])),
            ).fetchall()
            cur.executemany(
                "INSERT OR IGNORE INTO lgctx_archive (thread_id, namespace, message_id,"
                " position, role, content_json, tokens, archived_at, reason)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (thread_id, namespace, mid, last + 1 + i, role, body, tokens, now, reason)
                    for i, (mid, role, body, tokens) in enumerate(rows)
                ],
            )
            new = first_of_each(messages, (mid for (mid,) in known))
            write_sqlite(cur, [row for m in new for row in cut[m.id]])

    def get(self, thread_id: str, message_id: str, *, namespace: str = "") -> BaseMessage | None:
        rows = self._query(
            "SELECT content_json FROM lgctx_archive"
            " WHERE thread_id = ? AND namespace = ? AND message_id = ?",
            (thread_id, namespace, message_id),
        )
        return _decode(rows)[0] if rows else None

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[BaseMessage]:
        return _decode(
            self._query(
                "SELECT content_json FROM lgctx_archive WHERE thread_id = ? AND namespace = ?"
                " ORDER BY position",
                (thread_id, namespace),
            )
        )

    def search(
        self, thread_id: str, query: str, *, limit: int = 10, namespace: str = "", within: str = ""
    ) -> builtins.list[ArchiveHit]:
        words = split_words(check_search(thread_id, query, limit))
        required = split_words(query_terms(within))
        if not words:
            return []
        token = _fts.scope_token(thread_id, namespace)
        with self._lock:
            found, _ = _fts.search(
                self._conn,
                table="lgctx_archive_passages",
                ranked=_RANKED,
                scope=None,  # the terms carry it
                words=_fts.scoped_terms(token, list(dict.fromkeys([*words, *required]))),
                limit=limit,
                required=_fts.scoped_terms(token, required),
            )
            got = self._conn.execute(
                "SELECT message_id, position, reason, archived_at, content_json"
                " FROM lgctx_archive WHERE thread_id = ? AND namespace = ?"
                " AND message_id IN (SELECT value FROM json_each(?))",
                (thread_id, namespace, json.dumps([mid for mid, *_ in found])),
            ).fetchall()
        by_id = {row[0]: row for row in got}
        # The scoped terms select the thread; the equality above is the guarantee.
        kept = [(by_id[mid], score, passage) for mid, score, passage in found if mid in by_id]
        messages = _decode([(row[4],) for row, _, _ in kept])
        return build_hits(
            [
                (mid, int(position), reason, float(at), message, score, passage)
                for ((mid, position, reason, at, _), score, passage), message in zip(
                    kept, messages, strict=True
                )
            ]
        )

    aput, aget, alist = in_thread(put), in_thread(get), in_thread(list)
    asearch = in_thread(search)

    def _query(self, sql: str, params: tuple[str, ...]) -> builtins.list[tuple[str]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()


# Each message once, by its best passage (SQLite takes the bare columns of a max()
# from the row that has it), so LIMIT counts messages.
_RANKED = """
SELECT p.message_id, max(-f.rank) AS score, p.body
FROM lgctx_archive_passages_fts AS f JOIN lgctx_archive_passages AS p ON p.id = f.rowid
WHERE lgctx_archive_passages_fts MATCH :match
GROUP BY p.message_id
ORDER BY score DESC
LIMIT :limit
"""


def _decode(rows: Sequence[tuple[str]]) -> builtins.list[BaseMessage]:
    return messages_from_dict([json.loads(content) for (content,) in rows])
