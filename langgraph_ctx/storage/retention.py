"""Checkpoint retention: a thread keeps its latest checkpoints, not every one it made.

LangGraph keeps every checkpoint of a thread (several a turn), so a session's
storage grows with its turns, not with its window. The savers opened by
:func:`~langgraph_ctx.storage.checkpointers.checkpointer_from_url` (and its
async twin) keep the latest ``keep`` checkpoints of each thread and namespace,
and delete the rest right after each checkpoint is saved:

- what resume reads is always kept: the latest checkpoint and its pending
  writes (writes are deleted with the checkpoints they belong to, or when older
  than every kept checkpoint, so writes saved before their checkpoint are never
  lost);
- a delta channel (``DeltaContextState``'s ``messages``, ``pace_chunks``)
  stores in most checkpoints only what a step added, and is rebuilt by walking
  parent checkpoints back to the last full copy: deleting those ancestors makes
  it rebuild empty, with no error. A kept checkpoint therefore also keeps the
  ancestors its delta channels are rebuilt from. Where the channels' reducers
  are known (:meth:`Retention.learn`; ``create_context_agent`` tells its saver),
  once those ancestors outnumber ``keep``, a full copy of each channel is
  written into the oldest kept checkpoint, as LangGraph's own snapshot would
  be, and the ancestors go: at most ``2 * keep`` rows, and one full copy every
  ``keep`` saves at most. Where they are not known (a graph of one's own on
  these savers) the ancestors stay until LangGraph's next snapshot
  (:data:`~langgraph_ctx.state.SNAPSHOT_EVERY` updates of the channel);
- a sub-agent call's namespace (``name:<task id>``) goes once the root
  checkpoint it started from is gone; other namespaces keep their latest
  ``keep``;
- a kept checkpoint whose parent was deleted has no parent any more.

LangGraph's own ``prune`` cannot do this: ``SqliteSaver.prune`` raises
``NotImplementedError``, and ``PostgresSaver.prune("keep_latest")`` keeps one
checkpoint and refuses every thread that uses a delta channel. So the rows are
deleted here, by the SQL below, on the saver's own connection and lock.

The cost of a prune is bounded by what a thread keeps, not by its length: it
lists the thread's remaining rows (the kept ones, and the few saved since the
last prune), and each walk for delta channels stops at the first checkpoint
whose ancestry it already resolved (kept in memory per thread, least recently
used out; after a restart the first prune walks once more).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from langgraph_ctx.errors import ConfigurationError

__all__ = ["DEFAULT_KEEP", "KeepCheckpoints", "Retention", "check_keep", "resolve_keep"]

DEFAULT_KEEP = 10
"""Checkpoints a thread keeps on the embedded SQLite by default: resume needs one,
and ten are the last two turns of the default agent (about five checkpoints a
turn), so a turn can still be stepped back through with time travel. PostgreSQL
keeps every checkpoint unless told otherwise: a shared server's history is its
operator's to cut (LangGraph Server, for one, shows and forks it)."""

KeepCheckpoints = int | Literal["all", "default"] | None
"""``N`` (at least 1): the latest N per thread and namespace; ``None`` or ``"all"``:
every checkpoint; ``"default"``: :data:`DEFAULT_KEEP` on SQLite, all on PostgreSQL."""

CACHED_THREADS = 256
"""Threads whose resolved delta ancestry is kept in memory (a miss only walks again)."""

_CHUNK = 500  # ids per statement: SQLite binds at most 32,766 variables


def check_keep(value: Any, field: str = "keep_checkpoints") -> int | Literal["default"] | None:
    """``value`` as a count, ``None`` (keep all) or ``"default"``; else ConfigurationError."""
    if value is None or value == "all":
        return None
    if value == "default":
        return "default"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            field,
            f"expected a number of checkpoints of at least 1, None or 'all' (keep every "
            f"checkpoint), or 'default'; got {value!r}",
        )
    return value


def resolve_keep(value: Any, kind: str, field: str = "keep_checkpoints") -> int | None:
    """The count a saver of backend ``kind`` keeps (``None``: all)."""
    keep = check_keep(value, field)
    if keep == "default":
        return DEFAULT_KEEP if kind == "sqlite" else None
    return keep


# -- the plan: what to keep, as a generator of reads and deletes -------------------


class Rows(NamedTuple):
    """Read: ``(checkpoint_ns, checkpoint_id)`` of every checkpoint of a thread."""

    thread_id: str


class Read(NamedTuple):
    """Read: one checkpoint (``get_tuple``)."""

    config: RunnableConfig


class Delete(NamedTuple):
    """Delete: these checkpoints of one namespace and their writes (``ids=None``: all)."""

    thread_id: str
    ns: str
    ids: tuple[str, ...] | None
    before: str = ""
    """Also the writes of checkpoints older than this one that never were saved (a
    process killed between a step's writes and its checkpoint)."""


class History(NamedTuple):
    """Read: the saver's ``get_delta_channel_history`` for one checkpoint."""

    config: RunnableConfig
    channels: tuple[str, ...]


class Snapshot(NamedTuple):
    """Write: full copies of delta channels into a kept checkpoint (``tup``), so
    that its ancestors are no longer needed to rebuild them."""

    tup: CheckpointTuple
    values: dict[str, Any]
    """Channel -> its value at ``tup``, already a ``_DeltaSnapshot``."""


Op = Rows | Read | History | Snapshot | Delete
Plan = Generator[Op, Any, None]
Chains = dict[str, frozenset[str]]
"""Per namespace: a kept checkpoint's id -> the ancestors its delta channels need."""


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _delta_needs(tup: CheckpointTuple) -> set[str]:
    return delta_needs(tup.checkpoint, tup.metadata)


def delta_needs(checkpoint: Checkpoint, metadata: Mapping[str, Any] | None) -> set[str]:
    """Delta channels this checkpoint rebuilds from its ancestors: a graph's delta
    channels are the keys of ``counters_since_delta_snapshot``; one stored here (a
    full copy) or never written (no version) needs no ancestor."""
    counters = (metadata or {}).get("counters_since_delta_snapshot") or {}
    values = checkpoint["channel_values"]
    versions = checkpoint["channel_versions"]
    return {ch for ch in counters if ch in versions and ch not in values}


Saved = tuple[set[str], str | None]
"""What a put already knew of the checkpoint it saved: its :func:`delta_needs` and its
parent's id. Saves reading back the checkpoint just written (a whole history under
``add_messages``) to learn it."""


def _chain(
    thread_id: str, ns: str, start: str, chains: Chains, saved: Saved | None = None
) -> Generator[Op, Any, frozenset[str]]:
    """The ancestors ``start``'s delta channels are rebuilt from (as LangGraph's
    walk does: each parent's writes, until a full copy or the channel's first
    version). Stops at an ancestor whose own chain is known: what ``start`` still
    needs there is a part of what that one needs."""
    cursor: RunnableConfig | None
    if saved is not None:
        remaining, parent_id = saved
        cursor = None if parent_id is None else _config(thread_id, ns, parent_id)
    else:
        tup = yield Read(_config(thread_id, ns, start))
        if tup is None:
            return frozenset()
        remaining, cursor = _delta_needs(tup), tup.parent_config
    found: set[str] = set()
    while remaining and cursor is not None:
        parent = str(cursor["configurable"].get("checkpoint_id"))
        found.add(parent)
        if parent in chains:
            found |= chains[parent]
            break
        tup = yield Read(cursor)
        if tup is None:  # already gone: nothing older to keep
            break
        values = tup.checkpoint["channel_values"]
        versions = tup.checkpoint["channel_versions"]
        remaining = {ch for ch in remaining if ch not in values and ch in versions}
        cursor = tup.parent_config
    return frozenset(found)


def _snapshot(
    thread_id: str, start: str, specs: Mapping[str, DeltaChannel[Any]]
) -> Generator[Op, Any, bool]:
    """Store in checkpoint ``start`` a full copy of each delta channel it rebuilds
    from ancestors, as LangGraph's own snapshot would; ``False`` if one of them is
    not in ``specs`` (its reducer unknown here) and nothing was written."""
    tup = yield Read(_config(thread_id, "", start))
    if tup is None:
        return False
    needs = _delta_needs(tup)
    if not needs or not needs <= specs.keys():
        return False
    histories = yield History(tup.config, tuple(sorted(needs)))
    values: dict[str, Any] = {}
    for ch in needs:
        history = histories[ch]
        channel = specs[ch].from_checkpoint(history.get("seed"))  # None: empty
        channel.replay_writes(history["writes"])
        values[ch] = _DeltaSnapshot(channel.get())
    yield Snapshot(tup, values)
    return True


def _needed(
    thread_id: str,
    ns: str,
    kept: list[str],
    chains: Chains,
    saved: Mapping[tuple[str, str], Saved] | None = None,
) -> Generator[Op, Any, set[str]]:
    """``kept`` and the ancestors their delta channels need."""
    needed = set(kept)
    for checkpoint_id in reversed(kept):  # oldest first: newer walks stop at it
        if checkpoint_id not in chains:
            known = (saved or {}).get((ns, checkpoint_id))
            chains[checkpoint_id] = yield from _chain(thread_id, ns, checkpoint_id, chains, known)
        needed |= chains[checkpoint_id]
    return needed


def plan(
    thread_id: str,
    keep: int,
    cached: dict[str, Chains],
    specs: Mapping[str, DeltaChannel[Any]] | None = None,
    saved: Mapping[tuple[str, str], Saved] | None = None,
) -> Plan:
    """Prune one thread to its latest ``keep`` checkpoints per namespace (module doc).

    ``cached`` (namespace -> :data:`Chains`) is read and updated in place. ``specs``:
    the root graph's delta channels, whose full copies may be written into the
    oldest kept checkpoint once the ancestors it needs outnumber ``keep``."""
    rows = yield Rows(thread_id)
    by_ns: dict[str, list[str]] = {}
    for ns, checkpoint_id in rows:
        by_ns.setdefault(str(ns), []).append(str(checkpoint_id))
    roots = sorted(by_ns.get("", []), reverse=True)
    kept_roots = set(roots[:keep])
    for ns in sorted(by_ns, key=lambda n: (n != "", n)):  # the root first
        ids = sorted(by_ns[ns], reverse=True)  # uuid6 ids sort by time: newest first
        if ns and ":" in ns.split("|")[0] and roots:
            tup = yield Read(_config(thread_id, ns, ids[0]))
            root = None if tup is None else (tup.metadata or {}).get("parents", {}).get("")
            # Gone: older than every kept root (a root not saved yet is newer).
            if root is not None and root not in kept_roots and root < min(kept_roots):
                yield Delete(thread_id, ns, None)
                cached.pop(ns, None)
                continue
        if len(ids) <= keep:
            continue
        chains = cached.setdefault(ns, {})
        needed = yield from _needed(thread_id, ns, ids[:keep], chains, saved)
        # A copy costs the channel's whole value, so it is written only once the
        # ancestors kept for it outnumber the checkpoints kept: every ``keep`` saves
        # at most, and the rows stay under twice ``keep``.
        copies = specs if not ns and specs and len(needed) > 2 * keep else None
        oldest = ids[keep - 1]
        if copies and (yield from _snapshot(thread_id, oldest, copies)):
            # Every walk from a kept checkpoint now stops at the oldest one, which
            # holds each channel whole: its ancestors (older ids) are needed no more.
            for kept in ids[:keep]:
                chains[kept] = frozenset(c for c in chains.get(kept, ()) if c >= oldest)
            needed = yield from _needed(thread_id, ns, ids[:keep], chains)
        for gone in [c for c in chains if c not in ids[:keep]]:
            del chains[gone]
        doomed = tuple(c for c in ids if c not in needed)
        if doomed:
            yield Delete(thread_id, ns, doomed, before=min(needed))


# -- running a plan on a saver ---------------------------------------------------


@dataclass
class Retention:
    """A saver's retention: how many checkpoints, and what it remembers between prunes."""

    keep: int

    def __post_init__(self) -> None:
        self._cached: OrderedDict[str, dict[str, Chains]] = OrderedDict()
        self._lock = threading.Lock()
        self._specs: dict[str, DeltaChannel[Any]] = {}
        self._ambiguous: set[str] = set()

    def learn(self, channels: Mapping[str, Any]) -> None:
        """The delta channels of a root graph on this saver (``builder.channels``): a
        kept checkpoint can then hold their full copy instead of its ancestors. A
        name two graphs give different channels is left to the ancestors."""
        with self._lock:
            for name, spec in channels.items():
                if not isinstance(spec, DeltaChannel) or name in self._ambiguous:
                    continue
                if name in self._specs and self._specs[name] != spec:
                    del self._specs[name]
                    self._ambiguous.add(name)
                else:
                    self._specs[name] = spec

    def after_put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: Mapping[str, Any]
    ) -> Plan | None:
        """The prune to run once ``checkpoint`` is committed (``None``: no thread)."""
        conf = config.get("configurable") or {}
        if conf.get("thread_id") is None:
            return None
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        parent = conf.get("checkpoint_id")
        saved = {
            (ns, str(checkpoint["id"])): (
                delta_needs(checkpoint, metadata),
                None if parent is None else str(parent),
            )
        }
        with self._lock:
            cached = self._cached.pop(thread_id, {})
            self._cached[thread_id] = cached
            while len(self._cached) > CACHED_THREADS:
                self._cached.popitem(last=False)
            specs = dict(self._specs)
        return plan(thread_id, self.keep, cached, specs, saved)


def run(steps: Plan, do: Callable[[Op], Any]) -> None:
    """Drive a plan with a sync backend."""
    try:
        op = next(steps)
        while True:
            op = steps.send(do(op))
    except StopIteration:
        pass


async def arun(steps: Plan, do: Callable[[Op], Awaitable[Any]]) -> None:
    """Drive a plan with an async backend."""
    try:
        op = next(steps)
        while True:
            op = steps.send(await do(op))
    except StopIteration:
        pass


def chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]
