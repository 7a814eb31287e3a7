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

A strategy's own keys are not here: each strategy declares them (its
``state_schema``, as LangChain v1's agent middleware does; PACE's ``pace_chunks``
in :class:`~langgraph_ctx.strategies.PaceState`), and
:func:`~langgraph_ctx.agent.create_context_agent` merges them into the graph's
state (:func:`with_keys`). A graph of your own extends both::

    class MyState(ContextState, PaceState): ...

:class:`DeltaContextState` keeps ``messages`` in a ``DeltaChannel`` too, for
histories that are never rewritten (PACE's): with ``add_messages`` every
checkpoint serializes the whole history (O(history) a step, O(steps^2) a
session); with it, a step stores its new messages and every
:data:`SNAPSHOT_EVERY`-th update of the channel a full copy to replay from. A
read still loads the whole history (the nodes need it); what it saves is the
write. :func:`delta_messages` is ``add_messages`` in the form ``DeltaChannel``
needs (a batch at once, the same result however the writes are batched), with
``RemoveMessage(REMOVE_ALL_MESSAGES)`` honoured, so the strategies that rewrite
the history work on it as well (LangGraph's own delta reducer ignores it).
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Annotated, Any, cast

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
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
    """What it measured or did: :data:`langgraph_ctx.ledger.EVENT_TYPES` has its
    type for each ``kind`` (read it with :func:`langgraph_ctx.ledger.event_data`)."""


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


SNAPSHOT_EVERY = 100
"""Updates of a delta channel between two full copies of it in the checkpoints:
a read replays at most this many writes onto the last copy, and the copies cost
O(value / SNAPSHOT_EVERY) a step."""


def merge_records(state: dict[str, Any], writes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`merge_dicts` over a batch of writes, for a ``DeltaChannel``."""
    merged = dict(state or {})
    for write in writes:
        merged.update(write or {})
    return merged


def recall_shown_changes(
    state: Mapping[str, Any] | None, writes: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The recall lines each turn was shown (``{"signature": ..., "lines": {user
    message id: [line, ...]}}``, see ``middleware/_recall_refresh.py``) with a batch
    of changes applied in order, for a ``DeltaChannel``: each change may start over
    (``reset``, with the new ``signature``), ``drop`` turns, and ``add`` lines at
    the end of a turn's. A turn's lines only grow until a compression starts them
    over, so a step stores the lines it added, not every line kept."""
    lines = {a: list(v) for a, v in ((state or {}).get("lines") or {}).items()}
    signature = (state or {}).get("signature", 0)
    for change in writes:
        if change.get("reset"):
            signature, lines = change.get("signature", 0), {}
        for anchor in change.get("drop") or ():
            lines.pop(anchor, None)
        for anchor, added in (change.get("add") or {}).items():
            lines[anchor] = [*lines.get(anchor, ()), *added]
    return {"signature": signature, "lines": lines}


def delta_messages(state: Sequence[Any], writes: Sequence[Any]) -> list[BaseMessage]:
    """``add_messages`` for a ``DeltaChannel``: a batch of writes, each a message or a
    list of them, applied one message at a time in order (so batching never changes
    the result). A message whose id is there replaces it in place, a new one is
    appended, ``RemoveMessage(id)`` removes one (an unknown id is an error, as with
    ``add_messages``), ``RemoveMessage(REMOVE_ALL_MESSAGES)`` everything before it.

    Ids are not made here (a replay would make new ones): LangGraph stamps every
    message object or message dict written to a delta channel before storing it.
    """
    flat = [m for w in writes for m in (w if isinstance(w, list) else [w])]
    new = [message_chunk_to_message(m) for m in convert_to_messages(flat)]
    typed = state if not state or isinstance(state[0], BaseMessage) else convert_to_messages(state)
    if _only_appends(typed, new):  # the usual step: C-level, not a Python pass over the history
        return [*typed, *new]
    out: list[BaseMessage | None] = list(typed)
    at = {m.id: i for i, m in enumerate(out) if m is not None and m.id is not None}
    for m in new:
        i = at.get(m.id) if m.id is not None else None
        if isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES:
            out, at = [], {}
        elif isinstance(m, RemoveMessage):
            if i is None or m.id is None:
                raise ValueError(
                    f"Attempting to delete a message with an ID that doesn't exist ('{m.id}')"
                )
            out[i] = None
            del at[m.id]
        elif i is not None:
            out[i] = m
        else:
            if m.id is not None:
                at[m.id] = len(out)
            out.append(m)
    return [m for m in out if m is not None]


_ID = attrgetter("id")


def _only_appends(state: Sequence[BaseMessage], new: Sequence[BaseMessage]) -> bool:
    """Whether ``new`` only appends to ``state``: no removal, and no id already there
    or repeated (each of those replaces in place)."""
    ids = [m.id for m in new if m.id is not None]
    if any(isinstance(m, RemoveMessage) for m in new) or len(set(ids)) < len(ids):
        return False
    return not ids or set(map(_ID, state)).isdisjoint(ids)


class _ContextFields(TypedDict, total=False):
    """Every field of the state but ``messages``, whose channel the two schemas choose."""

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


class ContextState(_ContextFields, total=False):
    """The state every langgraph-ctx graph runs on."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation: user, assistant, tool messages, summaries."""


class DeltaContextState(_ContextFields, total=False):
    """:class:`ContextState` with ``messages`` in a ``DeltaChannel`` (LangGraph beta):
    each step checkpoints its new messages, not the whole history. PACE's default
    in :func:`~langgraph_ctx.agent.create_context_agent`; any strategy runs on it."""

    messages: Annotated[
        list[AnyMessage], DeltaChannel(delta_messages, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """The conversation, stored as what each step added."""
    recall_shown: Annotated[
        dict[str, Any], DeltaChannel(recall_shown_changes, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """The recall lines kept in each turn's user message since the last compression
    (``recall_refresh="delta"``), stored as the lines each call added. Under
    :class:`ContextState` they are in ``session["recall_shown"]``, rewritten into
    every checkpoint with the rest of the session."""


def declaration(key: str, *schemas: type[Any]) -> str:
    """How :class:`ContextState`, or else one of ``schemas`` (a strategy's
    ``state_schema``), declares ``key``, to copy into another state schema."""
    annotation = next(
        (
            found
            for schema in (ContextState, *schemas)
            if (found := getattr(schema, "__annotations__", {}).get(key)) is not None
        ),
        None,
    )
    # A string under ``from __future__ import annotations`` (a ForwardRef once
    # TypedDict has it): the declaration exactly as written above.
    text = getattr(annotation, "__forward_arg__", annotation)
    return f"{key}: {text}" if isinstance(text, str) else f"a {key!r} key"


def ledger_entry(
    kind: str, node: str, data: Mapping[str, Any], *, after: list[LedgerEntry] | None
) -> LedgerEntry:
    """A new entry numbered after the last one in ``after`` (O(1)). ``data``: a
    ``langgraph_ctx.ledger`` type, kept as the same dict (pre-flight completes its
    entry after the call)."""
    seq = after[-1]["seq"] + 1 if after else 0
    return LedgerEntry(
        seq=seq, kind=kind, node=node, ts=time.time(), data=cast(dict[str, Any], data)
    )


def with_keys(base: type[Any], *schemas: type[Any]) -> type[Any]:
    """``base`` (a TypedDict state) extended with the keys of ``schemas`` (each a
    TypedDict: a strategy's ``state_schema``) that it lacks: the state a graph runs
    on when its strategy keeps keys of its own. ``base`` itself when it has them
    all, so a schema given with them is used as it is. The keys keep their names
    and channels, so a checkpoint written before still loads."""
    have = set(getattr(base, "__annotations__", {}))
    extra = [s for s in schemas if not set(getattr(s, "__annotations__", {})) <= have]
    if not extra:
        return base

    def body(namespace: dict[str, Any]) -> None:
        namespace["__module__"] = base.__module__
        namespace["__doc__"] = base.__doc__

    return types.new_class(base.__name__, (base, *extra), {"total": False}, body)
