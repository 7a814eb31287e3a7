"""A checkpointer that keeps each thread's rebuilt delta channels in memory.

A ``DeltaChannel`` (``DeltaContextState``'s ``messages``, every state's
``pace_chunks``) stores what each step added and, every
:data:`~langgraph_ctx.state.SNAPSHOT_EVERY` updates, a full copy. Loading a
checkpoint rebuilds the channel from the nearest full copy and the writes
since: each ``invoke`` deserializes the whole history again (a cost that grows
with the session: see benchmarks/RESULTS.md), although the process rebuilt
nearly the same value one turn before.

:class:`DeltaReadCache` wraps any saver and answers LangGraph's one question
of a delta channel, ``get_delta_channel_history(checkpoint)`` ("the seed and
the writes to replay onto it"), from what it answered last time:

- the answer for a checkpoint never changes (ids are unique, a checkpoint
  and the writes of its ancestors are never rewritten), so it is kept by
  checkpoint id: no invalidation, and nothing to trust about who wrote what;
- a checkpoint not seen yet is resolved by walking its parents *in the
  database* (``get_tuple``, each ancestor's own writes) until one whose answer
  is kept: the new writes are appended to the kept answer. A turn's walk is
  the few checkpoints that turn made, read back from the saver, so a write by
  another process or another saver instance is read like any other; a walk
  that meets no kept answer within ``max_walk`` ancestors, or a thread not
  seen yet, goes to the saver as before;
- at most ``max_threads`` threads are kept (least recently used out), each
  with its last :data:`KEPT_PER_THREAD` answers; an answer holds the last full
  copy (shared by reference, as the saver had deserialized it) and the writes
  since, so a thread costs about its history once.

What LangGraph then replays (the writes since the last full copy, at most
``snapshot_frequency`` updates) is unchanged, and so is every value it
rebuilds (``tests/test_delta_cache.py`` checks them against the plain saver).
The seed handed out is a shallow copy, so a node that appends to its state
list does not reach the cache; a node must not edit a message object in place
(LangGraph's rule already: the next snapshot would store the edit).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import (
    Awaitable,
    Callable,
    Generator,
    Mapping,
    Sequence,
)
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
)
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from langgraph_ctx._checks import check_instance, check_int

__all__ = ["DeltaReadCache"]

KEPT_PER_THREAD = 2
"""Answers kept per thread: the latest checkpoint's, and the one before it (a
``get_state`` after an ``invoke`` asks for the new one, the next ``invoke``
for the same)."""

PASSED_THROUGH = (
    "get_tuple",
    "aget_tuple",
    "list",
    "alist",
    "put_writes",
    "aput_writes",
    "get_next_version",
)
"""The saver's methods used as they are: reads of single checkpoints, lists, writes."""

Histories = Mapping[str, DeltaChannelHistory]
Thread = tuple[str, str]
_Found = dict[str, DeltaChannelHistory] | None
Walk = Generator[RunnableConfig, CheckpointTuple | None, _Found]


class DeltaReadCache(BaseCheckpointSaver[Any]):
    """``saver``, with each thread's delta-channel reads resumed from the last one.

    Everything but :meth:`get_delta_channel_history` goes straight to ``saver``.
    """

    def __init__(
        self, saver: BaseCheckpointSaver[Any], *, max_threads: int = 16, max_walk: int = 64
    ) -> None:
        """
        Args:
            saver: the checkpointer that stores the checkpoints.
            max_threads: threads whose answers are kept (least recently used out).
            max_walk: most ancestors read to reach a kept answer; past it, the
                saver rebuilds the channel itself.
        """
        check_instance("DeltaReadCache.saver", saver, BaseCheckpointSaver, "a checkpointer")
        check_int("DeltaReadCache.max_threads", max_threads, least=1)
        check_int("DeltaReadCache.max_walk", max_walk, least=1)
        super().__init__(serde=saver.serde)
        self.saver = saver
        self.max_threads = max_threads
        self.max_walk = max_walk
        # What needs nothing of the cache goes straight to the saver's own methods.
        for name in PASSED_THROUGH:
            setattr(self, name, getattr(saver, name))
        self._threads: OrderedDict[Thread, OrderedDict[str, Histories]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        """Reads answered from memory (kept, or a kept answer plus a walk): a test hook."""
        self.misses = 0
        """Reads the saver answered."""

    # -- the cached read ---------------------------------------------------------

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        found = self._counted(_drive(self._resolve(config, channels), self.saver.get_tuple))
        if found is None:
            found = dict(self.saver.get_delta_channel_history(config=config, channels=channels))
        return self._kept(config, found)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        walk = self._resolve(config, channels)
        found = self._counted(await _adrive(walk, self.saver.aget_tuple))
        if found is None:
            found = dict(
                await self.saver.aget_delta_channel_history(config=config, channels=channels)
            )
        return self._kept(config, found)

    def _resolve(self, config: RunnableConfig, channels: Sequence[str]) -> Walk:
        """The answer for ``config``'s checkpoint from the kept ones, reading the
        checkpoints it yields; ``None`` for the saver to answer."""
        thread, target = _address(config)
        kept = self._answers(thread)
        if target is None or not channels or not kept:
            return None
        if target in kept and set(channels) <= kept[target].keys():
            return {ch: kept[target][ch] for ch in channels}
        tup = yield config
        if tup is None:
            return None
        cursor = tup.parent_config
        remaining = set(channels)
        newer: dict[str, list[PendingWrite]] = {ch: [] for ch in channels}  # newest first
        out: dict[str, DeltaChannelHistory] = {}
        seen: set[str] = set()
        for _ in range(self.max_walk):
            if cursor is None:  # the root: what is left starts empty, as in the saver's walk
                out.update({ch: {"writes": []} for ch in remaining})
                remaining.clear()
            if not remaining or cursor is None:
                return {ch: _extended(out[ch], list(reversed(newer[ch]))) for ch in channels}
            tup = yield cursor
            cid = _address(cursor)[1]
            if tup is None or cid is None or cid in seen:  # gone, or a loop (a re-put id)
                return None
            seen.add(cid)
            for write in reversed(tup.pending_writes or ()):
                if write[1] in remaining:
                    newer[write[1]].append(write)
            for ch in [c for c in remaining if c in tup.checkpoint["channel_values"]]:
                out[ch] = {"seed": tup.checkpoint["channel_values"][ch], "writes": []}
                remaining.discard(ch)
            for ch in [c for c in remaining if c in kept.get(cid, {})]:
                out[ch] = kept[cid][ch]  # the kept answer, then the writes since
                remaining.discard(ch)
            cursor = tup.parent_config
        return None

    def _kept(self, config: RunnableConfig, found: dict[str, DeltaChannelHistory]) -> Histories:
        """Keep ``found`` as the answer for ``config``'s checkpoint; hand out copies."""
        thread, target = _address(config)
        if target is not None:
            with self._lock:
                answers = self._threads.setdefault(thread, OrderedDict())
                self._threads.move_to_end(thread)
                answers[target] = {**answers.get(target, {}), **found}
                answers.move_to_end(target)
                while len(answers) > KEPT_PER_THREAD:
                    answers.popitem(last=False)
                while len(self._threads) > self.max_threads:
                    self._threads.popitem(last=False)
        return {ch: _copied(history) for ch, history in found.items()}

    def _answers(self, thread: Thread) -> dict[str, Histories]:
        with self._lock:
            return dict(self._threads.get(thread, {}))

    def _forget(self, thread_id: str | None = None) -> None:
        """Drop a thread's answers (all threads' without one): its checkpoints changed."""
        with self._lock:
            for key in [k for k in self._threads if thread_id is None or k[0] == thread_id]:
                del self._threads[key]

    def _counted(self, found: _Found) -> _Found:
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    # -- everything else: the saver's ---------------------------------------------

    @property
    def config_specs(self) -> list[Any]:
        return self.saver.config_specs

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, *args: Any, **kw: Any) -> Any:
        self._replaced(config, checkpoint)
        return self.saver.put(config, checkpoint, *args, **kw)

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, *args: Any, **kw: Any
    ) -> Any:
        self._replaced(config, checkpoint)
        return await self.saver.aput(config, checkpoint, *args, **kw)

    def _replaced(self, config: RunnableConfig, checkpoint: Checkpoint) -> None:
        """A put under an id already answered rewrites it (LangGraph never does this in
        a run): forget the thread rather than trust the old answer."""
        thread = _address(config)[0]
        if checkpoint["id"] in self._answers(thread):
            self._forget(thread[0])

    def delete_thread(self, thread_id: str) -> None:
        self._forget(str(thread_id))
        self.saver.delete_thread(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        self._forget(str(thread_id))
        await self.saver.adelete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._forget()
        self.saver.delete_for_runs(run_ids)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._forget()
        await self.saver.adelete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._forget(str(target_thread_id))
        self.saver.copy_thread(source_thread_id, target_thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._forget(str(target_thread_id))
        await self.saver.acopy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._forget()
        self.saver.prune(thread_ids, strategy=strategy)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._forget()
        await self.saver.aprune(thread_ids, strategy=strategy)

    def __getattr__(self, name: str) -> Any:
        # The saver's own extras (``conn``, ``setup``, ...) stay reachable.
        if name == "saver":
            raise AttributeError(name)
        return getattr(self.saver, name)


class _Done(NamedTuple):
    found: _Found


def _ending(walk: Walk) -> Generator[RunnableConfig | _Done, CheckpointTuple | None, None]:
    """``walk``, its result yielded last (as a :class:`_Done`) rather than returned."""
    yield _Done((yield from walk))


def _drive(walk: Walk, read: Callable[[RunnableConfig], CheckpointTuple | None]) -> _Found:
    """Run a walk, reading each checkpoint it asks for with ``read``."""
    steps = _ending(walk)
    step = next(steps)
    while not isinstance(step, _Done):
        step = steps.send(read(step))
    return step.found


async def _adrive(
    walk: Walk, read: Callable[[RunnableConfig], Awaitable[CheckpointTuple | None]]
) -> _Found:
    """:func:`_drive` with an async ``read``."""
    steps = _ending(walk)
    step = next(steps)
    while not isinstance(step, _Done):
        step = steps.send(await read(step))
    return step.found


def _address(config: RunnableConfig) -> tuple[Thread, str | None]:
    conf = config.get("configurable", {})
    thread = (str(conf.get("thread_id", "")), str(conf.get("checkpoint_ns", "")))
    return thread, conf.get("checkpoint_id")


def _extended(history: DeltaChannelHistory, writes: list[PendingWrite]) -> DeltaChannelHistory:
    out: DeltaChannelHistory = {"writes": [*history["writes"], *writes]}
    if "seed" in history:
        out["seed"] = history["seed"]
    return out


def _copied(history: DeltaChannelHistory) -> DeltaChannelHistory:
    """A copy LangGraph may build on: new lists, the seed's value copied one level."""
    out: DeltaChannelHistory = {"writes": list(history["writes"])}
    if "seed" in history:
        seed = history["seed"]
        if isinstance(seed, _DeltaSnapshot):
            out["seed"] = _DeltaSnapshot(copy.copy(seed.value))
        else:
            out["seed"] = copy.copy(seed)
    return out
