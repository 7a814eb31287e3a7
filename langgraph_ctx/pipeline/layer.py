"""A layer: one registered middleware, its place in the order and its handlers.

Everything about how a middleware is called is decided here, once, when it is
registered: its sync and async handlers (``None`` where it has no such form),
in the form ``(view, ctx, call_next)``, so the runners never look at signatures.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.pipeline.context import CallContext, View

if TYPE_CHECKING:
    from langgraph_ctx.pipeline.chain import Middleware


class CallNext(Protocol):
    """Runs the rest of the call (later layers, then the node) on ``view``."""

    def __call__(self, view: View, /) -> Any: ...


class AsyncCallNext(Protocol):
    """Async :class:`CallNext`."""

    def __call__(self, view: View, /) -> Awaitable[Any]: ...


Handler = Callable[[View, CallContext, CallNext], Any]
AsyncHandler = Callable[[View, CallContext, AsyncCallNext], Awaitable[Any]]


@dataclasses.dataclass(frozen=True)
class Layer:
    """A middleware as registered. Its node filter is resolved against the graph
    when the pipeline is attached; everything else is fixed at registration."""

    middleware: Middleware
    priority: int
    index: int
    """Registration order: breaks priority ties."""
    nodes: frozenset[str] | None
    """The nodes it runs on; ``None``: every node."""
    call: Handler | None = None
    """Its sync form; ``None``: async-only."""
    acall: AsyncHandler | None = None
    """Its async form; ``None``: run the sync form in a worker thread."""
    asked: tuple[str, ...] | None = None
    """The nodes it was registered for (``use(nodes=...)``, else its own ``nodes``);
    ``None``: its default nodes, or every node."""


def register(mw: Middleware, index: int) -> Layer:
    """The layer of ``mw``, registered ``index``-th: its handlers, resolved once.

    Raises :class:`~langgraph_ctx.errors.ConfigurationError` for a handler that
    does not take ``(view, ctx, call_next)``.
    """
    sync, async_ = mw.handlers()
    arities = {_positional(h) for h in (sync, async_) if h is not None}
    wrong = sorted(a for a in arities if a not in (None, 3))
    if wrong:
        raise ConfigurationError(
            mw.name,
            f"a middleware is called as (view, ctx, call_next), but it takes {wrong[0]} "
            "positional arguments",
        )
    return Layer(mw, mw.priority, index, None, sync, async_)


def _positional(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fn`` takes; ``None`` if any number, or unknown."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(kind in positional for kind in kinds)
