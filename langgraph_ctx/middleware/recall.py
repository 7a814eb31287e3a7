"""Recall: archived originals and long-term memories brought back before the LLM call.

:class:`MemoryRecall` reads pre-flight's usage report (after compression has
re-measured it), so it must run after :class:`PreflightCheck`. Per call:

1. query = the latest user message + the current thought's hypothesis;
2. search, under a strict timeout, the thread's archive (what compression took
   out of the history: the original text, word for word) and the run's scope of
   the :class:`~langgraph_ctx.retrieval.memory.MemoryBank`; a slow, failing or
   unreachable store records ``recall_timeout`` / ``recall_error`` and the call
   goes on without recall. The archive needs no scope (it is the thread's own);
   memories do, and a call without one says so (``recall_scope``, once a session).
   The archive is searched with the query, then with it again within each name
   the query asks about (only passages holding the name, ranked by the other
   words: see :func:`searches`);
3. drop archived hits still in the active history, re-rank the rest by their best
   passage among the candidates and the names asked about
   (:mod:`~langgraph_ctx.retrieval.passages`; the archive found them by their
   best passage in the whole thread; over-fetched for both; one a hybrid store found
   by meaning keeps the store's rank: :mod:`._recall_block`), then include, best score
   first, each snippet that still fits the room the prompt leaves under the red line
   (within ``max_tokens`` if set): an archived original as the passage its search
   matched and its next best, with its message id and the summary that
   covers it (``glimpse`` gets the whole of it), a memory as its text;
4. inject them as ONE ephemeral system message, after the leading system
   messages and summaries: the model sees it, the checkpoint never does (and
   :class:`~langgraph_ctx.middleware.ProviderPlacement` moves it after the
   stable, cached prefix). Within a turn the same query finds the same block
   without searching again, so the prompt stays the same from call to call.

The tokens injected are added to ``ctx.usage`` (auxiliary), and ``recall`` is
recorded with latency, items and tokens.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from langgraph_ctx import ledger
from langgraph_ctx._checks import check_has, check_instance, check_int, check_number, check_str
from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.core import is_working_note
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.parts import IOFailed
from langgraph_ctx.markers import (
    KEY,
    PER_CALL_HEAD,
    PER_CALL_TAIL,
    is_summary,
    is_view_only,
    summary_body,
    summary_indexes,
)
from langgraph_ctx.middleware._recall_block import (
    RECALL_END,
    _block,
    _ranked,
    block_lines,
    block_text,
    insert_at,
    names_in,
    select,
)
from langgraph_ctx.middleware._room import RoomFiller
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View
from langgraph_ctx.pipeline.context import graph_namespace
from langgraph_ctx.retrieval.memory import Memory, MemoryBank, Scope, SessionSummary
from langgraph_ctx.storage.archive import ArchiveHit, MessageArchive

__all__ = [
    "RECALL_END",
    "MemoryRecall",
    "block_lines",
    "block_text",
    "elapsed_ms",
    "insert_at",
    "names_in",
    "query_of",
    "record_failure",
    "searches",
    "select",
]

logger = logging.getLogger("langgraph_ctx.recall")
_ID = attrgetter("id")

Found = tuple[SessionSummary | None, list[Memory], list[ArchiveHit]]
_OVERFETCH = 4
"""Archived candidates searched for, per one shown, beyond those still in the history."""
_FOUND = "recall_found"
"""Session scratch key: the last search, reused while its query and history stand."""


@dataclass(frozen=True)
class _Request:
    scope: Scope | None
    thread: str | None
    namespace: str
    query: str
    task_key: str | None
    budget: int
    limit: int
    """The most recalled content (this call's and kept blocks) may take in a prompt."""

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.scope, self.thread, self.namespace, self.query, self.task_key)


class MemoryRecall(RoomFiller):
    """Brings back what the call needs: archived originals and memories, within budget."""

    name = "recall"
    reads = ("messages",)
    writes = ("context_ledger",)

    def __init__(
        self,
        bank: MemoryBank | None = None,
        *,
        archive: MessageArchive | None = None,
        timeout: float = 2.0,
        max_tokens: int | None = None,
        snippet_tokens: int = 160,
        archive_hits: int = 8,
        task_key: str = "task_key",
        **kwargs: Any,
    ) -> None:
        """
        Args:
            bank: the memories, their store and how a run's scope is read.
            archive: the thread's archive of originals (compression's), searched
                for what the history no longer holds.
            timeout: seconds the stores may take (searches and session summary
                together) before the call goes on without recall.
            max_tokens: the most a block may take (default: the room the prompt
                leaves under the red line), and the most the blocks kept from
                earlier turns take together (default: the auxiliary allocation).
            snippet_tokens: the most one archived original takes in the block:
                its passages that best match the query, in order.
            archive_hits: archived originals shown at most; four times as many are
                searched for (beyond those still in the history, which are
                skipped) and the best by passage kept.
            task_key: the ``config["configurable"]`` key (or ``state["session"]``
                key) naming the task, for cross-session warming.
        """
        super().__init__(**kwargs)
        if bank is None and archive is None:
            raise ConfigurationError("MemoryRecall.bank", "needs a bank, an archive, or both")
        if bank is not None:
            check_instance("MemoryRecall.bank", bank, MemoryBank, "a MemoryBank")
        if archive is not None:
            check_has("MemoryRecall.archive", archive, ("search", "asearch"), "a MessageArchive")
        if max_tokens is not None:
            check_int("MemoryRecall.max_tokens", max_tokens, least=1)
        self.bank = bank
        self.archive = archive
        self.max_tokens = max_tokens
        # Each setting checked as it is stored, with its bound beside it.
        self.timeout = check_number("MemoryRecall.timeout", timeout, above=0.0)
        self.snippet_tokens = check_int("MemoryRecall.snippet_tokens", snippet_tokens, least=20)
        self.archive_hits = check_int("MemoryRecall.archive_hits", archive_hits, least=1)
        self.task_key = check_str("MemoryRecall.task_key", task_key)

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        request = self._request(view, ctx)
        if request is None:
            return view
        start = time.perf_counter()
        history = _history_ids(view)
        cached = ctx.session.scratch.get(_FOUND)
        if cached is not None and cached[0] == (*request.key, history[1]):
            found: Found = cached[1]  # the same turn, the same history: the same block
        else:
            warm: SessionSummary | None = None
            memories: list[Memory] = []
            hits: list[ArchiveHit] = []
            try:
                if request.scope is not None:
                    fetch = IOCall(
                        partial(self._fetch, request),
                        partial(self._afetch, request),
                        timeout=self.timeout,
                    )
                    warm, memories = yield fetch
                if self.archive is not None and request.thread and request.query:
                    # Over-fetched: the hits still in the history are dropped, and the
                    # rest re-ranked by passage, which can lift one from far down.
                    limit = self.archive_hits * _OVERFETCH + min(
                        len(history[0]), _OVERFETCH * self.archive_hits
                    )
                    hits = yield IOCall(
                        partial(self._archived, request, limit),
                        partial(self._aarchived, request, limit),
                        timeout=self.timeout,
                    )
            except Exception as exc:
                record_failure(ctx, "recall", exc, start, self.timeout)
                return view
            found = (warm, memories, hits)
            ctx.session.scratch[_FOUND] = ((*request.key, history[1]), found)
        return self._inject(view, ctx, request, found, history[0], start, elapsed_ms(start))

    # -- the steps -----------------------------------------------------------

    def _request(self, view: View, ctx: CallContext) -> _Request | None:
        config = ctx.config
        scope = self.bank.scope(config) if self.bank is not None else None
        thread = ctx.thread_id if self.archive is not None else None
        # The room the prompt leaves under the red line, whatever the auxiliary
        # share: that share is sized for a 128K window (2.5 snippets at 4K), and
        # the room past it is the room compression left, which recall is there to
        # fill (at a small window, recall held to its own share sent the question
        # a fraction of what it could have had). Within
        # max_tokens if set. ``limit`` (what blocks kept from earlier turns may
        # take together) is the auxiliary allocation as configured: rebalancing
        # lends what recall leaves unused to other components.
        limit = ctx.budget.auxiliary
        if self.max_tokens is not None:
            limit = min(limit, self.max_tokens)
        room = self.room(ctx)
        budget = max(0, room if self.max_tokens is None else min(room, self.max_tokens))
        if self.bank is not None and scope is None:
            self._say_no_scope(ctx, thread is not None)
        if (scope is None and thread is None) or budget <= 0:
            reason = "no auxiliary budget" if budget <= 0 else "no scope in config"
            ctx.record("recall_skipped", ledger.RecallSkipped(reason=reason, budget=budget))
            return None
        session = view.get("session") or {}
        task = (config.get("configurable") or {}).get(self.task_key) or session.get(self.task_key)
        return _Request(
            scope,
            thread,
            graph_namespace(config),
            query_of(view),
            None if task is None else str(task),
            budget,
            max(0, limit),
        )

    def _say_no_scope(self, ctx: CallContext, archive_only: bool) -> None:
        """Memories are per user (or tenant): without the scope's keys in the config,
        none can be searched. Said once a session, in the ledger and the log."""
        if ctx.session.scratch.get("recall_no_scope"):
            return
        ctx.session.scratch["recall_no_scope"] = True
        assert self.bank is not None
        keys = list(self.bank.scope_keys)
        what = "archive recall only (thread scope)" if archive_only else "no recall"
        ctx.record("recall_scope", ledger.RecallScope(missing=keys, recall=what))
        logger.warning(
            "memory recall needs config['configurable'] keys %s to scope memories; %s",
            keys,
            what,
        )

    def _fetch(self, r: _Request) -> tuple[SessionSummary | None, list[Memory]]:
        assert self.bank is not None and r.scope is not None  # asked only then
        warm = self.bank.session_summary(r.scope, r.task_key) if r.task_key else None
        return warm, self.bank.search(r.scope, r.query)

    async def _afetch(self, r: _Request) -> tuple[SessionSummary | None, list[Memory]]:
        assert self.bank is not None and r.scope is not None  # asked only then
        warm = await self.bank.asession_summary(r.scope, r.task_key) if r.task_key else None
        return warm, await self.bank.asearch(r.scope, r.query)

    def _archived(self, r: _Request, limit: int) -> list[ArchiveHit]:
        """The question's hits, then each of its names' (see :func:`searches`)."""
        assert self.archive is not None and r.thread is not None  # asked only then
        found = [
            self.archive.search(r.thread, r.query, limit=n, namespace=r.namespace, within=name)
            for name, n in searches(r.query, limit, self.archive_hits)
        ]
        return _union(found)

    async def _aarchived(self, r: _Request, limit: int) -> list[ArchiveHit]:
        """The question's hits, then each of its names' (see :func:`searches`)."""
        assert self.archive is not None and r.thread is not None  # asked only then
        found = [
            await self.archive.asearch(
                r.thread, r.query, limit=n, namespace=r.namespace, within=name
            )
            for name, n in searches(r.query, limit, self.archive_hits)
        ]
        return _union(found)

    def _inject(
        self,
        view: View,
        ctx: CallContext,
        r: _Request,
        found: Found,
        active: frozenset[str],
        start: float,
        store: float,
    ) -> View:
        warm, memories, hits = found
        if warm is not None and warm.thread_id is not None and warm.thread_id == ctx.thread_id:
            warm = None  # the session that wrote it already has it
        # A summary still in the history is no memory to bring back (the observer
        # stored it). Only looked for when a found memory came from compression,
        # so a call with none pays nothing for it.
        if any(m.source == "compression" for m in memories):
            present = {summary_body(m) for m in view.get("messages") or () if is_summary(m)}
            memories = [m for m in memories if m.text not in present]
        # An original still in the history is in plain view (a compacted tool result
        # is not: its digest is there, the original is not). A consolidated summary
        # only retells originals, which are searched themselves.
        hits = [h for h in hits if h.kind == "tool_result" or h.message_id not in active]
        hits = [h for h in hits if h.kind != "summary"]
        # Nor the think node's [plan] traces: the agent's own past reasoning, not what
        # the user or a tool said. A hypothesis that restated an earlier budget line
        # matched every trace that did, and eight of them filled the block.
        hits = [h for h in hits if not (is_note(h.message) and not is_working_note(h.message))]
        items = _ranked(memories, hits, r.query, self.archive_hits, self.snippet_tokens, ctx)
        lines, chosen, raw = select(warm, items, r.budget, ctx)
        picked_memories = [x for x in chosen if isinstance(x, Memory)]
        picked_hits = [x for x in chosen if isinstance(x, ArchiveHit)]
        data: ledger.Recall = {
            "latency_ms": elapsed_ms(start),  # all of recall: store, ranking, selection
            "store_ms": store,
            "mode": "semantic" if self.bank is not None and self.bank.semantic else "lexical",
            "candidates": len(memories) + len(hits),
            "items": len(chosen),
            "archived": len(picked_hits),
            "warm": bool(lines) and len(lines) > len(chosen),
            "budget": r.budget,
            "tokens": 0,
        }
        if not lines:
            ctx.record("recall", data)
            return view
        data["tokens"] = ctx.session.calibration.apply(raw)
        data["levels"] = [m.level for m in picked_memories]
        data["keys"] = [m.key for m in picked_memories]
        data["ids"] = [h.message_id for h in picked_hits]
        ctx.adjust_usage("auxiliary", raw)
        message = _block(lines)
        message.additional_kwargs[KEY] = {
            "ephemeral": True,
            "recall": {
                "keys": data["keys"],
                "ids": data["ids"],
                "tokens": data["tokens"],
                "warm": data["warm"],
                "limit": r.limit,
            },
        }
        ctx.record("recall", data)
        messages: list[BaseMessage] = list(view.get("messages") or ())
        at = insert_at(messages)
        return view.replace(messages=[*messages[:at], message, *messages[at:]])


# -- helpers -------------------------------------------------------------------


def _history_ids(view: View) -> tuple[frozenset[str], tuple[str, ...]]:
    """The ids in the active history, and what says whether it changed since the
    last search in a way that matters: the summaries (compression ran) and its end."""
    messages: list[BaseMessage] = list(view.get("messages") or ())
    ids = frozenset(map(str, filter(None, map(_ID, messages))))  # C-level passes
    marks = tuple(str(messages[i].id) for i in summary_indexes(messages))
    return ids, marks


def searches(query: str, limit: int, shown: int) -> list[tuple[str, int]]:
    """The archive searches for ``query``: ``(within, limit)`` each, all ranked by the
    question. The first among all passages; then, for each name in it (:func:`names_in`),
    among the passages that hold the name, for ``_OVERFETCH * shown`` more: when earlier
    turns asked the same about other things, a question's words fill the first search
    with them, and a passage that names the thing asked about may be one of thousands
    that name it, found by the question's other words."""
    return [("", limit), *((name, _OVERFETCH * shown) for name in names_in(query))]


def _union(found: Sequence[Sequence[ArchiveHit]]) -> list[ArchiveHit]:
    """Each hit once, in the order first found."""
    seen: dict[str, ArchiveHit] = {}
    for hits in found:
        for hit in hits:
            seen.setdefault(hit.message_id, hit)
    return list(seen.values())


def query_of(view: View) -> str:
    """The latest user message's text plus the current thought's hypothesis."""
    messages: list[BaseMessage] = list(view.get("messages") or ())
    # Not a block a strategy assembled for this call (PACE's): that is not the question.
    human = next((m for m in reversed(messages) if m.type == "human" and not is_view_only(m)), None)
    parts = [_asked(human)] if human is not None else []
    thoughts = view.get("thoughts") or []
    if thoughts and isinstance(thoughts[-1], dict):
        thought = thoughts[-1]
        current = human is None or thought.get("turn") in (None, human.id)
        if current and thought.get("hypothesis"):
            parts.append(str(thought["hypothesis"]))
    return "\n".join(p for p in parts if p.strip())


def _asked(human: BaseMessage) -> str:
    """The user message's text without a block a layer added for this call only
    (BACM's budget line, :data:`~langgraph_ctx.markers.PER_CALL_TAIL`, or
    :data:`~langgraph_ctx.markers.PER_CALL_HEAD` when it comes first): its words
    ("tokens", "fold", "steps") are no part of the question, and searched with it
    they ranked every archived message that held them above the question's answer."""
    content = human.content
    marks = human.additional_kwargs.get(KEY) or {}
    if isinstance(content, list) and len(content) > 1 and marks.get(PER_CALL_TAIL):
        return str(human.model_copy(update={"content": content[:-1]}).text)
    if isinstance(content, list) and len(content) > 1 and marks.get(PER_CALL_HEAD):
        return str(human.model_copy(update={"content": content[1:]}).text)
    return str(human.text)


_FAILED: dict[
    tuple[str, bool], Literal["recall_timeout", "recall_error", "observe_timeout", "observe_error"]
] = {
    ("recall", True): "recall_timeout",
    ("recall", False): "recall_error",
    ("observe", True): "observe_timeout",
    ("observe", False): "observe_error",
}
"""The kind recorded when recall's or the observer's call timed out (True) or failed."""


def record_failure(
    ctx: CallContext, what: str, exc: BaseException, start: float, timeout: float
) -> None:
    """Record ``<what>_timeout`` or ``<what>_error`` (with the error) and log it."""
    timed_out = isinstance(exc, (TimeoutError, asyncio.TimeoutError))
    kind = _FAILED[what, timed_out]
    data = IOFailed(latency_ms=elapsed_ms(start), timeout_s=timeout)
    if not timed_out:
        data["error"] = f"{type(exc).__name__}: {exc}"
    ctx.record(kind, data)
    logger.warning("%s on node %r: %s; the call goes on without it", kind, ctx.node, exc)


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)
