"""What travels through one node call: the view, persistent updates, the call context.

Two kinds of change, two types. A :class:`View` is what this call's node will
see; handing ``call_next`` a different view is an *ephemeral* change. A
:class:`PersistentUpdate` (made with :meth:`CallContext.persist`) is merged
with the node's own update through the graph's reducers, so it is
checkpointed.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from langgraph_ctx.budget import Budget, Component, UsageReport, measure
from langgraph_ctx.errors import ContextRunError
from langgraph_ctx.pipeline.recording import Recording
from langgraph_ctx.state import LEDGER, LedgerEntry
from langgraph_ctx.tokens import Calibration, MessageTokenCache, TokenCounter


class View(Mapping[str, Any]):
    """The state as this call's node will see it. Read-only.

    ``view.replace(messages=...)`` returns a new view: an ephemeral change,
    never written to the checkpoint. To change state for good, use
    :meth:`CallContext.persist`.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def replace(self, **changes: Any) -> View:
        return View({**self._data, **changes})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"View({sorted(self._data)})"


@dataclasses.dataclass(frozen=True)
class PersistentUpdate:
    """A state update a middleware made that must enter the checkpoint.

    Applied through the graph's reducers, before the node's own update, in the
    same super-step: if the node fails, neither lands.
    """

    values: Mapping[str, Any]
    source: str
    """The middleware that made it."""


class EventSink(Protocol):
    """Receives every ledger event of a node call, after the call succeeds.

    Writes must be idempotent on ``(thread_id, namespace, entry["node"],
    entry["seq"])``: LangGraph re-runs a step that was in flight when a process
    died, and the re-run records the same events with the same numbers. The
    node is part of the key because parallel nodes of one step number their
    events from the same ledger.
    """

    def write(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None: ...

    async def awrite(
        self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]
    ) -> None: ...


@dataclasses.dataclass
class SessionTokens:
    """Token state that outlives one call: the message cache and calibration."""

    cache: MessageTokenCache
    calibration: Calibration = dataclasses.field(default_factory=Calibration)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    scratch: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Per-session notes a middleware keeps between calls (in memory only)."""
    reserved: dict[str, int] = dataclasses.field(default_factory=dict)
    """Raw tokens a layer adds to every prompt of the session after pre-flight ran
    (a kept recall block, merged into the system message), by layer: pre-flight
    counts them as system content, so that compression makes room for them.
    Restored before each call from ``state["session"]["reserved"]`` where a layer
    checkpoints it, so that whichever process serves the call counts the same."""


@dataclasses.dataclass(kw_only=True)
class CallContext(Recording):
    """Travels through the middleware of one node call and into the node.

    It carries everything the call needs (budget, counter, channels, ...), so a
    middleware never reaches back into the :class:`~langgraph_ctx.Pipeline`.
    Read it from a node with :func:`current_context`.
    """

    node: str
    config: RunnableConfig
    state: Mapping[str, Any]
    """The node's input as LangGraph gave it, before any middleware."""
    session: SessionTokens
    budget: Budget
    counter: TokenCounter
    channels: frozenset[str]
    """The keys of the graph's state: the only places persistent updates and
    ledger events can go (LangGraph drops an update to any other key silently)."""
    system_prompt: str | None = None
    """A system prompt the node adds itself (not in state): counted as system."""
    sink: EventSink | None = None
    """Where this call's ledger events are also written once it succeeded, if anywhere."""
    stream_writer: Callable[[Any], None] | None = None
    tools: list[Any] = dataclasses.field(default_factory=list)
    """Tools bound for this call (counted by pre-flight, trimmed by eviction).
    Replace the list rather than change it in place: a failed ``call_next``
    restores the list it started with."""
    usage: UsageReport | None = None
    """Written by pre-flight; re-measured by :meth:`adjust_usage`."""
    usage_entry: LedgerEntry | None = None
    """The ``utilization`` entry pre-flight recorded for ``usage``: it fills in the
    final numbers (what was sent, what the provider counted) after the call."""
    last_check: Callable[[View], View] | None = None
    """Run on the view the node gets, after every layer, just before the node:
    pre-flight's prompt ceiling sets it, so that what any middleware did (or a
    strategy failed to do), the prompt sent stays within the limit."""
    annotations: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Free-form notes from one middleware to the next."""
    persistent: list[PersistentUpdate] = dataclasses.field(default_factory=list)
    events: list[LedgerEntry] = dataclasses.field(default_factory=list)
    _passing: set[int] = dataclasses.field(default_factory=set)

    @property
    def thread_id(self) -> str | None:
        value = self.config.get("configurable", {}).get("thread_id")
        return None if value is None else str(value)

    def persist(self, source: str, **values: Any) -> PersistentUpdate:
        """Record a state update that enters the checkpoint with the node's.

        Raises :class:`~langgraph_ctx.errors.ContextRunError` (and records
        nothing) for a key the graph's state lacks.
        """
        missing = sorted(set(values) - self.channels)
        self._require(missing, f"{source} persisted {missing}")
        update = PersistentUpdate(values=values, source=source)
        self.persistent.append(update)
        return update

    def final_view(self, view: View) -> View:
        """``view`` as the node gets it: through :attr:`last_check`, if set."""
        return view if self.last_check is None else self.last_check(view)

    def measured(self) -> UsageReport:
        """Pre-flight's usage report for this call; an error if it has not run."""
        if self.usage is None:
            raise ContextRunError(
                f"no usage report on node {self.node!r}: this middleware needs "
                "PreflightCheck to run before it on the same node"
            )
        return self.usage

    def adjust_usage(self, component: Component, raw_delta: int) -> UsageReport:
        """Re-measure after a middleware changed what will be sent.

        ``raw_delta`` is the change in raw (uncalibrated) tokens of one
        component; calibrated, it is rounded up, so that an estimate errs on
        the side of a fuller prompt. Later middleware read the new report, and
        pre-flight records it as what was finally sent.
        """
        old = self.measured()
        used = {**old.used}
        used[component] = max(0, used.get(component, 0) + math.ceil(old.calibration * raw_delta))
        self.usage = measure(
            self.budget, used, calibration=old.calibration, raw_total=old.raw_total + raw_delta
        )
        return self.usage

    def _mark(self) -> _Mark:
        return len(self.persistent), len(self.events), self.usage, self.usage_entry, self.tools

    def _rollback(self, mark: _Mark) -> None:
        """Undo what a failed ``call_next`` did to this context (see the contract)."""
        persistent, events, self.usage, self.usage_entry, self.tools = mark
        del self.persistent[persistent:]
        del self.events[events:]

    def finish(self) -> None:
        """The call succeeded: emit its events on the custom stream and to the sink."""
        if self._stream() and self.sink is not None:
            self.sink.write(self.thread_id or "default", graph_namespace(self.config), self.events)

    async def afinish(self) -> None:
        """Async :meth:`finish`."""
        if self._stream() and self.sink is not None:
            thread, namespace = self.thread_id or "default", graph_namespace(self.config)
            await self.sink.awrite(thread, namespace, self.events)

    def _stream(self) -> bool:
        if self.stream_writer is not None:
            for entry in self.events:
                self.stream_writer({"langgraph_ctx": entry})
        return bool(self.events)

    def merge(self, result: Any) -> Any:
        """Fold persistent updates and events into the node's return value."""
        updates: list[Any] = [Command(update=dict(p.values)) for p in self.persistent]
        if self.events:
            updates.append(Command(update={LEDGER: list(self.events)}))
        if not updates:
            return result
        if result is None:
            return updates
        if isinstance(result, list) and any(isinstance(r, Command) for r in result):
            return [*updates, *result]
        return [*updates, result]


_Mark = tuple[int, int, UsageReport | None, LedgerEntry | None, list[Any]]

_current: ContextVar[CallContext | None] = ContextVar("langgraph_ctx_call", default=None)


def current_context() -> CallContext | None:
    """The call context of the node running now, or ``None`` outside a pipeline."""
    return _current.get()


def graph_namespace(config: RunnableConfig) -> str:
    """The namespace of the graph a node runs in: ``""`` for the root graph.

    A node's ``checkpoint_ns`` ends with its own task (``node:task-id``); drop
    it, and drop the task ids of enclosing subgraphs, which change every run.
    """
    ns = str(config.get("configurable", {}).get("checkpoint_ns", ""))
    parts = [p.split(":")[0] for p in ns.split("|") if p]
    return "|".join(parts[:-1])
