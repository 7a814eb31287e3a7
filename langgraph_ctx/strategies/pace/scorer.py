"""PACE's attention scorer: how relevant each past step is to the next one (section 3.3).

Each step's key vector is computed once, when the step is complete, and cached
(and checkpointed, see :func:`pack`); per call only the query is encoded, and the
scores are one matrix-vector product over the cached keys:

    s_i = cos(q, k_i);  w = softmax(s / tau);  relative weight = M * w_i

A scorer is anything with ``encode``/``aencode`` (:class:`Scorer`):
:class:`EmbeddingScorer` wraps any LangChain ``Embeddings`` (the default is
all-MiniLM-L6-v2 from the ``embeddings`` extra); :class:`LexicalScorer` needs no
model (hashed term vectors). :func:`default_scorer` picks the first that is
installed; its ``name`` goes into the ledger.

An embedding model can take longer to load than a call may wait for its scorer
(on a loaded machine MiniLM's first encode can outlast PACE's
``scorer_timeout``, and then every early call weighs every step alike).
:class:`WarmingScorer` loads it in a background thread from construction on and
scores lexically until it is ready, saying why (:attr:`WarmingScorer.fallback`).
"""

from __future__ import annotations

import base64
import logging
import math
import threading
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings, minilm_available
from langgraph_ctx.retrieval.text import terms

Vector = Sequence[float]

log = logging.getLogger(__name__)


class Scorer(Protocol):
    """Encodes step texts (keys) and the query into vectors of one space."""

    name: str
    """Says which scorer ran (the ledger's ``scorer``)."""

    def encode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]: ...

    async def aencode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]: ...


class EmbeddingScorer:
    """Any LangChain ``Embeddings``: documents for keys, the query as a query."""

    def __init__(self, embeddings: Embeddings, *, name: str | None = None) -> None:
        self.embeddings = embeddings
        self.name = name or getattr(embeddings, "name", None) or type(embeddings).__name__

    def encode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]:
        found: list[Vector] = [*self.embeddings.embed_documents(list(keys))] if keys else []
        return found, self.embeddings.embed_query(query)

    async def aencode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]:
        found: list[Vector] = [*await self.embeddings.aembed_documents(list(keys))] if keys else []
        return found, await self.embeddings.aembed_query(query)


class LexicalScorer:
    """Hashed bag-of-terms vectors (stop words out, sublinear term frequency): cosine
    then measures shared vocabulary. Deterministic across processes (CRC32, not
    Python's salted ``hash``), so checkpointed keys stay valid on resume."""

    name = "lexical"

    def __init__(self, dims: int = 512) -> None:
        self.dims = dims

    def vector(self, text: str) -> list[float]:
        out = [0.0] * self.dims
        for term, tf in Counter(terms(text)).items():
            out[zlib.crc32(term.encode()) % self.dims] += 1.0 + math.log(tf)
        return out

    def encode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]:
        return [self.vector(k) for k in keys], self.vector(query)

    async def aencode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]:
        return self.encode(keys, query)


class WarmingScorer:
    """An embedding scorer that never makes a call wait for its model to load.

    The model is loaded (one encode) in a daemon thread from construction on;
    until that is done, or for good if it failed, the lexical scorer scores and
    :attr:`fallback` says why. ``name`` is the scorer that made the last
    vectors, so that the keys checkpointed with it say truly what made them (a
    key from the other one is recomputed on resume)."""

    def __init__(self, embeddings: Embeddings, *, fallback: Scorer | None = None) -> None:
        self.model = EmbeddingScorer(embeddings)
        self.lexical: Scorer = fallback or LexicalScorer()
        self.name = self.lexical.name
        self.error: str | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._load, name="lgctx-pace-scorer", daemon=True).start()

    def _load(self) -> None:
        try:
            self.model.embeddings.embed_query("warm up")
        except Exception as exc:  # any failure: lexical for good, said once
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("PACE scores lexically: %s failed to load (%s)", self.model.name, exc)
        finally:
            self._ready.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the model has loaded or failed; whether it has."""
        return self._ready.wait(timeout)

    @property
    def fallback(self) -> str | None:
        """Why the lexical scorer scores now (``None``: the model does)."""
        if not self._ready.is_set():
            return f"{self.model.name} still loading"
        return None if self.error is None else f"{self.model.name} failed to load: {self.error}"

    def _active(self) -> Scorer:
        scorer = self.lexical if self.fallback is not None else self.model
        self.name = scorer.name
        return scorer

    def encode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]:
        return self._active().encode(keys, query)

    async def aencode(self, keys: Sequence[str], query: str) -> tuple[list[Vector], Vector]:
        return await self._active().aencode(keys, query)


def default_scorer() -> Scorer:
    """all-MiniLM-L6-v2 if the ``embeddings`` extra is installed (loaded in the
    background: lexical until then, see :class:`WarmingScorer`), else lexical."""
    if minilm_available():
        return WarmingScorer(MiniLMEmbeddings())
    return LexicalScorer()


def unit(vector: Vector) -> np.ndarray:
    """``vector`` as float32 of length 1 (a zero vector stays zero): dot = cosine."""
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def relative_weights(scores: np.ndarray, temperature: float) -> np.ndarray:
    """``M * softmax(scores / temperature)``: above 1 is above-average relevance."""
    if scores.size == 0:
        return scores.astype(np.float64)
    z = scores.astype(np.float64) / temperature
    e = np.exp(z - z.max())  # shifted: the same softmax, no overflow
    out: np.ndarray = scores.size * e / e.sum()
    return out


def pack(vector: np.ndarray) -> str:
    """A unit key as checkpointed: float16, base64 (2 bytes a dimension; cosines keep
    about three decimals)."""
    return base64.b64encode(vector.astype(np.float16).tobytes()).decode("ascii")


def unpack(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float16).astype(np.float32)
