"""The middleware contract and the one loop that runs it.

A middleware is called as ``mw(view, config, ctx, next)`` (sync) or awaited
as ``mw.acall(...)`` (async). :func:`run_layers` is the only place the
contract is enforced: ``next`` may be called once; an error a middleware
raises surfaces as :class:`~langgraph_ctx.errors.MiddlewareError` naming it;
the node's own errors pass through untouched.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp

from langgraph_ctx.errors import ContextRunError, MiddlewareError, NextCalledTwiceError
from langgraph_ctx.pipeline.context import CallContext, View, _current
from langgraph_ctx.pipeline.hooks import Step, adrive, drive

DEFAULT_PRIORITY = 100


class Next(Protocol):
    def __call__(self, view: View, /) -> Any: ...


class AsyncNext(Protocol):
    def __call__(self, view: View, /) -> Awaitable[Any]: ...


class Middleware:
    """Base class of every middleware.

    Most override the hooks, each written once for sync and async runs:

    - :meth:`before` gets the view and returns the view the rest of the call
      sees (the same one to pass it through);
    - :meth:`after` gets the result the rest of the call returned and returns
      the result to hand back.

    A hook that needs I/O yields an :class:`~langgraph_ctx.pipeline.hooks.IOCall`
    (see :mod:`~langgraph_ctx.pipeline.hooks`). To short-circuit, retry, or
    otherwise control the call itself, override ``__call__`` (sync) and/or
    ``acall`` (async) instead. A middleware that only overrides ``__call__``
    still works under ``ainvoke``: it runs in a worker thread and its ``next``
    hops back onto the event loop. One that only overrides ``acall`` is async-only.
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

    def check_graph(self, builder: Any, nodes: frozenset[str] | None) -> None:
        """Validate the graph this middleware is attached to (``nodes``: its targets,
        ``None`` for all). Raise :class:`~langgraph_ctx.errors.ConfigurationError`
        to refuse it at wiring time. The default accepts any graph."""

    def before(self, view: View, ctx: CallContext) -> Step[View]:
        """Runs before the rest of the call; returns the view it sees."""
        return view

    def after(self, view: View, result: Any, ctx: CallContext) -> Step[Any]:
        """Runs after the rest of the call returned ``result`` (``view``: what
        :meth:`before` handed on); returns the result to hand back."""
        return result

    def __call__(self, view: View, config: RunnableConfig, ctx: CallContext, next: Next) -> Any:
        handed = drive(self.before(view, ctx))
        return drive(self.after(handed, next(handed), ctx))

    async def acall(
        self, view: View, config: RunnableConfig, ctx: CallContext, next: AsyncNext
    ) -> Any:
        handed = await adrive(self.before(view, ctx))
        return await adrive(self.after(handed, await next(handed), ctx))

    @property
    def has_sync(self) -> bool:
        # Overriding only ``acall`` leaves the inherited ``__call__``, a pass-through
        # that would silently skip this middleware under ``invoke``.
        cls = type(self)
        return cls.__call__ is not Middleware.__call__ or cls.acall is Middleware.acall

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


def as_middleware(
    *, priority: int = DEFAULT_PRIORITY, nodes: Sequence[str] | None = None, name: str | None = None
) -> Callable[[Callable[..., Any]], FunctionMiddleware]:
    """Decorate ``fn(view, config, ctx, next)`` to make it a middleware."""

    def wrap(fn: Callable[..., Any]) -> FunctionMiddleware:
        return FunctionMiddleware(fn, priority=priority, nodes=nodes, name=name)

    return wrap


@dataclasses.dataclass(frozen=True)
class Layer:
    middleware: Middleware
    priority: int
    index: int
    nodes: frozenset[str] | None
    sync: bool = True
    """Whether the middleware has a sync form (fixed at registration)."""


def run_layers(
    layers: Sequence[Layer], ctx: CallContext, view: View, terminal: Callable[[View], Any]
) -> Any:
    """Run ``layers`` in order around ``terminal`` (the node, or a model call).

    The one place the ``next`` contract is enforced: each layer gets a ``next``
    that may be called once; an error a layer raises is wrapped with its name;
    the terminal's own errors pass through untouched.
    """
    config = ctx.config
    _refuse_async_only(layers, ctx)

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
            return _guard(ctx, mw, lambda: mw(_as_view(v), config, ctx, step(i + 1)))

        return call

    result = step(0)(view)
    ctx.finish()
    return result


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

    result = await step(0)(view)
    await ctx.afinish()
    return result


def _refuse_async_only(layers: Sequence[Layer], ctx: CallContext) -> None:
    # Before any layer runs: a chain stopped halfway would leave its events behind.
    for layer in layers:
        if not layer.sync:
            raise ContextRunError(
                f"middleware {layer.middleware.name!r} on node {ctx.node!r} is async-only "
                "(it has no sync __call__): run the graph with ainvoke/astream"
            )


def _twice(ctx: CallContext, layers: Sequence[Layer], i: int) -> NextCalledTwiceError:
    # Raised inside the caller's next(): mark it so the caller's guard lets it through as is.
    error = NextCalledTwiceError(layers[i - 1].middleware.name if i else "<pipeline>", ctx.node)
    ctx._passing.add(id(error))
    return error


def _as_view(view: Mapping[str, Any]) -> View:
    return view if isinstance(view, View) else View(view)


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
