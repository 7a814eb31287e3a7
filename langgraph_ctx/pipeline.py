"""The middleware contract, its ordering, and its wiring onto graph nodes.

A middleware is called as ``mw(view, config, ctx, next)``. It may

- hand ``next`` a different :class:`View` — an *ephemeral* change, seen by the
  rest of this call only;
- call ``ctx.persist(...)`` — a :class:`PersistentUpdate`, merged with the
  node's own update through the graph's reducers and so checkpointed;
- annotate ``ctx`` (pre-flight writes ``ctx.usage`` there for later layers);
- post-process what ``next`` returned;
- or return without calling ``next`` (short-circuit).

Layers run lowest priority number first, ties in registration order. The
order is fixed when the pipeline is attached to a graph; adding a middleware
after that raises. Attaching wraps the graph's node functions in place, so the
user's own nodes need no change::

    pipeline = Pipeline([PreflightCheck(nodes=["agent"])], budget=Budget.for_window(32_000))
    graph = pipeline.attach(builder).compile(checkpointer=saver)
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import StateGraph
from langgraph.types import Command

from langgraph_ctx.budget import Budget, Component, UsageReport, measure
from langgraph_ctx.errors import (
    ConfigurationError,
    ContextRunError,
    MiddlewareError,
    NextCalledTwiceError,
)
from langgraph_ctx.state import LedgerEntry, ledger_entry
from langgraph_ctx.tokens import Calibration, MessageTokenCache, TokenCounter

DEFAULT_PRIORITY = 100


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

    Writes must be idempotent on ``(thread_id, namespace, entry["seq"])``:
    LangGraph re-runs a step that was in flight when a process died, and the
    re-run records the same events with the same sequence numbers.
    """

    def write(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None: ...

    async def awrite(
        self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]
    ) -> None: ...


class Next(Protocol):
    def __call__(self, view: View, /) -> Any: ...


class AsyncNext(Protocol):
    def __call__(self, view: View, /) -> Awaitable[Any]: ...


class Middleware:
    """Base class: override ``__call__`` (sync) and/or ``acall`` (async).

    Both default to passing the call straight through. A middleware that only
    overrides ``__call__`` still works under ``ainvoke``: it runs in a worker
    thread and its ``next`` hops back onto the event loop.
    """

    name: str = ""
    priority: int = DEFAULT_PRIORITY
    default_nodes: tuple[str, ...] | None = None
    """Nodes this built-in applies to unless told otherwise. Unlike an explicit
    filter, a default may name nodes the graph lacks, as long as one exists."""

    def __init__(
        self,
        *,
        priority: int | None = None,
        nodes: Sequence[str] | None = None,
        name: str | None = None,
    ) -> None:
        if priority is not None:
            self.priority = priority
        self.nodes: tuple[str, ...] | None = tuple(nodes) if nodes is not None else None
        if name is not None:
            self.name = name
        if not self.name:
            self.name = type(self).__name__

    def __call__(self, view: View, config: RunnableConfig, ctx: CallContext, next: Next) -> Any:
        return next(view)

    async def acall(
        self, view: View, config: RunnableConfig, ctx: CallContext, next: AsyncNext
    ) -> Any:
        return await next(view)

    @property
    def has_sync(self) -> bool:
        return True

    @property
    def has_async(self) -> bool:
        return (
            type(self).acall is not Middleware.acall or type(self).__call__ is Middleware.__call__
        )


class FunctionMiddleware(Middleware):
    """A plain (sync or async) function used as middleware."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        priority: int | None = None,
        nodes: Sequence[str] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(priority=priority, nodes=nodes, name=name or getattr(fn, "__name__", ""))
        self.fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)

    def __call__(self, view: View, config: RunnableConfig, ctx: CallContext, next: Next) -> Any:
        if self._is_async:
            raise ContextRunError(
                f"middleware {self.name!r} is async-only: run the graph with ainvoke/astream"
            )
        return self.fn(view, config, ctx, next)

    async def acall(
        self, view: View, config: RunnableConfig, ctx: CallContext, next: AsyncNext
    ) -> Any:
        return await self.fn(view, config, ctx, next)

    @property
    def has_sync(self) -> bool:
        return not self._is_async

    @property
    def has_async(self) -> bool:
        return self._is_async


F = TypeVar("F", bound=Callable[..., Any])


def as_middleware(
    *, priority: int = DEFAULT_PRIORITY, nodes: Sequence[str] | None = None, name: str | None = None
) -> Callable[[Callable[..., Any]], FunctionMiddleware]:
    """Decorate ``fn(view, config, ctx, next)`` to make it a middleware."""

    def wrap(fn: Callable[..., Any]) -> FunctionMiddleware:
        return FunctionMiddleware(fn, priority=priority, nodes=nodes, name=name)

    return wrap


@dataclasses.dataclass
class SessionTokens:
    """Token state that outlives one call: the message cache and calibration."""

    cache: MessageTokenCache
    calibration: Calibration = dataclasses.field(default_factory=Calibration)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    scratch: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Per-session notes a middleware keeps between calls (in memory only)."""


@dataclasses.dataclass
class CallContext:
    """Travels through the middleware of one node call and into the node.

    Read it from a node with :func:`current_context`.
    """

    node: str
    config: RunnableConfig
    state: Mapping[str, Any]
    """The node's input as LangGraph gave it, before any middleware."""
    pipeline: Pipeline
    session: SessionTokens
    usage: UsageReport | None = None
    """Written by pre-flight."""
    tools: list[Any] = dataclasses.field(default_factory=list)
    """Tools bound for this call (counted by pre-flight, trimmed by eviction)."""
    annotations: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Free-form notes from one middleware to the next."""
    persistent: list[PersistentUpdate] = dataclasses.field(default_factory=list)
    events: list[LedgerEntry] = dataclasses.field(default_factory=list)
    stream_writer: Callable[[Any], None] | None = None
    _passing: set[int] = dataclasses.field(default_factory=set)

    @property
    def budget(self) -> Budget:
        return self.pipeline.budget

    @property
    def counter(self) -> TokenCounter:
        return self.pipeline.counter

    @property
    def thread_id(self) -> str | None:
        value = self.config.get("configurable", {}).get("thread_id")
        return None if value is None else str(value)

    def persist(self, source: str, **values: Any) -> PersistentUpdate:
        """Record a state update that enters the checkpoint with the node's."""
        update = PersistentUpdate(values=values, source=source)
        self.persistent.append(update)
        return update

    def record(self, kind: str, data: dict[str, Any]) -> LedgerEntry:
        """Append an event to the ledger (persistent) and emit it on the custom stream."""
        previous = self.events or self.state.get("context_ledger") or None
        entry = ledger_entry(kind, self.node, data, after=previous)
        self.events.append(entry)
        if self.stream_writer is not None:
            self.stream_writer({"langgraph_ctx": entry})
        return entry

    def adjust_usage(self, component: Component, raw_delta: int) -> UsageReport:
        """Re-measure after a middleware changed what will be sent.

        ``raw_delta`` is the change in raw (uncalibrated) tokens of one
        component. Later middleware then read the new report, and this call's
        utilization entry records what is finally sent.
        """
        old = self.usage
        if old is None:
            raise ContextRunError("adjust_usage needs PreflightCheck to run first")
        used = {**old.used}
        used[component] = max(0, used.get(component, 0) + round(old.calibration * raw_delta))
        self.usage = measure(
            self.budget, used, calibration=old.calibration, raw_total=old.raw_total + raw_delta
        )
        for entry in self.events:
            if entry["kind"] == "utilization":
                entry["data"]["sent_utilization"] = round(self.usage.utilization, 4)
        return self.usage

    def merge(self, result: Any) -> Any:
        """Fold persistent updates and events into the node's return value."""
        updates: list[Any] = [Command(update=dict(p.values)) for p in self.persistent]
        if self.events and "context_ledger" in self.pipeline.channels:
            updates.append(Command(update={"context_ledger": list(self.events)}))
        if not updates:
            return result
        if result is None:
            return updates
        if isinstance(result, list) and any(isinstance(r, Command) for r in result):
            return [*updates, *result]
        return [*updates, result]


_current: ContextVar[CallContext | None] = ContextVar("langgraph_ctx_call", default=None)


def current_context() -> CallContext | None:
    """The call context of the node running now, or ``None`` outside a pipeline."""
    return _current.get()


@dataclasses.dataclass(frozen=True)
class Layer:
    middleware: Middleware
    priority: int
    index: int
    nodes: frozenset[str] | None


@runtime_checkable
class _HasNodes(Protocol):
    nodes: dict[str, Any]


class Pipeline:
    """An ordered set of middleware, attached to the nodes of a graph."""

    def __init__(
        self,
        middleware: Iterable[Middleware | Callable[..., Any]] = (),
        *,
        budget: Budget | None = None,
        counter: TokenCounter | None = None,
        tools: Sequence[Any] | Callable[[Mapping[str, Any]], Sequence[Any]] = (),
        system_prompt: str | None = None,
        max_sessions: int = 1024,
        events: EventSink | None = None,
    ) -> None:
        self.budget = budget if budget is not None else Budget()
        if not isinstance(self.budget, Budget):
            raise ConfigurationError("Pipeline.budget", f"expected a Budget, got {budget!r}")
        self.counter = counter if counter is not None else TokenCounter()
        self.tools = tools if callable(tools) else list(tools)
        """Tools the wrapped nodes bind, counted against the tool budget: a list,
        or a function of the state (a session's discovered tools live there)."""
        self.system_prompt = system_prompt
        self.events = events
        """Where every ledger event is also written (the event table), if anywhere."""
        """A system prompt your node adds itself (not in state): counted as system."""
        self.channels: frozenset[str] = frozenset()
        self._middleware: list[Middleware] = []
        self._layers: dict[str, list[Layer]] | None = None
        self._sessions: OrderedDict[tuple[str, str], SessionTokens] = OrderedDict()
        self._sessions_lock = threading.Lock()
        self._max_sessions = max_sessions
        for mw in middleware:
            self.use(mw)

    def use(
        self,
        mw: Middleware | Callable[..., Any],
        *,
        priority: int | None = None,
        nodes: Sequence[str] | None = None,
    ) -> Pipeline:
        """Register a middleware. Raises once the pipeline is attached."""
        if self._layers is not None:
            raise ConfigurationError(
                "Pipeline.use",
                "the pipeline is already attached to a graph; "
                "register every middleware before attach()",
            )
        if not isinstance(mw, Middleware):
            if not callable(mw):
                raise ConfigurationError("Pipeline.use", f"not a middleware: {mw!r}")
            mw = FunctionMiddleware(mw, priority=priority, nodes=nodes)
        else:
            if priority is not None:
                mw.priority = priority
            if nodes is not None:
                mw.nodes = tuple(nodes)
        if isinstance(mw.priority, bool) or not isinstance(mw.priority, int):
            raise ConfigurationError(f"{mw.name}.priority", f"must be an int, got {mw.priority!r}")
        self._middleware.append(mw)
        return self

    # -- wiring ------------------------------------------------------------

    def layers_for(self, node: str) -> list[Layer]:
        """The layers that run on ``node``, in order (after attach)."""
        if self._layers is None:
            raise ConfigurationError("Pipeline", "not attached to a graph yet")
        return self._layers.get(node, [])

    def attach(self, builder: StateGraph[Any, Any, Any, Any]) -> StateGraph[Any, Any, Any, Any]:
        """Wrap ``builder``'s nodes with this pipeline, in place, and return it.

        Call before ``builder.compile()``. Filters are checked here: an explicit
        filter naming a node the graph lacks is an error.
        """
        if self._layers is not None:
            raise ConfigurationError("Pipeline.attach", "already attached to a graph")
        if not isinstance(builder, StateGraph):
            raise ConfigurationError(
                "Pipeline.attach", f"expected an uncompiled StateGraph, got {type(builder)!r}"
            )
        node_names = set(builder.nodes)
        layers = self._plan(node_names)
        for name, node_layers in layers.items():
            if node_layers:
                spec = builder.nodes[name]
                builder.nodes[name] = dataclasses.replace(
                    spec, runnable=self._wrap(name, cast(Runnable[Any, Any], spec.runnable))
                )
        self.channels = frozenset(builder.channels) | frozenset(builder.managed)
        self._layers = layers
        return builder

    def _plan(self, node_names: set[str]) -> dict[str, list[Layer]]:
        resolved: list[Layer] = []
        for index, mw in enumerate(self._middleware):
            if mw.nodes is not None:
                missing = sorted(set(mw.nodes) - node_names)
                if missing:
                    raise ConfigurationError(
                        f"{mw.name}.nodes",
                        f"names node(s) {missing} the graph lacks; it has {sorted(node_names)}",
                    )
                targets: frozenset[str] | None = frozenset(mw.nodes)
            elif mw.default_nodes is not None:
                targets = frozenset(mw.default_nodes) & node_names
                if not targets:
                    raise ConfigurationError(
                        f"{mw.name}.nodes",
                        f"applies by default to {list(mw.default_nodes)}, none of which the graph "
                        f"has ({sorted(node_names)}); pass nodes=[...]",
                    )
            else:
                targets = None
            resolved.append(Layer(mw, mw.priority, index, targets))
        resolved.sort(key=lambda layer: (layer.priority, layer.index))
        return {n: [ly for ly in resolved if ly.nodes is None or n in ly.nodes] for n in node_names}

    def _wrap(self, node: str, inner: Runnable[Any, Any]) -> Runnable[Any, Any]:
        from langgraph._internal._runnable import RunnableCallable

        def run(state: Any, config: RunnableConfig, runtime: Any = None) -> Any:
            return self.invoke_node(node, inner, state, config, _writer(runtime))

        async def arun(state: Any, config: RunnableConfig, runtime: Any = None) -> Any:
            return await self.ainvoke_node(node, inner, state, config, _writer(runtime))

        return RunnableCallable(run, arun, name=node, trace=False)

    # -- running -----------------------------------------------------------

    def session_for(self, config: RunnableConfig, state: Mapping[str, Any]) -> SessionTokens:
        """The token cache and calibration of the session ``config`` names."""
        conf = config.get("configurable", {})
        key = (str(conf.get("thread_id", "")), graph_namespace(config))
        with self._sessions_lock:
            session = self._sessions.get(key)
            if session is None:
                session = SessionTokens(cache=MessageTokenCache(self.counter))
                _restore_calibration(session.calibration, state)
                self._sessions[key] = session
                if len(self._sessions) > self._max_sessions:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            return session

    def _context(
        self, node: str, state: Any, config: RunnableConfig, writer: Callable[[Any], None] | None
    ) -> CallContext:
        if not isinstance(state, Mapping):
            raise ContextRunError(
                f"node {node!r} received {type(state).__name__}; langgraph-ctx needs a "
                "dict-like (TypedDict) state schema"
            )
        return CallContext(
            node=node,
            config=config,
            state=state,
            pipeline=self,
            session=self.session_for(config, state),
            tools=list(self.tools(state) if callable(self.tools) else self.tools),
            stream_writer=writer,
        )

    def invoke_node(
        self,
        node: str,
        inner: Runnable[Any, Any],
        state: Any,
        config: RunnableConfig,
        writer: Callable[[Any], None] | None = None,
    ) -> Any:
        """Run ``node`` through its layers, synchronously."""
        ctx = self._context(node, state, config, writer)
        result = run_layers(
            self.layers_for(node), ctx, View(state), lambda v: inner.invoke(dict(v), config)
        )
        if self.events is not None and ctx.events:
            self.events.write(ctx.thread_id or "default", graph_namespace(config), ctx.events)
        return ctx.merge(result)

    async def ainvoke_node(
        self,
        node: str,
        inner: Runnable[Any, Any],
        state: Any,
        config: RunnableConfig,
        writer: Callable[[Any], None] | None = None,
    ) -> Any:
        """Run ``node`` through its layers, asynchronously."""
        ctx = self._context(node, state, config, writer)
        result = await arun_layers(
            self.layers_for(node), ctx, View(state), lambda v: inner.ainvoke(dict(v), config)
        )
        if self.events is not None and ctx.events:
            thread, ns = ctx.thread_id or "default", graph_namespace(config)
            await self.events.awrite(thread, ns, ctx.events)
        return ctx.merge(result)


def run_layers(
    layers: Sequence[Layer], ctx: CallContext, view: View, terminal: Callable[[View], Any]
) -> Any:
    """Run ``layers`` in order around ``terminal`` (the node, or a model call).

    The one place the ``next`` contract is enforced: each layer gets a ``next``
    that may be called once; an error a layer raises is wrapped with its name;
    the terminal's own errors pass through untouched.
    """
    config = ctx.config

    def step(i: int) -> Next:
        called = False

        def call(v: View) -> Any:
            nonlocal called
            if called:
                raise _twice(ctx, layers, i)
            called = True
            if i == len(layers):
                return _terminal(ctx, lambda: terminal(v))
            mw = layers[i].middleware
            if not mw.has_sync:
                raise ContextRunError(
                    f"middleware {mw.name!r} is async-only: run the graph with ainvoke/astream"
                )
            return _guard(ctx, mw, lambda: mw(_as_view(v), config, ctx, step(i + 1)))

        return call

    return step(0)(view)


async def arun_layers(
    layers: Sequence[Layer],
    ctx: CallContext,
    view: View,
    terminal: Callable[[View], Awaitable[Any]],
) -> Any:
    """Async :func:`run_layers`. A sync-only layer runs in a worker thread."""
    config = ctx.config
    loop = asyncio.get_running_loop()

    def step(i: int) -> AsyncNext:
        called = False

        async def call(v: View) -> Any:
            nonlocal called
            if called:
                raise _twice(ctx, layers, i)
            called = True
            if i == len(layers):
                return await _aterminal(ctx, terminal(v))
            mw = layers[i].middleware
            if mw.has_async:
                return await _aguard(ctx, mw, mw.acall(_as_view(v), config, ctx, step(i + 1)))
            nxt = step(i + 1)

            def sync_next(inner_view: View) -> Any:
                # Runs in the worker thread: hand the rest of the chain back to the loop.
                return asyncio.run_coroutine_threadsafe(cast(Any, nxt(inner_view)), loop).result()

            return await _aguard(
                ctx, mw, asyncio.to_thread(mw, _as_view(v), config, ctx, sync_next)
            )

        return call

    return await step(0)(view)


def _twice(ctx: CallContext, layers: Sequence[Layer], i: int) -> NextCalledTwiceError:
    # Raised inside the caller's next(): mark it so the caller's guard lets it through as is.
    error = NextCalledTwiceError(layers[i - 1].middleware.name if i else "<pipeline>", ctx.node)
    ctx._passing.add(id(error))
    return error


def graph_namespace(config: RunnableConfig) -> str:
    """The namespace of the graph a node runs in: ``""`` for the root graph.

    A node's ``checkpoint_ns`` ends with its own task (``node:task-id``); drop
    it, and drop the task ids of enclosing subgraphs, which change every run.
    """
    ns = str(config.get("configurable", {}).get("checkpoint_ns", ""))
    parts = [p.split(":")[0] for p in ns.split("|") if p]
    return "|".join(parts[:-1])


def _as_view(view: Mapping[str, Any]) -> View:
    return view if isinstance(view, View) else View(view)


def _writer(runtime: Any) -> Callable[[Any], None] | None:
    return cast(Callable[[Any], None] | None, getattr(runtime, "stream_writer", None))


def _restore_calibration(calibration: Calibration, state: Mapping[str, Any]) -> None:
    # A resumed session picks up the ratio it had learned, from its ledger.
    for entry in reversed(state.get("context_ledger") or ()):
        if entry.get("kind") == "utilization":
            data = entry.get("data", {})
            if data.get("calibration_samples"):
                calibration.ratio = float(data["calibration"])
                calibration.samples = int(data["calibration_samples"])
            return


def _terminal(ctx: CallContext, run: Callable[[], Any]) -> Any:
    token = _current.set(ctx)
    try:
        return run()
    except BaseException as exc:
        ctx._passing.add(id(exc))  # the node's own error: middleware must not re-wrap it
        raise
    finally:
        _current.reset(token)


async def _aterminal(ctx: CallContext, run: Awaitable[Any]) -> Any:
    token = _current.set(ctx)
    try:
        return await run
    except BaseException as exc:
        ctx._passing.add(id(exc))
        raise
    finally:
        _current.reset(token)


def _wrap_error(ctx: CallContext, mw: Middleware, exc: BaseException) -> BaseException | None:
    if id(exc) in ctx._passing or isinstance(exc, (GraphBubbleUp, asyncio.CancelledError)):
        return None
    if not isinstance(exc, Exception):
        return None
    wrapped = MiddlewareError(mw.name, ctx.node, exc)
    ctx._passing.add(id(wrapped))
    return wrapped


def _guard(ctx: CallContext, mw: Middleware, run: Callable[[], Any]) -> Any:
    try:
        return run()
    except BaseException as exc:
        wrapped = _wrap_error(ctx, mw, exc)
        if wrapped is None:
            raise
        raise wrapped from exc


async def _aguard(ctx: CallContext, mw: Middleware, run: Awaitable[Any]) -> Any:
    try:
        return await run
    except BaseException as exc:
        wrapped = _wrap_error(ctx, mw, exc)
        if wrapped is None:
            raise
        raise wrapped from exc
