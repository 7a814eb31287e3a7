"""Savers that prune after each checkpoint they save (policy: :mod:`.retention`).

:func:`with_retention` gives a saver's *twin*: the same connection, lock and
serializer, of a subclass of the saver's own class whose ``put`` (``aput`` for
the async savers) saves the checkpoint, commits it, then prunes that thread.
A subclass, not a wrapper: whatever checks ``isinstance(saver, SqliteSaver)``
(:func:`~langgraph_ctx.storage.stores.stores_beside`, LangGraph) still sees one;
and a twin, so a saver the caller made is left as it was.

The SQL runs on the saver's tables as LangGraph 1.x lays them out
(``checkpoints`` and ``writes`` in SQLite; ``checkpoints``,
``checkpoint_writes`` and ``checkpoint_blobs`` in PostgreSQL); ``tests/
test_retention.py`` checks it against both on real databases. A prune that
fails is logged and left to the next checkpoint: the one just saved is
committed, and a run must not fail over history it was only tidying.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Generator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.retention import (
    Delete,
    History,
    Op,
    Read,
    Retention,
    Rows,
    Snapshot,
    arun,
    chunks,
    run,
)

__all__ = ["retention_of", "with_retention"]

logger = logging.getLogger("langgraph_ctx.storage")

_TWINS: dict[type, type] = {}


def retention_of(saver: object) -> Retention | None:
    """The retention a saver from :func:`with_retention` applies (``None``: keeps all)."""
    return getattr(saver, "_lgctx_retention", None)


def with_retention(saver: BaseCheckpointSaver[Any], keep: int | None) -> BaseCheckpointSaver[Any]:
    """A twin of ``saver`` that keeps the latest ``keep`` checkpoints per thread and
    namespace (``None``: ``saver`` itself, keeping all). ``saver`` must be a
    ``SqliteSaver``, ``AsyncSqliteSaver``, ``PostgresSaver`` or ``AsyncPostgresSaver``."""
    if keep is None:
        return saver
    backend = _backend(saver)
    base = type(saver)
    if issubclass(base, (_SyncPruning, _AsyncPruning)):  # a twin: a twin of its original
        base = base.__bases__[1]
    twin_class = _TWINS.get(base)
    if twin_class is None:
        mixin = _AsyncPruning if backend.startswith("async") else _SyncPruning
        twin_class = _TWINS[base] = type(f"Retaining{base.__name__}", (mixin, base), {})
    twin: Any = object.__new__(twin_class)
    twin.__dict__.update(saver.__dict__)  # the same connection, lock and serializer
    twin._lgctx_retention = Retention(keep)
    twin._lgctx_backend = backend
    return twin  # type: ignore[no-any-return]


def _backend(saver: object) -> str:
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(saver, SqliteSaver):
        return "sqlite"
    aio = sys.modules.get("langgraph.checkpoint.sqlite.aio")
    if aio is not None and isinstance(saver, aio.AsyncSqliteSaver):
        return "async_sqlite"
    pg = sys.modules.get("langgraph.checkpoint.postgres")
    if pg is not None and isinstance(saver, pg.PostgresSaver):
        return "postgres"
    pg_aio = sys.modules.get("langgraph.checkpoint.postgres.aio")
    if pg_aio is not None and isinstance(saver, pg_aio.AsyncPostgresSaver):
        return "async_postgres"
    raise ConfigurationError(
        "keep_checkpoints",
        f"checkpoint retention needs a SqliteSaver, AsyncSqliteSaver, PostgresSaver or "
        f"AsyncPostgresSaver; got {type(saver).__name__} (pass keep_checkpoints=None)",
    )


class _SyncPruning:
    _lgctx_retention: Retention
    _lgctx_backend: str

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved: RunnableConfig = super().put(  # type: ignore[misc]
            config, checkpoint, metadata, new_versions
        )
        steps = self._lgctx_retention.after_put(config, checkpoint, metadata)
        if steps is not None:
            try:
                run(steps, self._lgctx_do)
            except Exception:
                logger.warning("pruning checkpoints after %s failed", saved, exc_info=True)
        return saved

    def _lgctx_do(self, op: Op) -> Any:
        saver: Any = self
        if isinstance(op, Read):
            return saver.get_tuple(op.config)
        if isinstance(op, History):
            return saver.get_delta_channel_history(config=op.config, channels=op.channels)
        if self._lgctx_backend == "sqlite":
            with saver.lock:
                if isinstance(op, Rows):
                    return saver.conn.execute(_SQLITE_ROWS, (op.thread_id,)).fetchall()
                try:
                    for sql, params in _sqlite_writes(saver, op):
                        saver.conn.execute(sql, params)
                    saver.conn.commit()
                except BaseException:
                    saver.conn.rollback()
                    raise
                return None
        with saver._cursor() as cur:
            if isinstance(op, Rows):
                cur.execute(_PG_ROWS, (op.thread_id,))
                return [(r["checkpoint_ns"], r["checkpoint_id"]) for r in cur.fetchall()]
            with cur.connection.transaction():
                steps = _pg_writes(saver, op)
                try:
                    sql, params, fetch = next(steps)
                    while True:
                        cur.execute(sql, params)
                        sql, params, fetch = steps.send(cur.fetchall() if fetch else [])
                except StopIteration:
                    pass
        return None


class _AsyncPruning:
    _lgctx_retention: Retention
    _lgctx_backend: str

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved: RunnableConfig = await super().aput(  # type: ignore[misc]
            config, checkpoint, metadata, new_versions
        )
        steps = self._lgctx_retention.after_put(config, checkpoint, metadata)
        if steps is not None:
            try:
                await arun(steps, self._lgctx_do)
            except Exception:
                logger.warning("pruning checkpoints after %s failed", saved, exc_info=True)
        return saved

    async def _lgctx_do(self, op: Op) -> Any:
        saver: Any = self
        if isinstance(op, Read):
            return await saver.aget_tuple(op.config)
        if isinstance(op, History):
            return await saver.aget_delta_channel_history(config=op.config, channels=op.channels)
        if self._lgctx_backend == "async_sqlite":
            async with saver.lock:
                if isinstance(op, Rows):
                    async with saver.conn.execute(_SQLITE_ROWS, (op.thread_id,)) as cur:
                        return list(await cur.fetchall())
                try:
                    for sql, params in _sqlite_writes(saver, op):
                        await saver.conn.execute(sql, params)
                    await saver.conn.commit()
                except BaseException:
                    await saver.conn.rollback()
                    raise
                return None
        async with saver._cursor() as cur:
            if isinstance(op, Rows):
                await cur.execute(_PG_ROWS, (op.thread_id,))
                return [(r["checkpoint_ns"], r["checkpoint_id"]) for r in await cur.fetchall()]
            async with cur.connection.transaction():
                steps = _pg_writes(saver, op)
                try:
                    sql, params, fetch = next(steps)
                    while True:
                        await cur.execute(sql, params)
                        rows = await cur.fetchall() if fetch else []
                        sql, params, fetch = steps.send(rows)
                except StopIteration:
                    pass
        return None


# -- SQLite ------------------------------------------------------------------------

_SQLITE_ROWS = "SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = ?"


def _sqlite_writes(saver: Any, op: Snapshot | Delete) -> list[tuple[str, Sequence[Any]]]:
    """The statements for ``op``: a checkpoint rewritten with its full copies; or
    checkpoints deleted, with their writes and the parent links kept ones had to them."""
    where = "thread_id = ? AND checkpoint_ns = ?"
    if isinstance(op, Snapshot):
        checkpoint = op.tup.checkpoint
        values = {**checkpoint["channel_values"], **op.values}
        type_, blob = saver.serde.dumps_typed({**checkpoint, "channel_values": values})
        conf = op.tup.config["configurable"]
        return [
            (
                f"UPDATE checkpoints SET type = ?, checkpoint = ? WHERE {where} "
                "AND checkpoint_id = ?",
                (type_, blob, conf["thread_id"], conf.get("checkpoint_ns", ""), checkpoint["id"]),
            )
        ]
    if op.ids is None:
        return [
            (f"DELETE FROM writes WHERE {where}", (op.thread_id, op.ns)),
            (f"DELETE FROM checkpoints WHERE {where}", (op.thread_id, op.ns)),
        ]
    out: list[tuple[str, Sequence[Any]]] = [
        (
            f"DELETE FROM writes WHERE {where} AND checkpoint_id < ?",
            (op.thread_id, op.ns, op.before),
        )
    ]
    for part in chunks(op.ids):
        marks = ",".join("?" * len(part))
        params = (op.thread_id, op.ns, *part)
        out += [
            (f"DELETE FROM writes WHERE {where} AND checkpoint_id IN ({marks})", params),
            (f"DELETE FROM checkpoints WHERE {where} AND checkpoint_id IN ({marks})", params),
            (
                f"UPDATE checkpoints SET parent_checkpoint_id = NULL "
                f"WHERE {where} AND parent_checkpoint_id IN ({marks})",
                params,
            ),
        ]
    return out


# -- PostgreSQL --------------------------------------------------------------------

_PG_ROWS = "SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = %s"
_PG_WHERE = "thread_id = %s AND checkpoint_ns = %s"

# By the ids deleted, never "all but the kept": rows a run saves meanwhile stay.
_PG_DELETE_CHECKPOINTS = f"""
WITH deleted AS (
    DELETE FROM checkpoints WHERE {_PG_WHERE} AND checkpoint_id = ANY(%s)
    RETURNING checkpoint -> 'channel_versions' AS versions
)
SELECT DISTINCT v.key AS channel, v.value AS version
FROM deleted CROSS JOIN LATERAL jsonb_each_text(deleted.versions) AS v
"""

_PG_REFERENCED = f"""
SELECT DISTINCT v.key AS channel, v.value AS version
FROM checkpoints c CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') AS v
WHERE c.{_PG_WHERE.replace(" AND ", " AND c.")}
"""

_PG_PUT_BLOB = """
INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (thread_id, checkpoint_ns, channel, version)
DO UPDATE SET type = EXCLUDED.type, blob = EXCLUDED.blob
"""

# A put writes its blobs, then its checkpoint: a process killed between the two
# leaves blobs no checkpoint will ever read. Versions grow along a thread, so a
# blob below the lowest version of its channel that any remaining checkpoint
# references is one of those (or of a checkpoint deleted here).
_PG_SWEEP_BLOBS = f"""
DELETE FROM checkpoint_blobs b
USING (
    SELECT v.key AS channel, min(v.value) AS low
    FROM checkpoints c
    CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') AS v
    WHERE c.{_PG_WHERE.replace(" AND ", " AND c.")}
    GROUP BY v.key
) AS m
WHERE b.{_PG_WHERE.replace(" AND ", " AND b.")} AND b.channel = m.channel AND b.version < m.low
"""

PgStatements = Generator[tuple[str, Sequence[Any], bool], list[Any], None]


def _pg_writes(saver: Any, op: Snapshot | Delete) -> PgStatements:
    """For a :class:`Snapshot`, the full copies as the blobs of the channels' versions
    in that checkpoint (a version is one value, whichever checkpoint reads it). For a
    :class:`Delete`, ``op``'s checkpoints, their writes, and the blobs (channel values,
    shared by version between a namespace's checkpoints) no remaining checkpoint uses."""
    if isinstance(op, Snapshot):
        conf = op.tup.config["configurable"]
        versions = op.tup.checkpoint["channel_versions"]
        for channel, value in op.values.items():
            type_, blob = saver.serde.dumps_typed(value)
            at = (conf["thread_id"], conf.get("checkpoint_ns", ""), channel)
            yield _PG_PUT_BLOB, (*at, str(versions[channel]), type_, blob), False
        return
    key = (op.thread_id, op.ns)
    if op.ids is None:
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
            yield f"DELETE FROM {table} WHERE {_PG_WHERE}", key, False
        return
    ids = list(op.ids)
    older = f"DELETE FROM checkpoint_writes WHERE {_PG_WHERE} AND checkpoint_id < %s"
    yield older, (*key, op.before), False
    theirs = f"DELETE FROM checkpoint_writes WHERE {_PG_WHERE} AND checkpoint_id = ANY(%s)"
    yield theirs, (*key, ids), False
    freed = yield _PG_DELETE_CHECKPOINTS, (*key, ids), True
    yield (
        f"UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE {_PG_WHERE} "
        "AND parent_checkpoint_id = ANY(%s)",
        (*key, ids),
        False,
    )
    yield _PG_SWEEP_BLOBS, (*key, *key), False
    if not freed:
        return
    referenced = yield _PG_REFERENCED, key, True
    kept = {(r["channel"], r["version"]) for r in referenced}
    garbage: dict[str, list[str]] = {}
    for r in freed:
        if (r["channel"], r["version"]) not in kept:
            garbage.setdefault(r["channel"], []).append(r["version"])
    for channel, unused in garbage.items():
        yield (
            f"DELETE FROM checkpoint_blobs WHERE {_PG_WHERE} AND channel = %s "
            "AND version = ANY(%s)",
            (*key, channel, unused),
            False,
        )
