"""The in-process memory index beside a store, shared by every bank on that store."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from langgraph.store.base import BaseStore, Item

from langgraph_ctx.retrieval.index import Doc, LexicalIndex

__all__ = ["ALL", "SharedIndex", "docs_of", "shared_index"]

ALL = 2**31 - 1
""""Every item", as a store search's limit."""


class SharedIndex:
    """The in-process index beside one store, shared by every bank on it.

    Memories a store held before this process first touched their scope are
    read once, before that scope's first search or write, so the index holds
    them all; from then on every bank write goes to both. A write made to the
    store directly, not through a bank, is not indexed.
    """

    def __init__(self, store: BaseStore) -> None:
        self.index = LexicalIndex()
        self._lock = threading.Lock()
        self._loaded: set[tuple[str, ...]] = set()
        self._store = weakref.ref(store)  # the registry must not keep the store alive

    def load(self, ns: tuple[str, ...]) -> None:
        if ns in self._loaded:
            return
        with self._lock:  # once per scope, even when two threads get here together
            store = self._store()
            if ns in self._loaded or store is None:
                return
            self.index.add(ns, docs_of(ns, store.search(ns, limit=ALL)))
            self._loaded.add(ns)


_SHARED: weakref.WeakKeyDictionary[BaseStore, SharedIndex] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared_index(store: BaseStore) -> SharedIndex:
    with _SHARED_LOCK:
        try:
            return _SHARED[store]
        except KeyError:
            shared = _SHARED[store] = SharedIndex(store)
            return shared
        except TypeError:  # an unhashable store: an index for this bank alone
            return SharedIndex(store)


def docs_of(ns: tuple[str, ...], items: Iterable[Item]) -> list[Doc]:
    # A store's search also returns nested namespaces' items: only this scope's are indexed.
    return [
        Doc(item.key, str(item.value.get("text", "")), str(item.value.get("level", "")))
        for item in items
        if tuple(item.namespace) == ns
    ]
