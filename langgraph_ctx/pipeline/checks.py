"""What each node's chain needs, checked when the pipeline is attached.

A middleware declares what it needs (:attr:`Middleware.requires`, ``reads``,
``writes``); a missing piece is a :class:`~langgraph_ctx.errors.ConfigurationError`
naming it and the fix, raised before the graph is compiled instead of on the
first call, and before anything is wrapped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.pipeline.layer import Layer
from langgraph_ctx.state import declaration

if TYPE_CHECKING:
    from langgraph_ctx.pipeline.chain import Middleware

ADD_TO_STATE = (
    "build the graph on ContextState (or a schema extending it, and the strategy's "
    "state_schema if it has one), or add to your state"
)
"""The fix for a state key a :class:`~langgraph_ctx.Pipeline`'s graph lacks."""


def check_node(node: str, layers: Sequence[Layer], channels: frozenset[str], fix: str) -> None:
    """Check what each layer on ``node`` needs: the middleware before it, the state
    keys it reads and writes (``channels``: the graph's). ``fix``: how to add a key."""
    for position, layer in enumerate(layers):
        mw = layer.middleware
        for need in mw.requires:
            _check_before(node, layers, position, need)
        missing = [k for k in dict.fromkeys((*mw.reads, *mw.writes)) if k not in channels]
        if missing:
            raise ConfigurationError(
                mw.name,
                f"it reads or writes the state key(s) {missing} on node {node!r}, which the "
                f"graph's state lacks; {fix}: "
                + "; ".join(declaration(k, *_schemas(mw)) for k in missing),
            )


def _check_before(
    node: str, layers: Sequence[Layer], position: int, need: type[Middleware] | str
) -> None:
    layer = layers[position]
    found = [i for i, other in enumerate(layers) if _is(other.middleware, need)]
    if any(i < position for i in found):
        return
    name = layer.middleware.name
    label = need if isinstance(need, str) else need.__name__
    if not found:
        add = f"the middleware named {label!r}" if isinstance(need, str) else f"{label}()"
        raise ConfigurationError(
            f"{name}.requires",
            f"{name} needs {label} before it on node {node!r}, which has none: add {add} to "
            f"the pipeline, on a node filter that includes {node!r}",
        )
    other = layers[found[0]]
    raise ConfigurationError(
        f"{name}.requires",
        f"{name} (priority {layer.priority}) needs {label} to run before it on node {node!r}, "
        f"but {other.middleware.name} has priority {other.priority} (ties run in registration "
        f"order): give it a lower priority number than {layer.priority}",
    )


def _is(mw: Middleware, need: type[Middleware] | str) -> bool:
    return mw.name == need if isinstance(need, str) else isinstance(mw, need)


def _schemas(mw: Middleware) -> tuple[type[Any], ...]:
    """The state keys ``mw`` declares of its own (a strategy's ``state_schema``)."""
    schema = getattr(mw, "state_schema", None)
    return (schema,) if isinstance(schema, type) else ()
