"""The graph state schema and its reducers.

Extend :class:`ContextState` with your own fields like any LangGraph state::

    class MyState(ContextState):
        customer_id: str

Each field has a lifecycle, and the reducer encodes it:

- ``messages`` accumulate (``add_messages``); compression rewrites them.
- ``thoughts`` and ``suggestions`` are replaced wholesale: they describe the
  current step only and never pile up.
- ``artifacts`` and ``session`` merge key by key.
- ``context_ledger`` keeps only the last :data:`LEDGER_SIZE` entries, so the
  checkpoint does not grow with the session; the full history of events goes
  to the event table (see ``persistence``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

LEDGER = "context_ledger"
"""The state key of the ledger."""

LEDGER_SIZE = 32
"""Entries kept in ``context_ledger`` by the default reducer. Small on purpose:
the ledger is rewritten into every checkpoint, so its size is paid per step.
The full record of events goes to the custom stream and the event table."""


class LedgerEntry(TypedDict):
    """One thing the context manager measured or did."""

    seq: int
    """Position in the session's ledger, counting entries dropped by the bound."""
    kind: str
    """``utilization``, ``compression``, ``eviction``, ``recall_timeout``, ..."""
    node: str
    """The graph node whose call produced it."""
    ts: float
    """Unix time."""
    data: dict[str, Any]


class ArtifactRef(TypedDict):
    """An artifact stored by reference: only this stays in context."""

    type: str
    id: str
    summary: str


def ledger_reducer(
    limit: int = LEDGER_SIZE,
) -> Callable[[list[LedgerEntry], list[LedgerEntry]], list[LedgerEntry]]:
    """A reducer that appends entries and keeps the last ``limit``."""

    def append_bounded(
        left: list[LedgerEntry] | None, right: list[LedgerEntry] | None
    ) -> list[LedgerEntry]:
        merged = [*(left or ()), *(right or ())]
        return merged[-limit:]

    return append_bounded


def lru_reducer(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Apply tool-cache operations: ``name`` touches it (moves it to the
    most-recently-used end), ``"-name"`` evicts it."""
    cache = list(left or ())
    for op in right or ():
        name = op[1:] if op.startswith("-") else op
        if name in cache:
            cache.remove(name)
        if not op.startswith("-"):
            cache.append(name)
    return cache


def merge_dicts(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Key-by-key merge; the right side wins."""
    return {**(left or {}), **(right or {})}


class ContextState(TypedDict, total=False):
    """The state every langgraph-ctx graph runs on."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation: user, assistant, tool messages, summaries."""
    thoughts: list[dict[str, Any]]
    """The current step's structured thoughts. Ephemeral: never in ``messages``."""
    tool_cache: Annotated[list[str], lru_reducer]
    """Names of discovered tools, least recently used first. Survives resume.
    Updates are operations (see :func:`lru_reducer`), not whole lists."""
    suggestions: list[str]
    """Proposed next actions for the user. Transient: replaced every step."""
    artifacts: Annotated[dict[str, ArtifactRef], merge_dicts]
    """Generated outputs by reference (type, id, summary); contents live elsewhere."""
    session: Annotated[dict[str, Any], merge_dicts]
    """Session metadata: user, task, configuration."""
    context_ledger: Annotated[list[LedgerEntry], ledger_reducer()]
    """What the context manager did, bounded."""
    pace_chunks: Annotated[dict[str, Any], merge_dicts]
    """PACE's per-step records for resume (key vector, summaries), by step id.
    Empty unless ``strategy="pace"``."""


def declaration(key: str) -> str:
    """How :class:`ContextState` declares ``key``, to copy into another state schema."""
    annotation = ContextState.__annotations__.get(key)
    # A string under ``from __future__ import annotations`` (a ForwardRef once
    # TypedDict has it): the declaration exactly as written above.
    text = getattr(annotation, "__forward_arg__", annotation)
    return f"{key}: {text}" if isinstance(text, str) else f"a {key!r} key"


def ledger_entry(
    kind: str, node: str, data: dict[str, Any], *, after: list[LedgerEntry] | None
) -> LedgerEntry:
    """A new entry numbered after the last one in ``after`` (O(1))."""
    seq = after[-1]["seq"] + 1 if after else 0
    return LedgerEntry(seq=seq, kind=kind, node=node, ts=time.time(), data=data)
