"""What happened to one session's context: the data behind ``langgraph-ctx inspect``.

It reads, and never writes: the thread's latest checkpoint (messages,
summaries, the bounded ledger) through a checkpointer, and, where the tables
exist, the full event log and the archive size. Events come from whichever
holds the session: the event table where it has this thread's events (every
event); the ledger in the checkpoint where it does not (a graph run with no
event sink: the latest events only); both, merged by sequence number, where the
ledger holds events the table lacks (a sink added mid-session). The output
says which; a session whose ledger has events is never shown empty.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from langgraph_ctx import ledger
from langgraph_ctx.cli._render import sparkline, zone_counts
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger import event_data
from langgraph_ctx.markers import summary_info
from langgraph_ctx.state import delta_messages
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.storage.urls import DatabaseURL, parse_url


@dataclass
class Inspection:
    """One session, as ``inspect`` shows it (``--json`` prints :meth:`to_json`)."""

    thread_id: str
    database: str
    found: bool
    messages: int = 0
    step: int | None = None
    """LangGraph's step counter of the latest checkpoint."""
    events_source: str = "none"
    """``event table``; ``checkpoint ledger`` (bounded: the latest events only);
    ``event table and checkpoint ledger`` (merged); or ``none``."""
    event_counts: dict[str, int] = field(default_factory=dict)
    utilization: list[float] = field(default_factory=list)
    """Per LLM call, of the prompt as sent (after any compression)."""
    measured: list[float] = field(default_factory=list)
    """Per LLM call, as pre-flight measured it (before compression)."""
    zones: list[str] = field(default_factory=list)
    compressions: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    evictions: list[dict[str, Any]] = field(default_factory=list)
    recall_timeouts: list[dict[str, Any]] = field(default_factory=list)
    archive_rows: int = 0
    archive_tokens: int = 0
    other_namespaces: dict[str, int] = field(default_factory=dict)
    """Sub-agent namespaces with events of their own, and how many."""
    checkpoints: int = 0
    """Checkpoints the thread keeps, every namespace (retention: the latest few)."""
    checkpoint_bytes: int = 0
    """What they take: checkpoints, their pending writes and (PostgreSQL) the
    channel values they reference, as stored (before the database's own overhead)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def inspect_session(url: str | None, thread_id: str) -> Inspection:
    """Gather :class:`Inspection` for ``thread_id``; a missing thread has ``found=False``."""
    db = parse_url(url)
    if db.kind == "memory":
        raise ConfigurationError("database_url", "memory:// keeps no sessions to inspect")
    if db.kind == "sqlite" and not Path(db.path).exists():
        raise ConfigurationError(
            "database_url",
            f"no SQLite database at {db.path!r}; name the session's database with "
            "--database-url (the demo's: sqlite:///langgraph-ctx-demo.sqlite)",
        )
    with checkpointer_from_url(
        db.url, setup=False, max_connections=1, keep_checkpoints="all"
    ) as saver:
        found = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        messages = _history(saver, found) if found is not None else []
    result = Inspection(thread_id, db.redacted, found is not None)
    values: dict[str, Any] = dict(found.checkpoint["channel_values"]) if found else {}
    if found is not None:
        result.step = found.metadata.get("step")
    result.messages = len(messages)
    for message in messages:
        info = summary_info(message)
        if info is not None:
            lines = [ln for ln in message.text.splitlines()[1:] if ln.strip()]
            result.summaries.append({**info, "first_line": lines[0] if lines else ""})
    tables = _read_postgres(db, thread_id) if db.kind == "postgres" else _read_sqlite(db, thread_id)
    logged, result.archive_rows, result.archive_tokens, result.other_namespaces, kept = tables
    result.checkpoints, result.checkpoint_bytes = kept
    events, result.events_source = _events(logged or [], list(values.get("context_ledger") or ()))
    _fold(result, events)
    return result


def _events(
    logged: list[dict[str, Any]], ledger: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str]:
    """The session's events and where they came from. The table holds every event a
    sink wrote; the ledger, the latest few of every run, sink or not. A table that
    exists but never heard of this thread (a graph run without a sink, in a database
    that has the table) must not hide the ledger."""
    if not ledger:
        return logged, "event table" if logged else "none"
    if not logged:
        return ledger, "checkpoint ledger"
    seen = {int(e["seq"]) for e in logged}
    missing = [e for e in ledger if int(e["seq"]) not in seen]
    if not missing:
        return logged, "event table"
    merged = sorted([*logged, *missing], key=lambda e: int(e["seq"]))
    return merged, "event table and checkpoint ledger"


def _history(saver: BaseCheckpointSaver[Any], found: CheckpointTuple) -> list[BaseMessage]:
    """The thread's messages at ``found``. Under ``add_messages`` the checkpoint holds
    them whole; in a delta channel (:class:`~langgraph_ctx.state.DeltaContextState`)
    only every 100th update does (a snapshot, with the value in ``.value``), and the
    rest is the writes since, replayed here with the channel's reducer."""
    stored = found.checkpoint["channel_values"].get("messages")
    if stored is not None:
        return list(getattr(stored, "value", stored) or ())
    history = saver.get_delta_channel_history(config=found.config, channels=["messages"])
    entry = history.get("messages") or {"writes": []}
    seed = entry.get("seed")
    seed = getattr(seed, "value", seed) or []
    return delta_messages(seed, [value for _, _, value in entry["writes"]])


def _fold(result: Inspection, events: list[dict[str, Any]]) -> None:
    # Through the ledger's types; ``.get`` with a default where an event table
    # written by an earlier version may lack a field.
    for event in events:
        kind = str(event["kind"])
        result.event_counts[kind] = result.event_counts.get(kind, 0) + 1
        if (use := event_data(event, ledger.Utilization)) is not None:
            measured = float(use.get("utilization", 0.0))
            result.measured.append(measured)
            result.utilization.append(float(use.get("sent_utilization", measured)))
            result.zones.append(str(use.get("zone", "")))
        elif (run := event_data(event, ledger.Compression)) is not None:
            result.compressions.append(
                {
                    "seq": run.get("seq"),
                    "messages": run.get("messages"),
                    "tokens_before": run.get("tokens_before"),
                    "tokens_after": run.get("tokens_after"),
                    "ratio": run.get("ratio"),
                    "entity_retention": run.get("entity_retention"),
                    "meta": bool(run.get("meta")),
                }
            )
        elif (evicted := event_data(event, ledger.Eviction)) is not None:
            result.evictions.append({"seq": event["seq"], **evicted})
        elif (late := event_data(event, ledger.RecallTimeout)) is not None:
            result.recall_timeouts.append({"seq": event["seq"], **late})


Tables = tuple[list[dict[str, Any]] | None, int, int, dict[str, int], tuple[int, int]]
Query = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]

# Written once for both dialects: '?' becomes '%s' for PostgreSQL, and the event
# data column is data_json (text) in SQLite, data (jsonb) in PostgreSQL.
_EVENTS = (
    "SELECT seq, kind, {data} FROM lgctx_events WHERE thread_id = ? AND namespace = '' ORDER BY seq"
)
_NAMESPACES = (
    "SELECT namespace, count(*) FROM lgctx_events"
    " WHERE thread_id = ? AND namespace <> '' GROUP BY namespace ORDER BY namespace"
)
_ARCHIVE = "SELECT count(*), COALESCE(sum(tokens), 0) FROM lgctx_archive WHERE thread_id = ?"
# LangGraph's tables, by dialect: the checkpoint rows (count, bytes), then what else
# they keep per thread (bytes).
_CHECKPOINTS = {
    "sqlite": (
        "SELECT count(*), COALESCE(sum(length(checkpoint) + length(metadata)), 0)"
        " FROM checkpoints WHERE thread_id = ?",
        {"writes": "SELECT COALESCE(sum(length(value)), 0) FROM writes WHERE thread_id = ?"},
    ),
    "postgres": (
        "SELECT count(*), COALESCE(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0)"
        " FROM checkpoints WHERE thread_id = ?",
        {
            "checkpoint_writes": "SELECT COALESCE(sum(length(blob)), 0)"
            " FROM checkpoint_writes WHERE thread_id = ?",
            "checkpoint_blobs": "SELECT COALESCE(sum(length(blob)), 0)"
            " FROM checkpoint_blobs WHERE thread_id = ?",
        },
    ),
}


def _read_tables(query: Query, tables: set[str], thread_id: str, dialect: str) -> Tables:
    """The event log, sub-agent namespaces, archive size and checkpoint storage, from
    whichever tables exist."""
    events: list[dict[str, Any]] | None = None
    others: dict[str, int] = {}
    rows = tokens = 0
    if "lgctx_events" in tables:
        events = [
            {"seq": seq, "kind": kind, "data": json.loads(d) if isinstance(d, str) else d}
            for seq, kind, d in query(_EVENTS, (thread_id,))
        ]
        others = {str(ns): int(n) for ns, n in query(_NAMESPACES, (thread_id,))}
    if "lgctx_archive" in tables:
        ((rows, tokens),) = query(_ARCHIVE, (thread_id,))
    kept = (0, 0)
    if "checkpoints" in tables:
        counted, extra = _CHECKPOINTS[dialect]
        ((n, size),) = query(counted, (thread_id,))
        for table, sql in extra.items():
            if table in tables:
                ((more,),) = query(sql, (thread_id,))
                size += more
        kept = (int(n), int(size))
    return events, int(rows), int(tokens), others, kept


def _read_postgres(db: DatabaseURL, thread_id: str) -> Tables:
    from psycopg.rows import tuple_row

    from langgraph_ctx.storage.pgconn import connect

    with connect(db.url) as conn, conn.cursor(row_factory=tuple_row) as cursor:

        def query(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            sql = sql.format(data="data").replace("?", "%s")
            return cursor.execute(sql.encode(), params).fetchall()

        present = query(
            "SELECT t FROM unnest(ARRAY['lgctx_events', 'lgctx_archive', 'checkpoints',"
            " 'checkpoint_writes', 'checkpoint_blobs']) AS t WHERE to_regclass(t) IS NOT NULL",
            (),
        )
        return _read_tables(query, {str(name) for (name,) in present}, thread_id, "postgres")


def _read_sqlite(db: DatabaseURL, thread_id: str) -> Tables:
    # Read-only: inspect never writes, not even the tables a store would create.
    conn = sqlite3.connect(Path(db.path).resolve().as_uri() + "?mode=ro", uri=True)

    def query(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return conn.execute(sql.format(data="data_json"), params).fetchall()

    try:
        present = query("SELECT name FROM sqlite_master WHERE type = 'table'", ())
        return _read_tables(query, {str(name) for (name,) in present}, thread_id, "sqlite")
    finally:
        conn.close()


def format_inspection(s: Inspection, *, width: int = 60) -> str:
    """The terminal view: a header, the utilization chart, then one section per kind."""
    if not s.found:
        return f"thread {s.thread_id!r}: no checkpoint in {s.database}"
    lines = [
        f"thread {s.thread_id!r} in {s.database}",
        f"  {s.messages} active messages, step {s.step}, events from {s.events_source}",
        f"  {s.checkpoints} checkpoints kept, {s.checkpoint_bytes:,} bytes",
    ]
    util = s.utilization
    if util:
        lines += [
            f"utilization per LLM call ({len(util)} calls, 1 column = "
            f"{-(-len(util) // width)} call(s), max):",
            f"  1.0 |{sparkline(util, width=width)}|",
            f"      mean {sum(util) / len(util):.2f}  peak {max(util):.2f}  last {util[-1]:.2f}"
            f"  (peak before compression {max(s.measured):.2f})",
            f"      {zone_counts(s.zones)}",
        ]
    lines.append(f"compressions: {len(s.compressions)}")
    for c in s.compressions:
        retention = c["entity_retention"]
        lines.append(
            f"  #{c['seq']}{' (meta)' if c['meta'] else ''}: {c['messages']} messages, "
            f"{c['tokens_before']} -> {c['tokens_after']} tokens, ratio {c['ratio']}:1, "
            f"entity retention {'n/a' if retention is None else f'{retention:.0%}'}"
        )
    lines.append(f"summaries in context: {len(s.summaries)}")
    for summary in s.summaries:
        text = summary["first_line"]
        lines.append(f"  #{summary.get('seq')}: {text[:96]}{'...' if len(text) > 96 else ''}")
    lines.append(f"evicted tools: {len(s.evictions)}")
    lines += [f"  {_brief(e, ('tool', 'tools', 'name', 'evicted'))}" for e in s.evictions]
    lines.append(f"recall timeouts: {len(s.recall_timeouts)}")
    lines += [f"  {_brief(e, ('timeout', 'elapsed', 'reason'))}" for e in s.recall_timeouts]
    lines.append(f"archive: {s.archive_rows} messages, {s.archive_tokens:,} tokens")
    if s.other_namespaces:
        lines.append(
            "sub-agent namespaces: "
            + ", ".join(f"{ns} ({n} events)" for ns, n in s.other_namespaces.items())
        )
    return "\n".join(lines)


def _brief(event: dict[str, Any], keys: tuple[str, ...]) -> str:
    picked = {k: event[k] for k in keys if k in event}
    body = picked or {k: v for k, v in event.items() if k != "seq"}
    return f"seq {event['seq']}: " + json.dumps(body, default=str)[:120]
