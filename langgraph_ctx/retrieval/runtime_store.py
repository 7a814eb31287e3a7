"""The store of the running graph, for a :class:`~langgraph_ctx.MemoryBank` built before it runs.

LangGraph Server (``langgraph dev``, LangGraph Platform) gives a graph its own
store and checkpointer when it runs the graph: the graph module is imported with
neither, so a bank built at import time has no store to hold. ``RuntimeStore``
is that store's stand-in: each operation looks up the store of the run it is
called from (:func:`langgraph.config.get_store`, the one the server provides or
the one given to ``compile(store=...)``) and delegates to it::

    bank = MemoryBank(RuntimeStore(), scope_keys=("user_id",))
    graph = build_context_agent(model, tools, memory=bank).compile()  # the server adds the rest

Outside a run (a script seeding memories, a test) there is no such store: give
``fallback=`` to use one there, else the operation raises a
:class:`~langgraph_ctx.errors.ContextRunError` saying so. Ranking is lexical
(the bank's own index): the runtime store's embedding index, if it has one, is
not known when the bank is built.
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.config import get_store
from langgraph.store.base import BaseStore, Op, Result

from langgraph_ctx._checks import check_instance
from langgraph_ctx.errors import ContextRunError


class RuntimeStore(BaseStore):
    """Delegates every operation to the store of the graph run it is called from."""

    def __init__(self, fallback: BaseStore | None = None) -> None:
        """
        Args:
            fallback: the store used outside a graph run (or in a run given none).
        """
        if fallback is not None:
            check_instance("RuntimeStore.fallback", fallback, BaseStore, "a LangGraph store")
        self.fallback = fallback

    def current(self) -> BaseStore:
        """The store of the current run, else ``fallback``; raises if neither exists."""
        try:
            store = get_store()
        except RuntimeError:  # not inside a runnable context at all
            store = None
        if store is None:
            store = self.fallback
        if store is None:
            raise ContextRunError(
                "RuntimeStore was used outside a graph run that has a store: run it in "
                "LangGraph Server (or compile(store=...)), or give RuntimeStore(fallback=...)"
            )
        return store

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.current().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self.current().abatch(ops)

    def __repr__(self) -> str:
        return f"RuntimeStore(fallback={self.fallback!r})"
