"""Long-term memory: levels, scopes, lexical and semantic ranking, the remember tool, Postgres."""

from __future__ import annotations

import asyncio
import hashlib
import math
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore

from langgraph_ctx import ConfigurationError, ContextState
from langgraph_ctx.retrieval.memory import (
    DEFAULT_BOOSTS,
    LEVELS,
    ROOT,
    MemoryBank,
    namespace,
    remember_tool,
)
from langgraph_ctx.retrieval.text import bm25
from langgraph_ctx.testing import ScriptedChatModel


class HashEmbeddings(Embeddings):
    """Deterministic bag-of-words vectors: each word hashed into one of ``dims`` buckets.

    Texts sharing words point the same way, so cosine similarity behaves like word
    overlap: enough to test semantic search end to end with no model.
    """

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        for word in text.lower().split():
            word = word.strip(".,;:!?'\"()")
            if word:
                vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dims] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


FACTS = [
    "The customer's preferred currency for invoices is EUR.",
    "Shipping to PO boxes is not allowed for this account.",
    "The quarterly audit is due on the 15th of March.",
    "The vendor contract with Acme renews every January.",
]


def test_levels_and_default_boosts_rise() -> None:
    assert LEVELS == ("observation", "pattern", "principle", "framework")
    boosts = [DEFAULT_BOOSTS[level] for level in LEVELS]
    assert boosts == sorted(boosts) and len(set(boosts)) == 4


def test_lexical_search_ranks_the_relevant_memory_first() -> None:
    bank = MemoryBank()
    assert not bank.semantic
    for fact in FACTS:
        bank.remember(("alice",), fact)
    found = bank.search(("alice",), "Which currency should the invoice use?")
    assert found[0].text == FACTS[0]
    assert found[0].relevance == 1.0
    assert all(m.relevance > 0 for m in found)  # no word in common: not a candidate
    assert FACTS[1] not in [m.text for m in found]


def test_remember_is_idempotent_per_text_and_level() -> None:
    bank = MemoryBank()
    a = bank.remember(("alice",), FACTS[0])
    b = bank.remember(("alice",), FACTS[0])
    c = bank.remember(("alice",), FACTS[0], level="principle")
    assert a.key == b.key != c.key
    assert len(bank.store.search(namespace(ROOT, ("alice",)), limit=100)) == 2


def test_scopes_never_see_each_other_even_when_nested() -> None:
    bank = MemoryBank(scope_keys=("tenant_id", "user_id"))
    bank.remember(("acme", "alice"), "alice's secret code is 4711")
    bank.remember(("acme", "alice", "team"), "the team's secret code is 0815")
    bank.remember(("acme", "bob"), "bob's secret code is 1234")
    bank.remember(("acme.alice",), "dotted tenant secret code 9999")
    for scope, mine in [
        (("acme", "alice"), "4711"),
        (("acme", "alice", "team"), "0815"),
        (("acme", "bob"), "1234"),
        (("acme.alice",), "9999"),
    ]:
        texts = [m.text for m in bank.search(scope, "what is the secret code")]
        assert len(texts) == 1 and mine in texts[0], (scope, texts)


def test_scope_comes_from_config_keys() -> None:
    bank = MemoryBank(scope_keys=("tenant_id", "user_id"))
    config: Any = {"configurable": {"tenant_id": "acme", "user_id": 7}}
    assert bank.scope(config) == ("acme", "7")
    assert bank.scope({"configurable": {"user_id": "x"}}) is None
    assert bank.scope(None) is None


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"boosts": {"observation": 2.0}}, "MemoryBank.boosts"),
        ({"boosts": {"pattern": 0.0}}, "MemoryBank.boosts"),
        ({"boosts": {"memo": 1.0}}, "MemoryBank.boosts"),
        ({"scope_keys": ()}, "MemoryBank.scope_keys"),
        ({"scope_keys": "user_id"}, "MemoryBank.scope_keys"),
        ({"candidates": 0}, "MemoryBank.candidates"),
    ],
)
def test_bad_settings_fail_at_construction(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        MemoryBank(**options)
    assert info.value.field == field


def test_bad_writes_are_refused() -> None:
    bank = MemoryBank()
    with pytest.raises(ConfigurationError, match="level"):
        bank.remember(("alice",), "x", level="insight")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="scope"):
        bank.remember((), "x")
    with pytest.raises(ConfigurationError, match="text"):
        bank.remember(("alice",), "   ")


def test_session_summaries_are_per_task_and_scope() -> None:
    bank = MemoryBank()
    bank.finish_session(("alice",), "audit", "first summary", thread_id="t1")
    bank.finish_session(("alice",), "audit", "second summary", thread_id="t2")
    summary = bank.session_summary(("alice",), "audit")
    assert summary is not None and summary.text == "second summary" and summary.thread_id == "t2"
    assert bank.session_summary(("alice",), "other task") is None
    assert bank.session_summary(("bob",), "audit") is None
    # Session summaries are not memories: they do not show up in search.
    assert bank.search(("alice",), "second summary") == []


def test_bm25_prefers_rare_terms_and_scales_to_one() -> None:
    docs = ["invoice invoice total", "invoice EUR", "weather today"]
    scores = bm25("EUR invoice", docs)
    assert max(scores) == 1.0
    assert scores[1] == 1.0 and scores[2] == 0.0
    assert bm25("the of", docs) == [0.0, 0.0, 0.0]


def test_semantic_search_uses_the_store_index() -> None:
    store = InMemoryStore(index={"embed": HashEmbeddings(), "dims": 64, "fields": ["text"]})
    bank = MemoryBank(store)
    assert bank.semantic
    for fact in FACTS:
        bank.remember(("alice",), fact)
    bank.remember(("bob",), "bob prefers invoices in USD currency")
    found = bank.search(("alice",), "preferred currency for invoices")
    assert found[0].text == FACTS[0]
    assert all(m.scope == ("alice",) for m in found)
    assert 0 < found[0].relevance <= 1.0


def test_remember_tool_writes_to_the_runs_scope_only() -> None:
    bank = MemoryBank()
    tool = remember_tool(bank)
    assert set(tool.args) == {"text", "level"}  # the scope is not the model's to choose
    out = tool.invoke(
        {"text": "Likes weekly reports", "level": "pattern"}, {"configurable": {"user_id": "a"}}
    )
    assert "pattern" in out
    assert [m.level for m in bank.search(("a",), "weekly reports")] == ["pattern"]
    assert bank.search(("b",), "weekly reports") == []
    refused = tool.invoke({"text": "x"}, {"configurable": {}})
    assert "no memory scope" in refused
    asyncio.run(
        tool.ainvoke({"text": "Async fact about reports"}, {"configurable": {"user_id": "a"}})
    )
    assert len(bank.search(("a",), "reports")) == 2


def test_remember_tool_in_a_graph_takes_the_scope_from_the_run() -> None:
    bank = MemoryBank()
    tool = remember_tool(bank)
    call = {"name": "remember", "args": {"text": "Ships only on Tuesdays"}, "id": "c1"}
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[call])], default="done")

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [model.bind_tools([tool]).invoke(state["messages"])]}

    builder = StateGraph(ContextState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t", "user_id": "carol"}}
    graph.invoke({"messages": [HumanMessage("remember my shipping day")]}, config)
    assert [m.text for m in bank.search(("carol",), "shipping Tuesdays")] == [
        "Ships only on Tuesdays"
    ]
    assert bank.search(("t",), "shipping Tuesdays") == []


def test_postgres_pgvector_store(postgres_db: str) -> None:
    index: Any = {"embed": HashEmbeddings(), "dims": 64, "fields": ["text"]}
    with PostgresStore.from_conn_string(postgres_db, index=index) as store:
        store.setup()
        bank = MemoryBank(store)
        assert bank.semantic
        for fact in FACTS:
            bank.remember(("acme", "alice"), fact, level="observation")
        bank.remember(("acme", "alice"), "Always quote invoice currency codes", level="principle")
        bank.remember(("acme", "bob"), "bob's preferred currency for invoices is USD")
        bank.remember(("acme", "alice", "x"), "nested preferred currency for invoices is GBP")
        found = bank.search(("acme", "alice"), "preferred currency for invoices")
        assert found[0].text == FACTS[0]
        assert {m.scope for m in found} == {("acme", "alice")}
        assert not any("USD" in m.text or "GBP" in m.text for m in found)
        scores = [m.score for m in found]
        assert scores == sorted(scores, reverse=True)
        async_found = asyncio.run(bank.asearch(("acme", "alice"), "preferred currency"))
        assert async_found[0].text == FACTS[0]
        bank.finish_session(("acme", "alice"), "audit", "closed 3 invoices", thread_id="t1")
        summary = bank.session_summary(("acme", "alice"), "audit")
        assert summary is not None and summary.text == "closed 3 invoices"
        assert bank.session_summary(("acme", "bob"), "audit") is None
