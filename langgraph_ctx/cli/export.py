"""The decision records of a database, as JSON lines: the data behind
``langgraph-ctx export`` (schema: docs/decisions.md,
:mod:`langgraph_ctx.ledger.decisions`).

Like ``inspect`` it only reads: each thread's events from the event table where it
has them, merged with the ledger its latest checkpoint keeps (a graph run with no
event sink has only that), every namespace (sub-agents too); the ``glimpse`` calls
from the thread's messages, the checkpoint's and the archived originals'.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from langchain_core.messages import BaseMessage, messages_from_dict
from typing_extensions import TypedDict

from langgraph_ctx.cli.inspect import _events, _history
from langgraph_ctx.compression.summarizers import transcript
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.decisions import (
    SCHEMA_VERSION,
    DecisionRecord,
    Outcome,
    decisions,
    glimpse_references,
)
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.storage.urls import DatabaseURL, parse_url

Query = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]


def parse_since(value: str | None) -> float | None:
    """``--since``: Unix seconds, or an ISO date/time (UTC when it names no zone)."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigurationError(
            "--since", f"expected Unix seconds or an ISO date/time, got {value!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def export_decisions(
    url: str | None, *, thread_id: str | None = None, since: float | None = None
) -> Iterator[DecisionRecord]:
    """Every decision record of ``thread_id`` (else of every thread), in thread and
    sequence order; ``since``: only decisions at or after that Unix time."""
    for record, _ in _walk(url, thread_id, since, originals=False):
        yield record


def export_chat(
    url: str | None, *, thread_id: str | None = None, since: float | None = None
) -> Iterator[ChatRecord]:
    """The decisions that wrote text in place of messages, as chat examples (see
    :class:`ChatRecord`); a decision whose originals are not in the archive is left out."""
    for record, found in _walk(url, thread_id, since, originals=True):
        chat = chat_record(record, found)
        if chat is not None:
            yield chat


class ChatRecord(TypedDict):
    """One line of ``export --format chat``: a decision as a conversation a trainer
    reads (TRL's conversational format): the instruction, the task and the messages
    the decision replaced, and, as the assistant's answer, the text it wrote."""

    schema_version: int
    format: str
    thread_id: str
    namespace: str
    seq: int
    kind: str
    source: str | None
    messages: list[dict[str, str]]
    outcome: Outcome


CHAT_INSTRUCTION = (
    "You manage the context of an AI agent. Replace the messages below with the text "
    "the agent should keep in their place: what its task still needs (ids, values, "
    "names, failed attempts), nothing it does not."
)


@dataclass(frozen=True)
class Found:
    """A thread's messages by id, archived and live, and its task."""

    archived: dict[str, BaseMessage]
    """The originals, as the archive keeps them (a compacted result keeps its id:
    its original is here, its digest in ``live``)."""
    live: dict[str, BaseMessage]
    task: str


def chat_record(record: DecisionRecord, found: Found) -> ChatRecord | None:
    """``record`` as a chat example, if its originals and what it wrote are known
    (``tool_results_compacted`` is left out: its ``context_edit`` is the same edit)."""
    if record["kind"] == "tool_results_compacted":
        return None
    removed = [found.archived.get(i) for i in record["did"]["removed_ids"]]
    written = [found.live.get(i) or found.archived.get(i) for i in record["did"]["written_ids"]]
    if not removed or not written or None in removed or None in written:
        return None
    originals = transcript([m for m in removed if m is not None])
    answer = "\n\n".join(str(m.text) for m in written if m is not None)
    ask = (f"Task:\n{found.task}\n\n" if found.task else "") + f"Messages:\n{originals}"
    return ChatRecord(
        schema_version=SCHEMA_VERSION,
        format="chat",
        thread_id=record["thread_id"],
        namespace=record["namespace"],
        seq=record["seq"],
        kind=record["kind"],
        source=record["source"],
        messages=[
            {"role": "system", "content": CHAT_INSTRUCTION},
            {"role": "user", "content": ask},
            {"role": "assistant", "content": answer},
        ],
        outcome=record["outcome"],
    )


def _walk(
    url: str | None, thread_id: str | None, since: float | None, *, originals: bool
) -> Iterator[tuple[DecisionRecord, Found]]:
    db = parse_url(url)
    if db.kind == "memory":
        raise ConfigurationError("database_url", "memory:// keeps no sessions to export")
    if db.kind == "sqlite" and not Path(db.path).exists():
        raise ConfigurationError("database_url", f"no SQLite database at {db.path!r}")
    with _reader(db) as query:
        tables = _tables(query, db)
        threads = [thread_id] if thread_id is not None else _threads(query, tables)
        with checkpointer_from_url(
            db.url, setup=False, max_connections=1, keep_checkpoints="all"
        ) as saver:
            for thread in threads:
                for namespace in _namespaces(query, tables, thread):
                    config = {"configurable": {"thread_id": thread, "checkpoint_ns": namespace}}
                    found = saver.get_tuple(config)  # type: ignore[arg-type]
                    values = dict(found.checkpoint["channel_values"]) if found else {}
                    messages: list[Any] = _history(saver, found) if found else []
                    logged = _logged(query, tables, thread, namespace)
                    events, _ = _events(logged, list(values.get("context_ledger") or ()))
                    archived = _archived(query, tables, thread, namespace)
                    glimpsed = glimpse_references([*messages, *archived])
                    known = Found({}, {}, "")
                    if originals:
                        task = next((m for m in messages if m.type == "human"), None)
                        known = Found(
                            {str(m.id): m for m in archived},
                            {str(m.id): m for m in messages},
                            "" if task is None else str(task.text),
                        )
                    for record in decisions(
                        events, thread_id=thread, namespace=namespace, glimpsed=glimpsed
                    ):
                        if since is None or (record["ts"] or 0.0) >= since:
                            yield record, known


def write_jsonl(records: Iterator[Mapping[str, Any]], out: TextIO) -> int:
    """One JSON object a line; returns how many."""
    n = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        n += 1
    return n


class _reader:
    """A read-only query function over the database (SQLite opened ``mode=ro``)."""

    def __init__(self, db: DatabaseURL) -> None:
        self.db = db
        self._close: Callable[[], None] = lambda: None

    def __enter__(self) -> Query:
        if self.db.kind == "postgres":
            from psycopg.rows import tuple_row

            from langgraph_ctx.storage.pgconn import connect

            conn = connect(self.db.url)
            cursor = conn.cursor(row_factory=tuple_row)

            def pg(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                sql = sql.format(data="data", content="content").replace("?", "%s")
                return cursor.execute(sql.encode(), params).fetchall()

            self._close = conn.close
            return pg
        lite = sqlite3.connect(Path(self.db.path).resolve().as_uri() + "?mode=ro", uri=True)

        def sq(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return lite.execute(
                sql.format(data="data_json", content="content_json"), params
            ).fetchall()

        self._close = lite.close
        return sq

    def __exit__(self, *exc: object) -> None:
        self._close()


_KNOWN = ("lgctx_events", "lgctx_archive", "checkpoints")


def _tables(query: Query, db: DatabaseURL) -> set[str]:
    if db.kind == "postgres":
        rows = query(
            "SELECT t FROM unnest(ARRAY['lgctx_events', 'lgctx_archive', 'checkpoints'])"
            " AS t WHERE to_regclass(t) IS NOT NULL",
            (),
        )
    else:
        rows = query("SELECT name FROM sqlite_master WHERE type = 'table'", ())
    return {str(name) for (name,) in rows} & set(_KNOWN)


def _threads(query: Query, tables: set[str]) -> list[str]:
    found: set[str] = set()
    if "checkpoints" in tables:
        found |= {str(t) for (t,) in query("SELECT DISTINCT thread_id FROM checkpoints", ())}
    if "lgctx_events" in tables:
        found |= {str(t) for (t,) in query("SELECT DISTINCT thread_id FROM lgctx_events", ())}
    return sorted(found)


def _namespaces(query: Query, tables: set[str], thread: str) -> list[str]:
    found = {""}
    if "lgctx_events" in tables:
        sql = "SELECT DISTINCT namespace FROM lgctx_events WHERE thread_id = ?"
        found |= {str(ns) for (ns,) in query(sql, (thread,))}
    return sorted(found)


def _logged(query: Query, tables: set[str], thread: str, namespace: str) -> list[dict[str, Any]]:
    if "lgctx_events" not in tables:
        return []
    sql = (
        "SELECT seq, kind, node, ts, {data} FROM lgctx_events"
        " WHERE thread_id = ? AND namespace = ? ORDER BY seq"
    )
    return [
        {
            "seq": seq,
            "kind": kind,
            "node": node,
            "ts": _seconds(ts),
            "data": json.loads(d) if isinstance(d, str) else d,
        }
        for seq, kind, node, ts, d in query(sql, (thread, namespace))
    ]


def _archived(query: Query, tables: set[str], thread: str, namespace: str) -> list[BaseMessage]:
    """The thread's archived originals (``messages_to_dict`` form in the table), in
    their order; one that no longer loads is left out."""
    if "lgctx_archive" not in tables:
        return []
    sql = (
        "SELECT {content} FROM lgctx_archive WHERE thread_id = ? AND namespace = ?"
        " ORDER BY position"
    )
    out: list[BaseMessage] = []
    for (raw,) in query(sql, (thread, namespace)):
        try:
            out += messages_from_dict([json.loads(raw) if isinstance(raw, str) else raw])
        except (ValueError, KeyError, TypeError):
            continue  # written by a version whose form this one cannot read
    return out


def _seconds(ts: Any) -> float | None:
    if isinstance(ts, (int, float)):
        return float(ts)
    if isinstance(ts, datetime):
        return ts.timestamp()
    return None
