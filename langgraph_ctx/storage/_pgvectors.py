"""The PostgreSQL archive's vectors (migration 0007): written in the background, searched by cosine.

With ``embeddings=``, :class:`~langgraph_ctx.storage.postgres.PostgresArchive` hands
each ``put``'s new passages to a :class:`PgVectors`, whose one daemon thread embeds
them and writes a row each to ``lgctx_archive_vectors``: the caller never waits for
the model, and a passage is searchable by its words from the moment ``put`` returns
(by meaning once its vector is written). :meth:`PgVectors.backfill` embeds the
passages that have none (rows archived before embeddings were on, or whose batch a
crash or a model error lost).

The nearest passages are found by pgvector's cosine distance on an HNSW index of the
cast ``embedding::vector(<dims>)``, one partial index per dimension, created when a
model of that dimension first writes. A search is :func:`nearest`, a step of the
sans-I/O searches of :mod:`~langgraph_ctx.storage._pgsearch`.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import Owned
from langgraph_ctx.storage._passages import PassageRow

log = logging.getLogger(__name__)

_INSERT = """
INSERT INTO lgctx_archive_vectors
    (thread_id, namespace, model, message_id, ordinal, dims, embedding)
SELECT u.thread_id, u.namespace, %(model)s, u.message_id, u.ordinal, %(dims)s, u.v::real[]
FROM unnest(%(threads)s::text[], %(namespaces)s::text[], %(ids)s::text[],
            %(ordinals)s::integer[], %(vectors)s::text[])
    AS u(thread_id, namespace, message_id, ordinal, v)
ON CONFLICT DO NOTHING
"""
# The passages without a vector of this model, a batch at a time (the primary keys
# of both tables lead with thread and namespace: an anti-join by index).
_MISSING = """
SELECT p.thread_id, p.namespace, p.message_id, p.ordinal, p.body
FROM lgctx_archive_passages AS p
WHERE NOT EXISTS (
    SELECT 1 FROM lgctx_archive_vectors AS v
    WHERE v.thread_id = p.thread_id AND v.namespace = p.namespace AND v.model = %(model)s
      AND v.message_id = p.message_id AND v.ordinal = p.ordinal
)
LIMIT %(batch)s
"""
# lgctx_nearest_passages (migration 0007) reads the HNSW index of ``dims`` for the
# thread's rows; the passages' text joins the few rows it returns.
_NEAREST = """
SELECT n.message_id, n.ordinal, n.similarity, p.body
FROM lgctx_nearest_passages(%(query)s, %(dims)s, %(thread)s, %(ns)s, %(model)s, %(n)s) AS n
JOIN lgctx_archive_passages AS p
  ON p.thread_id = %(thread)s AND p.namespace = %(ns)s
 AND p.message_id = n.message_id AND p.ordinal = n.ordinal
ORDER BY n.similarity DESC, n.message_id, n.ordinal
"""
# {dims} is an int from the model's own vector, never user text; the expression and
# predicate are the ones lgctx_nearest_passages orders and filters by.
_INDEX = """
CREATE INDEX IF NOT EXISTS lgctx_archive_vectors_hnsw_{dims} ON lgctx_archive_vectors
USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE dims = {dims}
"""
_HAS_PGVECTOR = "SELECT count(*) AS n FROM pg_extension WHERE extname = 'vector'"

Read = Callable[[str, Any], list[dict[str, Any]]]
Write = Callable[[str, Any], None]


def model_name(embeddings: Embeddings) -> str:
    """What names ``embeddings``' model in the table: its ``name``, ``model`` or
    ``model_name`` if it has one, else its class (another model writes other rows)."""
    for attr in ("name", "model", "model_name"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(embeddings).__name__


def literal(vector: Sequence[float]) -> str:
    """A vector as pgvector's and PostgreSQL's array text both read it, after a cast."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectors:
    """The vectors of one archive's passages: a background writer and the search's step."""

    def __init__(self, embeddings: Embeddings, read: Read, write: Write) -> None:
        self.embeddings = embeddings
        self.model = model_name(embeddings)
        self._read, self._write = read, write
        self._queue: queue.Queue[list[PassageRow]] = queue.Queue()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._indexed: set[int] = set()
        self._checked = False
        self.failures = 0
        """Batches that failed to embed or write (logged; they stay lexical until
        :meth:`backfill`)."""

    def submit(self, rows: Sequence[PassageRow]) -> None:
        """Queue ``rows`` (new passages) to be embedded and written; returns at once."""
        if not rows:
            return
        with self._lock:
            if self._worker is None:
                # A daemon: a model that hangs must not keep the process from exiting.
                self._worker = threading.Thread(
                    target=self._run, name="lgctx-pg-embed", daemon=True
                )
                self._worker.start()
        self._queue.put(list(rows))

    def wait(self) -> None:
        """Block until every passage submitted so far is written (or failed)."""
        self._queue.join()

    def backfill(self, *, batch: int = 256) -> int:
        """Embed, in this thread, every archived passage without a vector of this model;
        the number written."""
        done = 0
        while True:
            rows = self._read(_MISSING, {"model": self.model, "batch": batch})
            if not rows:
                return done
            self.add(
                [
                    (r["thread_id"], r["namespace"], r["message_id"], r["ordinal"], r["body"])
                    for r in rows
                ]
            )
            done += len(rows)

    def add(self, rows: Sequence[PassageRow]) -> None:
        """Embed ``rows`` now and write their vectors (the HNSW index made if need be)."""
        vectors = self.embeddings.embed_documents([r[4] for r in rows])
        dims = len(vectors[0])
        self.ready(dims)
        self._write(
            _INSERT,
            {
                "model": self.model,
                "dims": dims,
                "threads": [r[0] for r in rows],
                "namespaces": [r[1] for r in rows],
                "ids": [r[2] for r in rows],
                "ordinals": [r[3] for r in rows],
                "vectors": ["{" + literal(v)[1:-1] + "}" for v in vectors],
            },
        )

    def ready(self, dims: int | None = None) -> None:
        """Refuse a database without pgvector (once), and make ``dims``' index."""
        if not self._checked:
            if not int(self._read(_HAS_PGVECTOR, {})[0]["n"]):
                raise ConfigurationError(
                    "PostgresArchive.embeddings",
                    "hybrid search needs the pgvector extension in this database: "
                    "run CREATE EXTENSION vector as its owner (pgvector must be installed "
                    "on the server), or pass no embeddings for lexical search alone",
                )
            self._checked = True
        if dims is not None and dims not in self._indexed:
            self._write(_INDEX.format(dims=int(dims)), {})
            self._indexed.add(dims)

    def query(self, text: str) -> list[float]:
        """The question's vector (the model runs in the caller's thread)."""
        return [float(x) for x in self.embeddings.embed_query(text)]

    def _run(self) -> None:
        while True:
            rows = self._queue.get()
            try:
                self.add(rows)
            except Exception:  # the model's or the database's: those stay lexical only
                self.failures += 1
                log.exception(
                    "embedding %d archived passages failed; they are searchable by words "
                    "only until PostgresArchive.backfill_vectors()",
                    len(rows),
                )
            finally:
                self._queue.task_done()


def nearest(
    vectors: PgVectors, vector: Sequence[float], thread: str, namespace: str, depth: int
) -> Any:
    """Steps (see :mod:`~langgraph_ctx.storage._pgsearch`): the ``depth`` owners whose
    passage is nearest ``vector`` in the thread, ``(message id, cosine, passage)``,
    best first, each by its nearest passage."""
    rows = yield (
        _NEAREST,
        {
            "query": literal(vector),
            "dims": len(vector),
            "thread": thread,
            "ns": namespace,
            "model": vectors.model,
            "n": 4 * depth,  # a few passages a message: about depth messages
        },
    )
    out: dict[str, tuple[str, float, str]] = {}
    for r in rows:
        key = str(r["message_id"])
        out.setdefault(key, (key, float(r["similarity"]), str(r["body"])))
    found: Owned = list(out.values())[:depth]
    return found
