"""Long-term memory in four levels, kept in a LangGraph store, scoped by user or tenant.

Memories are *observations* (single facts), *patterns*, *principles* and
*frameworks* (distilled knowledge, more broadly applicable: paper, section 9).
They live in any ``langgraph.store.base.BaseStore``: ``InMemoryStore`` by
default, ``PostgresStore`` (pgvector) in production. A store built with an
embedding index (``index={"embed": embeddings, "dims": ...}``, any LangChain
``Embeddings``) is searched semantically; without one, memories are ranked
lexically (BM25), offline and with no model, through a
:class:`~langgraph_ctx.retrieval.index.TextIndex` kept up to date by every
write, so a search costs the query's rare words' postings, whatever the number
of memories, and ranks every memory of the scope (the newest as well as the
first). The default index lives in the process, beside the store, shared by
every bank on that store; it reads a scope's existing memories once, on first
use. A store that several processes write needs a shared index:
``storage.PostgresMemoryIndex`` or ``storage.SQLiteMemoryIndex`` (``index=``).

Each scope (a tuple such as ``(tenant_id, user_id)``, read from the run's
``config["configurable"]``) has its own namespace, ``("lgctx_memory", *scope)``,
and every search also filters on the exact scope, so a scope never sees
another's memories, not even a nested one's::

    bank = MemoryBank(InMemoryStore(), scope_keys=("user_id",))
    bank.remember(("alice",), "Prefers invoices in EUR.", level="principle")
    bank.search(("alice",), "which currency for the invoice?")
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import Any, Literal, TypedDict, get_args

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchItem
from langgraph.store.memory import InMemoryStore
from typing_extensions import Unpack

from langgraph_ctx._checks import check_has, check_instance, check_int, check_number
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval import _steps
from langgraph_ctx.retrieval._shared import ALL, docs_of, shared_index
from langgraph_ctx.retrieval.index import Doc, TextIndex
from langgraph_ctx.retrieval.maxscore import check_limit

Level = Literal["observation", "pattern", "principle", "framework"]
LEVELS: tuple[Level, ...] = get_args(Level)
DEFAULT_BOOSTS: Mapping[Level, float] = {
    "observation": 1.0,
    "pattern": 1.15,
    "principle": 1.3,
    "framework": 1.45,
}
"""Multipliers on relevance: a framework that is 70% as relevant as an observation wins."""
ROOT = "lgctx_memory"
SESSIONS = "lgctx_sessions"

Scope = tuple[str, ...]


class MemoryOptions(TypedDict, total=False):
    """The keyword options of :meth:`MemoryBank.remember` and :meth:`~MemoryBank.aremember`."""

    level: Level
    """How general the memory is; default ``"observation"``."""
    source: str
    """Who wrote it: ``"api"`` (default), ``"agent"`` for the remember tool."""
    key: str | None
    """The store key; default a digest of level and text, so a rewrite keeps one key."""


@dataclass(frozen=True)
class Memory:
    """One memory, as stored or as found by a search."""

    key: str
    text: str
    level: Level
    source: str
    scope: Scope
    relevance: float = 0.0
    """Similarity to the query: cosine from the store's index, or BM25 scaled to [0, 1]."""
    score: float = 0.0
    """``relevance * boost[level]``: the order recall includes memories in."""


@dataclass(frozen=True)
class SessionSummary:
    """What :meth:`MemoryBank.finish_session` stored for a task."""

    task_key: str
    text: str
    thread_id: str | None


class MemoryBank:
    """Memories in a store: write, search, and session summaries for warming.

    Args:
        store: any LangGraph store. Default: an ``InMemoryStore`` without index.
        scope_keys: the ``config["configurable"]`` keys whose values make a
            run's scope, outermost first, e.g. ``("tenant_id", "user_id")``.
            A run lacking any of them has no scope: recall skips it and the
            ``remember`` tool refuses to write.
        boosts: per-level multipliers, merged over :data:`DEFAULT_BOOSTS`;
            must be positive and must not decrease from observation to framework.
        candidates: memories a search returns at most (before the token budget).
        index: where lexical search looks (a store without an embedding index):
            default an in-process :class:`~langgraph_ctx.retrieval.index.LexicalIndex`
            shared by the banks on this store; give a shared one
            (``storage.PostgresMemoryIndex``) when several processes write.
        lexical_scan: deprecated, ignored: lexical search ranks every memory.
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        scope_keys: Sequence[str] = ("user_id",),
        boosts: Mapping[Level, float] | None = None,
        candidates: int = 20,
        index: TextIndex | None = None,
        lexical_scan: int | None = None,
    ) -> None:
        if isinstance(scope_keys, str) or not scope_keys:
            raise ConfigurationError(
                "MemoryBank.scope_keys", f"need a non-empty tuple of keys, got {scope_keys!r}"
            )
        merged = {**DEFAULT_BOOSTS, **(boosts or {})}
        if set(merged) != set(LEVELS):
            raise ConfigurationError(
                "MemoryBank.boosts",
                f"unknown level(s) {sorted(set(merged) - set(LEVELS))}; levels are {list(LEVELS)}",
            )
        values = [merged[level] for level in LEVELS]
        for level in LEVELS:
            check_number(f"MemoryBank.boosts[{level!r}]", merged[level])
        if any(v <= 0 for v in values) or values != sorted(values):
            raise ConfigurationError(
                "MemoryBank.boosts",
                f"must be positive and non-decreasing over {list(LEVELS)}, got {values}",
            )
        check_int("MemoryBank.candidates", candidates, least=1)
        if store is not None:
            check_instance("MemoryBank.store", store, BaseStore, "a LangGraph store (BaseStore)")
        if index is not None:
            check_has("MemoryBank.index", index, ("add", "search", "asearch"), "a TextIndex")
        if lexical_scan is not None:
            warnings.warn(
                "MemoryBank(lexical_scan=...) is ignored: lexical search ranks every memory"
                " of a scope through an index",
                DeprecationWarning,
                stacklevel=2,
            )
        self.store: BaseStore = store if store is not None else InMemoryStore()
        self.scope_keys = tuple(scope_keys)
        self.boosts: Mapping[Level, float] = merged
        self.candidates = candidates
        if index is not None and self.semantic:
            raise ConfigurationError(
                "MemoryBank.index",
                "this store has an embedding index and ranks memories itself; "
                "give index= only with a store without one",
            )
        self._shared = None if index is not None or self.semantic else shared_index(self.store)
        self.index: TextIndex | None = self._shared.index if self._shared else index
        """Where lexical search looks; ``None`` when the store's embedding index ranks."""

    @property
    def semantic(self) -> bool:
        """Whether the store has an embedding index (else ranking is lexical)."""
        return bool(getattr(self.store, "index_config", None))

    def scope(self, config: RunnableConfig | None) -> Scope | None:
        """The scope a run's config names, or ``None`` when a scope key is missing."""
        configurable = (config or {}).get("configurable") or {}
        values = [configurable.get(k) for k in self.scope_keys]
        if any(v is None or str(v) == "" for v in values):
            return None
        return tuple(str(v) for v in values)

    # -- writing -------------------------------------------------------------

    def remember(self, scope: Scope, text: str, **options: Unpack[MemoryOptions]) -> Memory:
        """Store a memory (idempotent: the same text and level keep one key)."""
        (memory,) = _steps.run(self._remember(scope, [text], options))
        return memory

    async def aremember(self, scope: Scope, text: str, **options: Unpack[MemoryOptions]) -> Memory:
        """Async :meth:`remember`."""
        (memory,) = await _steps.arun(self._remember(scope, [text], options))
        return memory

    def remember_many(
        self, scope: Scope, texts: Iterable[str], **options: Unpack[MemoryOptions]
    ) -> list[Memory]:
        """Store many memories of one scope and level in one store batch (imports, seeding).

        Each is what :meth:`remember` would store; ``key`` cannot be given here.
        """
        return _steps.run(self._remember(scope, list(texts), options))

    async def aremember_many(
        self, scope: Scope, texts: Iterable[str], **options: Unpack[MemoryOptions]
    ) -> list[Memory]:
        """Async :meth:`remember_many`."""
        return await _steps.arun(self._remember(scope, list(texts), options))

    def finish_session(
        self, scope: Scope, task_key: str, summary: str, *, thread_id: str | None = None
    ) -> None:
        """Store a finished session's summary: the next session on ``task_key`` starts with it.

        One summary per task and scope; a later one replaces it. ``thread_id``
        (the finished session's) keeps the summary out of that session itself.
        """
        self.store.put(*self._session(scope, task_key, summary, thread_id), index=False)

    async def afinish_session(
        self, scope: Scope, task_key: str, summary: str, *, thread_id: str | None = None
    ) -> None:
        """Async :meth:`finish_session`."""
        await self.store.aput(*self._session(scope, task_key, summary, thread_id), index=False)

    def reindex(self, scope: Scope) -> int:
        """Index every memory the store holds for ``scope`` (how many): for a shared index
        given to a bank whose store already had memories. Nothing to do otherwise."""
        _check_scope(scope)
        if self.index is None:
            return 0
        ns = namespace(ROOT, scope)
        docs = docs_of(ns, self.store.search(ns, limit=ALL))
        self.index.add(ns, docs)
        return len(docs)

    # -- reading -------------------------------------------------------------

    def search(self, scope: Scope, query: str, *, limit: int | None = None) -> list[Memory]:
        """The scope's memories for ``query``, best ``score`` first."""
        return _steps.run(self._search(scope, query, limit))

    async def asearch(self, scope: Scope, query: str, *, limit: int | None = None) -> list[Memory]:
        """Async :meth:`search`."""
        return await _steps.arun(self._search(scope, query, limit))

    def session_summary(self, scope: Scope, task_key: str) -> SessionSummary | None:
        """The last finished session's summary on ``task_key``, if any."""
        ns = namespace(SESSIONS, scope)
        return _as_summary(self.store.get(ns, _digest(task_key)), scope)

    async def asession_summary(self, scope: Scope, task_key: str) -> SessionSummary | None:
        """Async :meth:`session_summary`."""
        ns = namespace(SESSIONS, scope)
        return _as_summary(await self.store.aget(ns, _digest(task_key)), scope)

    # -- the steps, written once for sync and async (see _steps) --------------

    def _remember(
        self, scope: Scope, texts: list[str], options: MemoryOptions
    ) -> _steps.Steps[list[Memory]]:
        _check_scope(scope)
        if len(texts) > 1 and options.get("key") is not None:
            raise ConfigurationError("key", "remember_many derives each memory's key")
        now = _now()
        made = [self._new(scope, text, options, now) for text in texts]
        ns = namespace(ROOT, scope)
        if self._shared is not None:
            yield _steps.in_thread(self._shared.load, ns)  # before the first write: see SharedIndex
        fields = None if self.index is not None else ["text"]
        ops = [PutOp(ns, m.key, value, index=fields) for m, value in made]
        yield partial(self.store.batch, ops), partial(self.store.abatch, ops)
        if self.index is not None:
            docs = [Doc(m.key, m.text, m.level) for m, _ in made]
            yield partial(self.index.add, ns, docs), partial(self.index.aadd, ns, docs)
        return [m for m, _ in made]

    def _search(self, scope: Scope, query: str, limit: int | None) -> _steps.Steps[list[Memory]]:
        _check_scope(scope)
        limit = self.candidates if limit is None else limit
        check_limit(limit)
        if not query.strip():
            return []
        ns = namespace(ROOT, scope)
        if self.index is None:  # the store's embedding index ranks
            args: dict[str, Any] = {
                "filter": {"scope": list(scope)},
                "query": query,
                "limit": limit,
            }
            items = yield (
                partial(self.store.search, ns, **args),
                partial(self.store.asearch, ns, **args),
            )
            return self._semantic(scope, items, limit)
        if self._shared is not None:
            yield _steps.in_thread(self._shared.load, ns)
        boosts: dict[str, float] = {str(level): b for level, b in self.boosts.items()}
        hits: list[tuple[str, float]] = yield (
            partial(self.index.search, ns, query, limit=limit, weights=boosts),
            partial(self.index.asearch, ns, query, limit=limit, weights=boosts),
        )
        if not hits:
            return []
        # The store is the truth: a memory deleted there since it was indexed is skipped.
        gets = [GetOp(ns, key) for key, _ in hits]
        items = yield partial(self.store.batch, gets), partial(self.store.abatch, gets)
        return self._lexical(scope, hits, items)

    def _new(
        self, scope: Scope, text: str, options: MemoryOptions, now: str
    ) -> tuple[Memory, dict[str, Any]]:
        level = options.get("level", "observation")
        source = options.get("source", "api")
        key = options.get("key")
        if level not in LEVELS:
            raise ConfigurationError("level", f"must be one of {list(LEVELS)}, got {level!r}")
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError("text", "a memory needs some text")
        lvl: Level = level
        memory = Memory(key or _digest(f"{level}\x00{text}"), text, lvl, source, scope)
        value = {"text": text, "level": lvl, "source": source, "scope": list(scope)}
        return memory, {**value, "created_at": now}

    def _session(
        self, scope: Scope, task_key: str, summary: str, thread_id: str | None
    ) -> tuple[tuple[str, ...], str, dict[str, Any]]:
        _check_scope(scope)
        value: dict[str, Any] = {"task_key": task_key, "summary": summary, "thread_id": thread_id}
        value |= {"scope": list(scope), "created_at": _now()}
        return namespace(SESSIONS, scope), _digest(task_key), value

    def _semantic(self, scope: Scope, items: Sequence[SearchItem], limit: int) -> list[Memory]:
        found = [
            memory
            for item in items
            if (memory := self._memory(scope, item, max(0.0, float(item.score or 0.0))))
        ]
        found.sort(key=lambda m: m.score, reverse=True)
        return found[:limit]

    def _lexical(
        self, scope: Scope, hits: Sequence[tuple[str, float]], items: Sequence[Item | None]
    ) -> list[Memory]:
        # The index ranked by BM25 times the level's boost (the order of ``score``);
        # relevance is the BM25 alone, scaled so that the best is 1.
        boosts: dict[Any, float] = dict(self.boosts)
        bm25 = [
            score / boosts.get(item.value.get("level"), 1.0) if item is not None else 0.0
            for (_, score), item in zip(hits, items, strict=True)
        ]
        top = max(bm25) or 1.0
        found = [
            self._memory(scope, item, score / top)
            for score, item in zip(bm25, items, strict=True)
            if item is not None
        ]
        return [m for m in found if m is not None]

    def _memory(self, scope: Scope, item: Item, relevance: float) -> Memory | None:
        level, text = item.value.get("level"), str(item.value.get("text", ""))
        if relevance <= 0.0 or level not in LEVELS or item.value.get("scope") != list(scope):
            return None
        lvl: Level = level
        source = str(item.value.get("source", ""))
        return Memory(item.key, text, lvl, source, scope, relevance, relevance * self.boosts[lvl])


def remember_tool(bank: MemoryBank, *, name: str = "remember") -> BaseTool:
    """A tool the agent calls to store a memory in the run's scope.

    The scope comes from the run's ``config["configurable"]`` (``bank.scope_keys``),
    never from the model's arguments, so an agent cannot write into another
    user's memory. A run without a scope gets a tool error, nothing is written.
    """
    check_instance("remember_tool.bank", bank, MemoryBank, "a MemoryBank")

    def scope_of(config: RunnableConfig) -> Scope:
        scope = bank.scope(config)
        if scope is None:
            keys = ", ".join(bank.scope_keys)
            raise ToolException(f"cannot remember: this run has no memory scope ({keys} unset)")
        return scope

    def run(text: str, config: RunnableConfig, level: Level = "observation") -> str:
        memory = bank.remember(scope_of(config), text, level=level, source="agent")
        return f"Remembered as {memory.level} ({memory.key})."

    async def arun(text: str, config: RunnableConfig, level: Level = "observation") -> str:
        memory = await bank.aremember(scope_of(config), text, level=level, source="agent")
        return f"Remembered as {memory.level} ({memory.key})."

    description = (
        "Store something worth knowing in later conversations with this user. level: "
        "'observation' (a single fact), 'pattern' (something that recurs), 'principle' (a rule "
        "to follow) or 'framework' (a way to approach a whole kind of task)."
    )
    return StructuredTool.from_function(
        func=run, coroutine=arun, name=name, description=description, handle_tool_error=True
    )


# -- namespaces --------------------------------------------------------------


def namespace(root: str, scope: Scope) -> tuple[str, ...]:
    """``(root, *scope)``, each label escaped: stores forbid '.' and NUL in labels."""
    return (root, *(_escape(label) for label in scope))


def _escape(label: str) -> str:
    # Injective: '%' is escaped first, so '%2E' in a label stays distinct from '.'.
    return label.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")


def _check_scope(scope: Iterable[Any]) -> None:
    labels = tuple(scope) if isinstance(scope, tuple) else None
    if not labels or not all(isinstance(s, str) and s for s in labels):
        raise ConfigurationError(
            "scope", f"need a non-empty tuple of non-empty strings, got {scope!r}"
        )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _as_summary(item: Item | None, scope: Scope) -> SessionSummary | None:
    if item is None or item.value.get("scope") != list(scope):
        return None
    thread = item.value.get("thread_id")
    return SessionSummary(
        task_key=str(item.value.get("task_key", "")),
        text=str(item.value.get("summary", "")),
        thread_id=None if thread is None else str(thread),
    )
