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
"""

from __future__ import annotations

import base64
import math
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings, minilm_available
from langgraph_ctx.retrieval.text import terms

Vector = Sequence[float]


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


def default_scorer() -> Scorer:
    """all-MiniLM-L6-v2 if the ``embeddings`` extra is installed, else lexical."""
    if minilm_available():
        return EmbeddingScorer(MiniLMEmbeddings())
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
