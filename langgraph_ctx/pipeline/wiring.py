"""Ordering middleware and wiring it onto the nodes of a graph.

Layers run lowest priority number first, ties in registration order. The
order is fixed when the pipeline is attached to a graph; adding a middleware
after that raises. Attaching wraps the graph's node functions in place, so the
user's own nodes need no change::

    pipeline = Pipeline([PreflightCheck(nodes=["agent"])], budget=Budget.for_window(32_000))
    graph = pipeline.attach(builder).compile(checkpointer=saver)

What a middleware may do, and the rules of ``call_next``, are in
:mod:`~langgraph_ctx.pipeline.chain`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import StateGraph
from langgraph.types import StreamWriter
from typing_extensions import TypedDict

from langgraph_ctx._checks import check_has, check_instance, check_int, check_str
from langgraph_ctx.budget import Budget
from langgraph_ctx.errors import ConfigurationError, ContextRunError
from langgraph_ctx.pipeline.chain import FunctionMiddleware, Middleware, arun_layers, run_layers
from langgraph_ctx.pipeline.checks import ADD_TO_STATE, check_node
from langgraph_ctx.pipeline.context import (
    CallContext,
    EventSink,
    SessionTokens,
    View,
    graph_namespace,
)
from langgraph_ctx.pipeline.layer import Layer, register
from langgraph_ctx.tokens import Calibration, MessageTokenCache, TokenCounter


def middleware_list(field: str, middleware: Any) -> list[Any]:
    """The middleware given as a list; one given alone is refused by name (iterating a
    ``Middleware`` used to fail as ``TypeError: ... is not iterable``)."""
    if isinstance(middleware, (Middleware, str, bytes)) or not isinstance(middleware, Iterable):
        raise ConfigurationError(field, f"expected a list of middleware, got {middleware!r:.80}")
    return list(middleware)


class Pipeline:
    """An ordered set of middleware, attached to the nodes of a graph."""

    def __init__(
        self,
        middleware: Iterable[Middleware | Callable[..., Any]] = (),
        *,
        budget: Budget | None = None,
        counter: TokenCounter | None = None,
        tools: Sequence[Any] | Callable[[Mapping[str, Any]], Sequence[Any]] = (),
        node_tools: Mapping[str, Sequence[Any]] | None = None,
        system_prompt: str | None = None,
        max_sessions: int = 1024,
        events: EventSink | None = None,
    ) -> None:
        self.budget = budget if budget is not None else Budget()
        if not isinstance(self.budget, Budget):
            raise ConfigurationError("Pipeline.budget", f"expected a Budget, got {budget!r}")
        if counter is not None:
            check_instance("Pipeline.counter", counter, TokenCounter, "a TokenCounter")
        if not callable(tools) and (isinstance(tools, (str, bytes)) or not _iterable(tools)):
            raise ConfigurationError("Pipeline.tools", f"expected a list of tools, got {tools!r}")
        node_tools = dict(node_tools or {})
        for node, bound in node_tools.items():
            if isinstance(bound, (str, bytes)) or not _iterable(bound):
                raise ConfigurationError(
                    f"Pipeline.node_tools[{node!r}]", f"expected a list of tools, got {bound!r}"
                )
        if system_prompt is not None:
            check_str("Pipeline.system_prompt", system_prompt, empty=True)
        check_int("Pipeline.max_sessions", max_sessions, least=1)
        if events is not None:
            check_has("Pipeline.events", events, ("write", "awrite"), "an EventSink")
        self.counter = counter if counter is not None else TokenCounter()
        self.tools = tools if callable(tools) else list(tools)
        """Tools the wrapped nodes bind, counted against the tool budget: a list,
        or a function of the state (a session's discovered tools live there)."""
        self.node_tools = {node: list(bound) for node, bound in node_tools.items()}
        """The tools a node sends where they are not ``tools``: ``think`` sends only the
        schema of its structured thought, and a prompt measured with tools it does not
        send is refused for room it does not need."""
        self.system_prompt = system_prompt
        """A system prompt your node adds itself (not in state): counted as system."""
        self.events = events
        """Where every ledger event is also written (the event table), if anywhere."""
        self.channels: frozenset[str] = frozenset()
        """The keys of the attached graph's state (set by ``attach()``)."""
        self._registered: list[Layer] = []
        self._layers: dict[str, list[Layer]] | None = None
        self._sessions: OrderedDict[tuple[str, str], SessionTokens] = OrderedDict()
        self._sessions_lock = threading.Lock()
        self._max_sessions = max_sessions
        for mw in middleware_list("Pipeline.middleware", middleware):
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
        if any(layer.middleware is mw for layer in self._registered):
            raise ConfigurationError(
                "Pipeline.use",
                f"{getattr(mw, 'name', mw)!r} (this instance) is registered already: "
                "it would run twice on a call",
            )
        if not isinstance(mw, Middleware):
            if not callable(mw):
                raise ConfigurationError("Pipeline.use", f"not a middleware: {mw!r}")
            mw = FunctionMiddleware(mw)
        rank = mw.priority if priority is None else priority
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise ConfigurationError(f"{mw.name}.priority", f"must be an int, got {rank!r}")
        layer = register(mw, len(self._registered))  # may refuse it: nothing changed yet
        # The overrides belong to this pipeline's layer, never to the instance: one
        # middleware object shared by two pipelines keeps its own settings in each.
        self._registered.append(
            dataclasses.replace(
                layer, priority=rank, asked=tuple(nodes) if nodes is not None else mw.nodes
            )
        )
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
        channels = frozenset(builder.channels) | frozenset(builder.managed)
        for layer in {id(ly): ly for node_layers in layers.values() for ly in node_layers}.values():
            layer.middleware.check_graph(builder, layer.nodes)
        for name in sorted(layers):
            check_node(name, layers[name], channels, ADD_TO_STATE)
        for name, node_layers in layers.items():
            if node_layers:
                spec = builder.nodes[name]
                builder.nodes[name] = dataclasses.replace(
                    spec, runnable=self._wrap(name, cast(Runnable[Any, Any], spec.runnable))
                )
        self.channels = channels
        self._layers = layers
        return builder

    def attach_to_calls(self, node: str, channels: Iterable[str], fix: str) -> list[Layer]:
        """Attach to the calls of one ``node`` outside a StateGraph (the model calls
        of LangChain's ``create_agent``) and return its layers, in order.

        Every layer runs on every call: node filters do not apply. ``channels``
        are the keys of the state of the graph those calls run in; ``fix`` says
        how to add a key a layer needs and that state lacks.
        """
        if self._layers is not None:
            raise ConfigurationError("Pipeline.attach_to_calls", "already attached")
        layers = self._plan({node}, filters=False)
        check_node(node, layers[node], frozenset(channels), fix)
        self._layers, self.channels = layers, frozenset(channels)
        return layers[node]

    def _plan(self, node_names: set[str], *, filters: bool = True) -> dict[str, list[Layer]]:
        resolved = [
            dataclasses.replace(
                ly, nodes=_targets(ly.middleware, ly.asked, node_names) if filters else None
            )
            for ly in self._registered
        ]
        resolved.sort(key=lambda layer: (layer.priority, layer.index))
        return {n: [ly for ly in resolved if ly.nodes is None or n in ly.nodes] for n in node_names}

    def _wrap(self, node: str, inner: Runnable[Any, Any]) -> Runnable[Any, Any]:
        def run(state: Any, config: RunnableConfig, writer: StreamWriter) -> Any:
            return self.invoke_node(self.context_for(node, state, config, writer), inner)

        async def arun(state: Any, config: RunnableConfig, writer: StreamWriter) -> Any:
            return await self.ainvoke_node(self.context_for(node, state, config, writer), inner)

        return _WrappedNode(node, run, arun)

    # -- running -----------------------------------------------------------

    def session_for(self, config: RunnableConfig, state: Mapping[str, Any]) -> SessionTokens:
        """The token cache and calibration of the session ``config`` names."""
        conf = config.get("configurable", {})
        key = (str(conf.get("thread_id", "")), graph_namespace(config))
        with self._sessions_lock:
            session = self._sessions.get(key)
            if session is None:
                session = SessionTokens(cache=MessageTokenCache(self.counter))
                self._sessions[key] = session
                if len(self._sessions) > self._max_sessions:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            _restore_calibration(session.calibration, state)
            _restore_reserved(session, state)
            return session

    def context_for(
        self,
        node: str,
        state: Any,
        config: RunnableConfig,
        writer: Callable[[Any], None] | None = None,
        *,
        tools: Sequence[Any] | None = None,
        system_prompt: str | None = None,
    ) -> CallContext:
        """The context of one call of ``node``. ``tools`` and ``system_prompt``
        default to the pipeline's (a create_agent request brings its own)."""
        if not isinstance(state, Mapping):
            raise ContextRunError(
                f"node {node!r} received {type(state).__name__}; langgraph-ctx needs a "
                "dict-like (TypedDict) state schema"
            )
        if tools is None and node in self.node_tools:
            tools = self.node_tools[node]
        if tools is None:
            tools = self.tools(state) if callable(self.tools) else self.tools
        return CallContext(
            node=node,
            config=config,
            state=state,
            session=self.session_for(config, state),
            budget=self.budget,
            counter=self.counter,
            channels=self.channels,
            system_prompt=system_prompt or self.system_prompt,
            sink=self.events,
            stream_writer=writer,
            tools=list(tools),
        )

    def invoke_node(self, ctx: CallContext, inner: Runnable[Any, Any]) -> Any:
        """Run one call of ``ctx.node``: its layers around ``inner``; return the
        node's update merged with the layers' persistent updates and events."""
        terminal = partial(_invoke, inner, ctx.config)
        return ctx.merge(run_layers(self.layers_for(ctx.node), ctx, View(ctx.state), terminal))

    async def ainvoke_node(self, ctx: CallContext, inner: Runnable[Any, Any]) -> Any:
        """Async :meth:`invoke_node`."""
        terminal = partial(_ainvoke, inner, ctx.config)
        return ctx.merge(
            await arun_layers(self.layers_for(ctx.node), ctx, View(ctx.state), terminal)
        )


def _invoke(inner: Runnable[Any, Any], config: RunnableConfig, view: View) -> Any:
    return inner.invoke(dict(view), config)


async def _ainvoke(inner: Runnable[Any, Any], config: RunnableConfig, view: View) -> Any:
    return await inner.ainvoke(dict(view), config)


def _targets(
    mw: Middleware, asked: tuple[str, ...] | None, node_names: set[str]
) -> frozenset[str] | None:
    """The nodes ``mw`` runs on (``None``: all), checked against the graph's; ``asked``:
    the nodes it was registered for, if any."""
    if asked is not None:
        missing = sorted(set(asked) - node_names)
        if missing:
            raise ConfigurationError(
                f"{mw.name}.nodes",
                f"names node(s) {missing} the graph lacks; it has {sorted(node_names)}",
            )
        return frozenset(asked)
    if mw.default_nodes is not None:
        targets = frozenset(mw.default_nodes) & node_names
        if not targets:
            raise ConfigurationError(
                f"{mw.name}.nodes",
                f"applies by default to {list(mw.default_nodes)}, none of which the graph "
                f"has ({sorted(node_names)}); pass nodes=[...]",
            )
        return targets
    return None


class _WrappedNode(Runnable[Any, Any]):
    """A graph node run through the pipeline, sync or async.

    Each side is the runnable LangGraph itself makes for a plain node function
    (public ``StateGraph.add_node``): it passes ``config`` and the stream
    ``writer`` in, and opens no tracing run of its own, which matters because
    every LLM call goes through here.
    """

    def __init__(
        self, name: str, run: Callable[..., Any], arun: Callable[..., Awaitable[Any]]
    ) -> None:
        self.name = name
        self._run = _node_runnable(name, run)
        self._arun = _node_runnable(name, arun)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._run.invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._arun.ainvoke(input, config, **kwargs)


def _node_runnable(name: str, fn: Callable[..., Any]) -> Runnable[Any, Any]:
    builder = StateGraph(_NoState)  # a throwaway: only its node factory is used
    builder.add_node(name, fn)
    return cast(Runnable[Any, Any], builder.nodes[name].runnable)


class _NoState(TypedDict):
    pass


def _restore_calibration(calibration: Calibration, state: Mapping[str, Any]) -> None:
    # The ratio as the thread's last committed call left it, from its ledger: a
    # resumed session picks it up, and so does a process that did not serve that
    # call (or the one before), so every process measures alike.
    for entry in reversed(state.get("context_ledger") or ()):
        if entry.get("kind") == "utilization":
            data = entry.get("data", {})
            if data.get("calibration_samples_next"):  # learned from that call's usage
                calibration.ratio = float(data["calibration_next"])
                calibration.samples = int(data["calibration_samples_next"])
            elif data.get("calibration_samples"):  # as it stood when that call began
                calibration.ratio = float(data["calibration"])
                calibration.samples = int(data["calibration_samples"])
            return


def _restore_reserved(session: SessionTokens, state: Mapping[str, Any]) -> None:
    # What layers add to every prompt (kept recall blocks) as the thread's last
    # committed step left it: another process may have served that step, and
    # pre-flight must count what this call will send, not what this process last saw.
    saved = (state.get("session") or {}).get("reserved")
    if isinstance(saved, Mapping):
        session.reserved = {str(k): int(v) for k, v in saved.items()}


def _iterable(value: object) -> bool:
    try:
        iter(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True
