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
"""

from __future__ import annotations

import builtins
import json
import threading
import time
from collections.abc import Sequence
from typing import Protocol

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage._base import SQLiteTable, in_thread
from langgraph_ctx.tokens import TokenCounter

__all__ = ["InMemoryArchive", "MessageArchive", "SQLiteArchive", "check_batch"]


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


def check_batch(thread_id: str, messages: Sequence[BaseMessage]) -> None:
    # Validate the whole batch first so a bad message never leaves half a batch written.
    if not thread_id:
        raise ConfigurationError("thread_id", "an archive write needs a non-empty thread id")
    for i, message in enumerate(messages):
        if not message.id:
            raise ConfigurationError(
                "message.id",
                f"message {i} ({message.type}) has no id, so it cannot be archived by id; "
                "give every message an id before it can be compressed",
            )


class InMemoryArchive:
    """A process-local archive: the default, and enough for tests and short sessions.

    Messages are copied in and out, so later mutation by the caller (pinning,
    marking) cannot alter what was archived.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], dict[str, tuple[int, BaseMessage]]] = {}
        self._next: dict[str, int] = {}  # thread -> next position, shared by namespaces

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        check_batch(thread_id, messages)
        with self._lock:
            rows = self._rows.setdefault((thread_id, namespace), {})
            for message in messages:
                assert message.id is not None  # checked above
                if message.id in rows:
                    continue  # idempotent: a retried step re-archives the same ids
                position = self._next.get(thread_id, 0)
                self._next[thread_id] = position + 1
                rows[message.id] = (position, message.model_copy(deep=True))

    def get(self, thread_id: str, message_id: str, *, namespace: str = "") -> BaseMessage | None:
        with self._lock:
            row = self._rows.get((thread_id, namespace), {}).get(message_id)
        return None if row is None else row[1].model_copy(deep=True)

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[BaseMessage]:
        with self._lock:
            rows = builtins.list(self._rows.get((thread_id, namespace), {}).values())
        # Insertion order is archive order: positions are handed out under the lock.
        return [m.model_copy(deep=True) for _, m in rows]

    aput, aget, alist = in_thread(put), in_thread(get), in_thread(list)


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
        # Serialize and count before taking the lock: only the SQL runs under it.
        rows = [
            (m.id, m.type, json.dumps(d, default=str), self._counter.count_message(m))
            for m, d in zip(messages, messages_to_dict(messages), strict=True)
        ]
        now = time.time()
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                (last,) = cur.execute(
                    "SELECT COALESCE(MAX(position), -1) FROM lgctx_archive WHERE thread_id = ?",
                    (thread_id,),
                ).fetchone()
                cur.executemany(
                    "INSERT OR IGNORE INTO lgctx_archive (thread_id, namespace, message_id,"
                    " position, role, content_json, tokens, archived_at, reason)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (thread_id, namespace, mid, last + 1 + i, role, body, tokens, now, reason)
                        for i, (mid, role, body, tokens) in enumerate(rows)
                    ],
                )
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            finally:
                cur.close()

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

    aput, aget, alist = in_thread(put), in_thread(get), in_thread(list)

    def _query(self, sql: str, params: tuple[str, ...]) -> builtins.list[tuple[str]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()


def _decode(rows: Sequence[tuple[str]]) -> builtins.list[BaseMessage]:
    return messages_from_dict([json.loads(content) for (content,) in rows])
