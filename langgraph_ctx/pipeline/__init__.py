"""The middleware contract, and its wiring onto the nodes of a graph.

Short modules, read in this order:

- ``context``: what one node call carries (:class:`View`, :class:`PersistentUpdate`,
  :class:`CallContext`);
- ``chain``: the :class:`Middleware` contract and the one loop that runs it;
- ``hooks``: how a hook does I/O once for sync and async (:class:`IOCall`);
- ``layer``: a registered middleware and its handlers, fixed at registration;
- ``wiring``: :class:`Pipeline`, which orders middleware and wraps graph nodes.
"""

from langgraph_ctx.pipeline.chain import Middleware
from langgraph_ctx.pipeline.context import CallContext, EventSink, View
from langgraph_ctx.pipeline.hooks import Hook, IOCall
from langgraph_ctx.pipeline.layer import AsyncCallNext, CallNext

__all__ = [
    "AsyncCallNext",
    "CallContext",
    "CallNext",
    "EventSink",
    "Hook",
    "IOCall",
    "Middleware",
    "View",
]
