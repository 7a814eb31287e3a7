"""The middleware contract and the one loop that runs it.

A middleware is called as ``mw(view, ctx, call_next)`` (sync), or awaited as
``mw.acall(view, ctx, call_next)`` (async); a :class:`Middleware` subclass
usually overrides the hooks ``before``/``after`` instead, written once for both.
``config`` is ``ctx.config``. :func:`run_layers` and :func:`arun_layers` are the
only places the contract is enforced:

- ``call_next(view)`` runs the rest of the call (later layers, then the node)
  on ``view``. Not calling it short-circuits the call.
- ``call_next`` may be called again only after the previous call raised: a
  retry or a fallback, as LangChain's ``wrap_model_call`` allows. A call that
  raised is rolled back first: the persistent updates and ledger events made
  inside it are dropped and ``ctx.usage`` and ``ctx.tools`` are restored, so a
  failed attempt leaves no trace, just as a failed node leaves none in the
  checkpoint. Calling it again after it returned (or while it runs) raises
  :class:`~langgraph_ctx.errors.NextCalledTwiceError`: the node would run twice
  in one step and both updates would land (two answers, every persistent
  update and event twice), which no caller wants. Not rolled back: notes in
  ``ctx.annotations``, the session's token cache and calibration, and I/O
  already done (archived messages are keyed by id, so a retry rewrites them).
- An error a middleware raises surfaces as
  :class:`~langgraph_ctx.errors.MiddlewareError` naming it; the node's own
  errors pass through untouched, through every layer.

Sync and async: a middleware with only a sync form also runs under ``ainvoke``
(in a worker thread; its ``call_next`` hops back onto the event loop); one with
only an async form is refused under ``invoke`` before any layer runs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, cast

from langgraph.errors import GraphBubbleUp

from langgraph_ctx._checks import check_int, check_str
from langgraph_ctx.errors import (
    BudgetExceededError,
    ConfigurationError,
    ContextRunError,
    MiddlewareError,
    NextCalledTwiceError,
)
from langgraph_ctx.pipeline.context import CallContext, View, _current
from langgraph_ctx.pipeline.hooks import Step, adrive, drive
from langgraph_ctx.pipeline.layer import (
    AsyncCallNext,
    AsyncHandler,
    CallNext,
    Handler,
    Layer,
)

DEFAULT_PRIORITY = 100


class Middleware:
    """Base class of every middleware.

    Most override the hooks, each written once for sync and async runs:

    - :meth:`before` gets the view and returns the view the rest of the call
      sees (the same one to pass it through);
    - :meth:`after` gets the result the rest of the call returned and returns
      the result to hand back.

    A hook that needs I/O yields an :class:`~langgraph_ctx.pipeline.hooks.IOCall`
    (see :mod:`~langgraph_ctx.pipeline.hooks`). To short-circuit, retry, or
    otherwise control the call itself, override ``__call__(view, ctx, call_next)``
    (sync) and/or ``acall`` (async) instead. A middleware that only overrides
    ``__call__`` still works under ``ainvoke`` (in a worker thread); one that
    only overrides ``acall`` is async-only.
    """

    name: str = ""
    priority: int = DEFAULT_PRIORITY
    default_nodes: tuple[str, ...] | None = None
    """Nodes this built-in applies to unless told otherwise. Unlike an explicit
    filter, a default may name nodes the graph lacks, as long as one exists."""
    requires: tuple[type[Middleware] | str, ...] = ()
    """Middleware that must run before this one on each of its nodes (classes, or
    names): checked at ``attach()``."""
    reads: tuple[str, ...] = ()
    """State keys it needs the graph's state to have: checked at ``attach()``."""
    writes: tuple[str, ...] = ()
    """State keys it persists to (``context_ledger`` if it records events): the
    graph's state must have them, checked at ``attach()``."""

    def __init__(
        self,
        *,
        priority: int | None = None,
        nodes: Sequence[str] | None = None,
        name: str | None = None,
    ) -> None:
        if priority is not None:
            self.priority = check_int("priority", priority)
        if nodes is not None and (
            isinstance(nodes, str) or not all(isinstance(n, str) and n for n in nodes)
        ):
            # A bare string would be taken letter by letter as node names.
            raise ConfigurationError("nodes", f"expected a list of node names, got {nodes!r}")
        if nodes is not None and not nodes:
            raise ConfigurationError(
                "nodes", "an empty list would run it on no node; pass None for its default nodes"
            )
        self.nodes: tuple[str, ...] | None = tuple(nodes) if nodes is not None else None
        if name is not None:
            self.name = check_str("name", name)
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

    def __call__(self, view: View, ctx: CallContext, call_next: CallNext) -> Any:
        handed = drive(self.before(view, ctx))
        return drive(self.after(handed, call_next(handed), ctx))

    async def acall(self, view: View, ctx: CallContext, call_next: AsyncCallNext) -> Any:
        handed = await adrive(self.before(view, ctx))
        return await adrive(self.after(handed, await call_next(handed), ctx))

    def handlers(self) -> tuple[Handler | None, AsyncHandler | None]:
        """Its sync and async forms (``None`` where it has none): ``__call__`` and
        ``acall`` where a subclass overrides them, the hooks in both otherwise."""
        cls = type(self)
        own_sync = cls.__call__ is not Middleware.__call__
        own_async = cls.acall is not Middleware.acall
        # Overriding only one leaves the other running the (pass-through) hooks,
        # which would skip the override: that form does not exist.
        return (
            self.__call__ if own_sync or not own_async else None,
            self.acall if own_async or not own_sync else None,
        )


class FunctionMiddleware(Middleware):
    """A plain function ``fn(view, ctx, call_next)``, sync or async, as middleware.

    ``requires``, ``reads`` and ``writes`` declare what it needs, as for a
    :class:`Middleware` subclass.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        priority: int | None = None,
        nodes: Sequence[str] | None = None,
        name: str | None = None,
        requires: Sequence[type[Middleware] | str] = (),
        reads: Sequence[str] = (),
        writes: Sequence[str] = (),
    ) -> None:
        if not callable(fn):
            raise ConfigurationError(
                "as_middleware", f"expected a function (view, ctx, call_next), got {fn!r:.80}"
            )
        super().__init__(priority=priority, nodes=nodes, name=name or getattr(fn, "__name__", ""))
        self.fn = fn
        self.requires, self.reads, self.writes = tuple(requires), tuple(reads), tuple(writes)

    def handlers(self) -> tuple[Handler | None, AsyncHandler | None]:
        if inspect.iscoroutinefunction(self.fn):
            return None, self.fn
        return self.fn, None


def as_middleware(
    *,
    priority: int = DEFAULT_PRIORITY,
    nodes: Sequence[str] | None = None,
    name: str | None = None,
    requires: Sequence[type[Middleware] | str] = (),
    reads: Sequence[str] = (),
    writes: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], FunctionMiddleware]:
    """Decorate ``fn(view, ctx, call_next)`` to make it a middleware."""

    def wrap(fn: Callable[..., Any]) -> FunctionMiddleware:
        return FunctionMiddleware(
            fn,
            priority=priority,
            nodes=nodes,
            name=name,
            requires=requires,
            reads=reads,
            writes=writes,
        )

    return wrap


def run_layers(
    layers: Sequence[Layer], ctx: CallContext, view: View, terminal: Callable[[View], Any]
) -> Any:
    """Run ``layers`` in order around ``terminal`` (the node, or a model call); once
    the call returned, publish its events (:meth:`CallContext.finish`)."""
    _refuse_async_only(layers, ctx)

    def step(i: int) -> CallNext:
        attempt = _Attempt(ctx, layers, i)

        def call_next(v: View) -> Any:
            with attempt:
                if i == len(layers):
                    return terminal(ctx.final_view(_as_view(v)))
                return cast(Handler, layers[i].call)(_as_view(v), ctx, step(i + 1))

        return call_next

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
    loop = asyncio.get_running_loop()

    def step(i: int) -> AsyncCallNext:
        attempt = _Attempt(ctx, layers, i)

        async def call_next(v: View) -> Any:
            with attempt:
                if i == len(layers):
                    return await terminal(ctx.final_view(_as_view(v)))
                return await _async_form(layers[i], loop)(_as_view(v), ctx, step(i + 1))

        return call_next

    result = await step(0)(view)
    await ctx.afinish()
    return result


def _async_form(layer: Layer, loop: asyncio.AbstractEventLoop) -> AsyncHandler:
    if layer.acall is not None:
        return layer.acall
    handler = cast(Handler, layer.call)

    def in_thread(view: View, ctx: CallContext, call_next: AsyncCallNext) -> Awaitable[Any]:
        def sync_next(inner: View) -> Any:
            # In the worker thread: hand the rest of the chain back to the event loop.
            later = cast(Coroutine[Any, Any, Any], call_next(inner))
            return asyncio.run_coroutine_threadsafe(later, loop).result()

        return asyncio.to_thread(handler, view, ctx, sync_next)

    return in_thread


class _Attempt:
    """One layer's ``call_next`` (layer ``i`` runs inside it; ``i == len(layers)``:
    the terminal): when it may run, what a failed run undoes, whose error it is."""

    __slots__ = ("ctx", "i", "layers", "mark", "state", "token")

    def __init__(self, ctx: CallContext, layers: Sequence[Layer], i: int) -> None:
        self.ctx, self.layers, self.i = ctx, layers, i
        self.state = "idle"

    def __enter__(self) -> None:
        if self.state in ("running", "returned"):
            caller = self.layers[self.i - 1].middleware.name if self.i else "<pipeline>"
            error = NextCalledTwiceError(caller, self.ctx.node, running=self.state == "running")
            self.ctx._passing.add(id(error))  # the caller's mistake: not wrapped as its failure
            raise error
        self.state = "running"
        self.mark = self.ctx._mark()
        if self.i == len(self.layers):
            self.token = _current.set(self.ctx)

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        terminal = self.i == len(self.layers)
        if terminal:
            _current.reset(self.token)
        if exc is None:
            self.state = "returned"
            return
        self.state = "failed"
        self.ctx._rollback(self.mark)
        if terminal:
            self.ctx._passing.add(id(exc))  # the node's own error: no layer re-wraps it
            return
        wrapped = _wrap_error(self.ctx, self.layers[self.i].middleware, exc)
        if wrapped is not None:
            raise wrapped from exc


def _refuse_async_only(layers: Sequence[Layer], ctx: CallContext) -> None:
    # Before any layer runs: a chain stopped halfway would have run some of them.
    for layer in layers:
        if layer.call is None:
            raise ContextRunError(
                f"middleware {layer.middleware.name!r} on node {ctx.node!r} is async-only "
                "(it has no sync form): run the graph with ainvoke/astream"
            )


def _as_view(view: Mapping[str, Any]) -> View:
    return view if isinstance(view, View) else View(view)


def _wrap_error(ctx: CallContext, mw: Middleware, exc: BaseException) -> BaseException | None:
    if id(exc) in ctx._passing or isinstance(exc, (GraphBubbleUp, asyncio.CancelledError)):
        return None
    if not isinstance(exc, Exception) or isinstance(exc, BudgetExceededError):
        # A prompt over its limit is the run's verdict, not a middleware's bug:
        # callers catch it by name, with its numbers.
        return None
    wrapped = MiddlewareError(mw.name, ctx.node, exc)
    ctx._passing.add(id(wrapped))
    return wrapped
