"""The archive's passage rows (migration 0005): what a write adds, and the backfill.

Every SQL archive indexes a row per passage of each archived message (thread,
namespace, message id, ordinal, text). The passages are cut in Python, by the
split recall ranks with (:func:`~langgraph_ctx.storage.hits.message_passages`),
so SQL cannot derive them in a trigger: each ``put`` writes them in the
transaction that archives their message, and :data:`STEPS` holds what the
migration runner runs right after 0005's SQL, in its transaction, to cut the
rows archived before it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict

from langgraph_ctx.retrieval.text import stems
from langgraph_ctx.storage import _fts
from langgraph_ctx.storage.hits import message_passages

BATCH = 500
"""Archived rows cut per round of the backfill: its memory stays that of one batch."""

PassageRow = tuple[str, str, str, int, str]
"""(thread id, namespace, message id, ordinal, text)."""


def passage_rows(
    thread_id: str, namespace: str, messages: Iterable[BaseMessage]
) -> list[PassageRow]:
    """The passage rows of ``messages`` (each needs an id)."""
    return [
        (thread_id, namespace, str(m.id), i, text)
        for m in messages
        for i, text in enumerate(message_passages(m))
    ]


def first_of_each(messages: Sequence[BaseMessage], known: Iterable[str]) -> list[BaseMessage]:
    """The messages a write inserts: not ``known`` (archived before), each id's first."""
    seen = set(known)
    out = []
    for m in messages:
        if m.id not in seen:
            seen.add(str(m.id))
            out.append(m)
    return out


_SQLITE_INSERT = (
    "INSERT OR IGNORE INTO lgctx_archive_passages"
    " (thread_id, namespace, message_id, ordinal, body, terms) VALUES (?, ?, ?, ?, ?, ?)"
)


def sqlite_terms(thread_id: str, namespace: str, body: str) -> str:
    """What SQLite indexes of a passage: its stems in order, repeats kept, cut at
    apostrophes as FTS5 would, each prefixed by its scope (see migrations 0005, 0006)."""
    words = [part for term in stems(body) for part in term.split("'") if part]
    return " ".join(_fts.scoped_terms(_fts.scope_token(thread_id, namespace), words))


def write_sqlite(cur: sqlite3.Cursor | sqlite3.Connection, rows: Sequence[PassageRow]) -> None:
    """Write passage rows (in the caller's transaction)."""
    cur.executemany(_SQLITE_INSERT, [(*row, sqlite_terms(row[0], row[1], row[4])) for row in rows])


def _cut(archived: Iterable[tuple[str, str, str, Any]]) -> list[PassageRow]:
    """Passage rows of (thread, namespace, message id, messages_to_dict form) rows."""
    out: list[PassageRow] = []
    for thread, namespace, mid, content in archived:
        (message,) = messages_from_dict([content])
        out += [(thread, namespace, mid, i, p) for i, p in enumerate(message_passages(message))]
    return out


def backfill_sqlite(conn: sqlite3.Connection) -> None:
    """Cut every archived row into passages (the runner's step after 0005's SQL)."""
    read = conn.execute(
        "SELECT thread_id, namespace, message_id, content_json FROM lgctx_archive ORDER BY id"
    )
    while batch := read.fetchmany(BATCH):
        write_sqlite(conn, _cut((t, ns, mid, json.loads(body)) for t, ns, mid, body in batch))


# Each passage carries its message's position (a key lookup in the archive).
_PG_BACKFILL = """
INSERT INTO lgctx_archive_passages (thread_id, namespace, message_id, ordinal, position, body)
SELECT p.thread_id, p.namespace, p.message_id, p.ordinal, a.position, p.body
FROM unnest(%s::text[], %s::text[], %s::text[], %s::integer[], %s::text[])
    AS p(thread_id, namespace, message_id, ordinal, body)
JOIN lgctx_archive AS a USING (thread_id, namespace, message_id)
"""


def backfill_postgres(conn: Any) -> None:
    """Cut every archived row into passages (the runner's step after 0005's SQL), read
    through a server-side cursor so that a large archive is never in memory whole."""
    with conn.cursor(name="lgctx_passages_backfill") as read, conn.cursor() as write:
        read.execute(
            "SELECT thread_id, namespace, message_id, content FROM lgctx_archive"
            " ORDER BY thread_id, namespace, position"
        )
        while batch := read.fetchmany(BATCH):
            # The runner's connection reads rows as dicts (pgconn's settings).
            rows = _cut(
                (r["thread_id"], r["namespace"], r["message_id"], r["content"]) for r in batch
            )
            if rows:
                write.execute(_PG_BACKFILL, tuple([row[i] for row in rows] for i in range(5)))


def memory_terms(body: str) -> str:
    """What SQLite's memory index holds of a memory (migration 0006): its stems in
    order, repeats kept, cut at apostrophes as FTS5 would (its scope has a column)."""
    return " ".join(part for term in stems(body) for part in term.split("'") if part)


def restem_sqlite(conn: sqlite3.Connection) -> None:
    """Give every passage and memory its stems (the runner's step after 0006's SQL),
    a batch of keys at a time. A memory's update indexes its stems (its trigger); the
    passages' index has no update trigger, and is rebuilt from the new terms."""
    for table, scoped in (("lgctx_archive_passages", True), ("lgctx_memory_index", False)):
        columns = "id, thread_id, namespace, body" if scoped else "id, '', '', body"
        last = -1
        while batch := conn.execute(
            f"SELECT {columns} FROM {table} WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH)
        ).fetchall():
            conn.executemany(
                f"UPDATE {table} SET terms = ? WHERE id = ?",
                [
                    (sqlite_terms(thread, ns, body) if scoped else memory_terms(body), key)
                    for key, thread, ns, body in batch
                ],
            )
            last = batch[-1][0]
    # Its entries were made from the old terms: 'rebuild' reads the new ones.
    conn.execute(
        "INSERT INTO lgctx_archive_passages_fts (lgctx_archive_passages_fts) VALUES ('rebuild')"
    )


STEPS: dict[str, dict[str, Callable[[Any], None]]] = {
    "sqlite": {"0005_archive_passages": backfill_sqlite, "0006_stemmed_search": restem_sqlite},
    "postgres": {"0005_archive_passages": backfill_postgres},
}
"""Per dialect, the Python step a migration runs after its SQL, by label."""
