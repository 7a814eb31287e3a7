"""Checkpointers for the runs, and the checkpoint bytes they were given.

- ``sqlite``: a real :class:`SqliteSaver` on a temporary file. Bytes are the payload
  stored in its tables (checkpoints with metadata, pending writes).
- ``memory``: :class:`TallySaver`, an in-memory saver that keeps only each thread's
  latest checkpoint (a 10,000-step run would otherwise hold every version of the
  history) and counts the bytes it serialized. Used for the long-horizon runs.

Both count serialized payload, so their bytes per step compare.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

Backend = Literal["sqlite", "memory"]


class Measured(Protocol):
    saver: BaseCheckpointSaver[Any]

    def bytes_written(self) -> int: ...


class TallySaver(InMemorySaver):
    """In memory, latest checkpoint per thread only; counts the bytes it serializes.

    Not for a graph with a written delta channel (``DeltaContextState``, PACE's
    ``pace_chunks``): reading one replays the ancestors' writes, which this drops."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        out = super().put(config, checkpoint, metadata, new_versions)
        thread, ns = out["configurable"]["thread_id"], out["configurable"]["checkpoint_ns"]
        saved = self.storage[thread][ns]
        body, meta, _ = saved[checkpoint["id"]]
        self.written += len(body[1]) + len(meta[1])
        self.written += sum(len(self.blobs[(thread, ns, k, v)][1]) for k, v in new_versions.items())
        for old in [c for c in saved if c != checkpoint["id"]]:
            del saved[old]
            self.writes.pop((thread, ns, old), None)
        keep = {(thread, ns, k, v) for k, v in checkpoint["channel_versions"].items()}
        for key in [k for k in self.blobs if k[:2] == (thread, ns) and k not in keep]:
            del self.blobs[key]
        return out

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        conf = config["configurable"]
        key = (conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"])
        before = set(self.writes.get(key, {}))
        super().put_writes(config, writes, task_id, task_path)
        stored = self.writes.get(key, {})
        self.written += sum(len(v[2][1]) for k, v in stored.items() if k not in before)


class _Memory:
    def __init__(self) -> None:
        self.saver: BaseCheckpointSaver[Any] = TallySaver()

    def bytes_written(self) -> int:
        saver = self.saver
        return saver.written if isinstance(saver, TallySaver) else 0


class _Sqlite:
    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(str(path), check_same_thread=False)
        self.conn.execute("PRAGMA synchronous=OFF")  # a benchmark file: no fsync per step
        self.saver: BaseCheckpointSaver[Any] = SqliteSaver(self.conn)

    def bytes_written(self) -> int:
        row = self.conn.execute(
            "SELECT (SELECT COALESCE(SUM(length(checkpoint) + length(metadata)), 0) "
            "FROM checkpoints) + (SELECT COALESCE(SUM(length(value)), 0) FROM writes)"
        ).fetchone()
        return int(row[0]) if row else 0


@contextmanager
def open_backend(backend: Backend) -> Iterator[Measured]:
    """A fresh checkpointer for one strategy's runs on one workload."""
    if backend == "memory":
        yield _Memory()
        return
    with tempfile.TemporaryDirectory(prefix="lgctx-bench-") as tmp:
        store = _Sqlite(Path(tmp) / "checkpoints.sqlite")
        try:
            yield store
        finally:
            store.conn.close()
