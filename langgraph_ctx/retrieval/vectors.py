"""Search by meaning: text embeddings kept beside the lexical index, fused with it.

Lexical search finds the words a question uses, stemmed; it cannot find "Which
carrier do I like to fly with?" in "My preferred airline is Finnair", which share no
word. An embedding model (any LangChain ``Embeddings``; the ``embeddings`` extra ships
all-MiniLM-L6-v2, see :mod:`~langgraph_ctx.retrieval.embeddings`) puts both near each
other. :class:`VectorIndex` holds one vector per text, by scope, and ranks by cosine.

Embedding costs far more than indexing words (milliseconds per text on a CPU), so it
happens off the caller's path: :meth:`VectorIndex.submit` queues the texts for one
daemon thread and returns. A search meanwhile ranks the texts embedded so far, and
lexical search covers the rest; :meth:`VectorIndex.wait` blocks until the queue is
done (tests, benchmarks, shutdown).

:func:`fuse` merges a lexical and a vector ranking by reciprocal-rank fusion: a text
scores ``1 / (RRF_K + rank)`` in each list that holds it, summed. Ranks, not scores:
BM25 and cosine live on scales that cannot be added.

The search is a flat scan of the scope's vectors (one matrix product): exact, and
cheap at a session's size, but it grows with the scope, unlike the lexical index.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import Doc, Owned
from langgraph_ctx.retrieval.maxscore import check_limit

__all__ = ["FUSED_DEPTH", "RRF_K", "VectorIndex", "check_embeddings", "fuse"]

log = logging.getLogger(__name__)

RRF_K = 60
"""Reciprocal-rank fusion's constant (Cormack et al., 2009): large enough that the
first few places of either list count about alike, so one list alone cannot bury a
text the other ranks near its top."""

FUSED_DEPTH = 20
"""How many of each ranking a hybrid search fuses, at least: each list deeper than the
``limit`` asked for, so a text second in one and absent from the other's first
``limit`` can still be among the fused first."""


def check_embeddings(embeddings: object) -> Embeddings:
    """``embeddings`` if it is a LangChain ``Embeddings``, else a clear error."""
    if not isinstance(embeddings, Embeddings):
        raise ConfigurationError(
            "embeddings",
            "expected a LangChain Embeddings (for example "
            "langgraph_ctx.retrieval.embeddings.MiniLMEmbeddings()), "
            f"got {type(embeddings).__name__}",
        )
    return embeddings


class _Scope:
    def __init__(self) -> None:
        self.keys: list[str] = []
        self.owners: list[str] = []
        self.chunks: list[np.ndarray[Any, np.dtype[np.float32]]] = []
        self.matrix: np.ndarray[Any, np.dtype[np.float32]] | None = None

    def add(self, docs: Sequence[Doc], vectors: np.ndarray[Any, np.dtype[np.float32]]) -> None:
        self.keys += [d.key for d in docs]
        self.owners += [d.owner or d.key for d in docs]
        self.chunks.append(vectors)
        self.matrix = None  # stacked again by the next search

    def stacked(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        if self.matrix is None:
            self.matrix = np.concatenate(self.chunks) if len(self.chunks) > 1 else self.chunks[0]
            self.chunks = [self.matrix]
        return self.matrix


class VectorIndex:
    """Unit-length embeddings of texts by scope, filled by a background thread.

    A scope's texts are only ever ranked against that scope's, as in
    :class:`~langgraph_ctx.retrieval.index.LexicalIndex`. A key is added once: the
    archive never rewrites a message, so a key seen again is skipped.
    """

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = check_embeddings(embeddings)
        self._lock = threading.Lock()
        self._scopes: dict[Hashable, _Scope] = {}
        self._seen: set[tuple[Hashable, str]] = set()
        self._queue: queue.Queue[tuple[Hashable, list[Doc]]] = queue.Queue()
        self._worker: threading.Thread | None = None
        self.failures = 0
        """Batches the model failed to embed (logged; their texts stay lexical only)."""

    def submit(self, scope: Hashable, docs: Sequence[Doc]) -> None:
        """Queue ``docs`` to be embedded under ``scope``; returns at once."""
        if not docs:
            return
        with self._lock:
            if self._worker is None:
                # A daemon: a model that hangs must not keep the process from exiting.
                self._worker = threading.Thread(target=self._run, name="lgctx-embed", daemon=True)
                self._worker.start()
        self._queue.put((scope, list(docs)))

    def wait(self) -> None:
        """Block until every text submitted so far is embedded (or failed)."""
        self._queue.join()

    def add(self, scope: Hashable, docs: Sequence[Doc]) -> None:
        """Embed ``docs`` now, in this thread, and index them under ``scope``."""
        with self._lock:
            new = [d for d in docs if (scope, d.key) not in self._seen]
        if not new:
            return
        vectors = _unit(self.embeddings.embed_documents([d.text for d in new]))
        with self._lock:
            fresh = [i for i, d in enumerate(new) if (scope, d.key) not in self._seen]
            self._seen.update((scope, new[i].key) for i in fresh)
            if fresh:
                self._scopes.setdefault(scope, _Scope()).add(
                    [new[i] for i in fresh], vectors[fresh]
                )

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)

    def search_owners(self, scope: Hashable, query: str, *, limit: int = 10) -> Owned:
        """The ``limit`` best owners of ``scope`` by cosine to ``query``, each by its
        closest text: ``(owner, cosine, key)``, best first."""
        check_limit(limit)
        with self._lock:
            found = self._scopes.get(scope)
            if found is None:
                return []
            matrix, keys, owners = found.stacked(), found.keys, found.owners
        # The model call runs outside the lock: the worker may add meanwhile.
        query_vector = _unit([self.embeddings.embed_query(query)])[0]
        sims = matrix @ query_vector
        out: dict[str, tuple[str, float, str]] = {}
        take = min(len(sims), 4 * limit)
        while True:  # a few times limit texts usually name limit owners
            best = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else sims.argsort()
            for i in sorted(best.tolist(), key=lambda j: -sims[j]):
                out.setdefault(owners[i], (owners[i], float(sims[i]), keys[i]))
                if len(out) == limit:
                    return list(out.values())
            if take >= len(sims):
                return list(out.values())
            out.clear()
            take = min(len(sims), take * 4)

    def _run(self) -> None:
        while True:
            scope, docs = self._queue.get()
            try:
                self.add(scope, docs)
            except Exception:  # the model's error: those texts stay lexical only
                self.failures += 1
                log.exception(
                    "embedding %d texts failed; they are searchable by words only", len(docs)
                )
            finally:
                self._queue.task_done()


def _unit(vectors: Sequence[Sequence[float]]) -> np.ndarray[Any, np.dtype[np.float32]]:
    # Any Embeddings: not every model returns unit vectors, and cosine needs them.
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return (array / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def fuse(*rankings: Owned, limit: int) -> Owned:
    """Reciprocal-rank fusion of ``(owner, score, key)`` rankings, best first: each
    owner scores the sum of ``1 / (RRF_K + rank)`` over the lists that hold it, and keeps
    the key of the list that ranks it highest."""
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, str]] = {}
    for ranking in rankings:
        for rank, (owner, _, key) in enumerate(ranking, start=1):
            scores[owner] = scores.get(owner, 0.0) + 1.0 / (RRF_K + rank)
            if owner not in best or rank < best[owner][0]:
                best[owner] = (rank, key)
    order = sorted(scores, key=lambda o: -scores[o])[:limit]
    return [(o, scores[o], best[o][1]) for o in order]
