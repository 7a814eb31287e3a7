"""The middleware contract, and its wiring onto the nodes of a graph.

Short modules, read in this order:

- ``context``: what one node call carries (:class:`View`, :class:`PersistentUpdate`,
  :class:`CallContext`);
- ``chain``: the :class:`Middleware` contract and the one loop that runs it;
- ``hooks``: how a hook does I/O once for sync and async (:class:`IOCall`);
- ``layer``: a registered middleware and its handlers, fixed at registration;
- ``wiring``: :class:`Pipeline`, which orders middleware and wraps graph nodes.
"""

from langgraph_ctx.pipeline.chain import (
    DEFAULT_PRIORITY,
    FunctionMiddleware,
    Middleware,
    arun_layers,
    as_middleware,
    run_layers,
)
from langgraph_ctx.pipeline.context import (
    CallContext,
    EventSink,
    PersistentUpdate,
    SessionTokens,
    View,
    current_context,
    graph_namespace,
)
from langgraph_ctx.pipeline.hooks import Hook, IOCall, Step
from langgraph_ctx.pipeline.layer import AsyncCallNext, CallNext, Layer
from langgraph_ctx.pipeline.wiring import Pipeline

__all__ = [
    "DEFAULT_PRIORITY",
    "AsyncCallNext",
    "CallContext",
    "CallNext",
    "EventSink",
    "FunctionMiddleware",
    "Hook",
    "IOCall",
    "Layer",
    "Middleware",
    "PersistentUpdate",
    "Pipeline",
    "SessionTokens",
    "Step",
    "View",
    "arun_layers",
    "as_middleware",
    "current_context",
    "graph_namespace",
    "run_layers",
]
