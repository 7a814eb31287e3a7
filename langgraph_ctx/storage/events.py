"""The context event log in SQLite: every ledger entry, not only the last few.

The checkpoint's ``context_ledger`` is bounded (it is rewritten into every
checkpoint); an :class:`~langgraph_ctx.pipeline.EventSink` keeps the whole
record, for ``langgraph-ctx inspect`` and for analysis::

    Pipeline([...], events=SQLiteEventSink("sessions.sqlite"))

Opening the file applies the package's migrations to it (idempotent), so the
table exists. Writes are idempotent on ``(thread, namespace, seq)``: a step
re-run after a crash records the same sequence numbers again. The PostgreSQL
twin is :class:`langgraph_ctx.storage.postgres.PostgresEventSink`.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence

from langgraph_ctx._workers import in_thread
from langgraph_ctx.state import LedgerEntry
from langgraph_ctx.storage._base import SQLiteTable


class SQLiteEventSink(SQLiteTable):
    """An event sink in a SQLite file (or ``":memory:"``), safe across threads and processes.

    One connection behind a lock, in WAL mode with a busy timeout (see
    :class:`~langgraph_ctx.storage._base.SQLiteTable`); async methods run the sync
    ones in a worker thread, since SQLite calls are short and local.
    """

    def write(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None:
        rows = [
            (thread_id, namespace, e["seq"], e["kind"], e["node"], e["ts"], _dumps(e["data"]))
            for e in entries
        ]
        if not rows:
            return
        with self._write() as cur:
            cur.executemany(
                "INSERT OR IGNORE INTO lgctx_events"
                " (thread_id, namespace, seq, kind, node, ts, data_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def list(self, thread_id: str, *, namespace: str = "") -> builtins.list[LedgerEntry]:
        """Every event of one thread and namespace, in ``seq`` order, then ``node``
        (parallel nodes of one step share a seq), as the PostgreSQL sink reads them."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, kind, node, ts, data_json FROM lgctx_events"
                " WHERE thread_id = ? AND namespace = ? ORDER BY seq, node",
                (thread_id, namespace),
            ).fetchall()
        return [
            LedgerEntry(seq=s, kind=k, node=n, ts=t, data=json.loads(d)) for s, k, n, t, d in rows
        ]

    awrite, alist = in_thread(write), in_thread(list)


def _dumps(data: object) -> str:
    return json.dumps(data, default=str)
