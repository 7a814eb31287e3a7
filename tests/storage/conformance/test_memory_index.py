"""The memory index contract (:class:`~langgraph_ctx.retrieval.index.TextIndex`), on
every backend: BM25 ranking times group weights, best first; a rewritten key takes its
new text, an identical one is a no-op; scopes never see each other; bad limits refused;
async the same as sync; concurrent writers lose nothing; a reopen keeps everything.
Then the same through :class:`~langgraph_ctx.retrieval.memory.MemoryBank`, as
separate processes use a shared index.

The MemoryBank checks moved here from tests/test_memory_index.py, which keeps what is
about the bank alone (scale, levels, the store as the truth).

A documented difference: only the in-process ``LexicalIndex`` has ``remove`` and
``has`` (it backs the in-memory archive, which needs them); the protocol has neither,
so the suite does not ask the SQL indexes for them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import Doc, LexicalIndex, TextIndex
from langgraph_ctx.retrieval.memory import ROOT, MemoryBank, namespace
from langgraph_ctx.retrieval.text import terms
from langgraph_ctx.storage.memory_index import PostgresMemoryIndex, SQLiteMemoryIndex
from langgraph_ctx.storage.migrations import migrate
from tests.storage.conformance.backends import Backend

NOTES = [
    Doc("k1", "The invoice currency for Acme is EUR.", "observation"),
    Doc("k2", "Shipping to PO boxes is not allowed.", "observation"),
    Doc("k3", "Always quote the currency code on an invoice.", "principle"),
    Doc("k4", "The vendor contract renews in January.", "pattern"),
]


def keys(found: list[tuple[str, float]]) -> list[str]:
    return [key for key, _ in found]


def test_ranks_best_first_and_weights_groups(index_backend: Backend[Any]) -> None:
    index: TextIndex = index_backend.store
    index.add(("u",), NOTES)
    found = index.search(("u",), "Which currency does the invoice use?")
    assert set(keys(found)) == {"k1", "k3"}
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    plain = dict(index.search(("u",), "currency invoice"))
    weighted = index.search(("u",), "currency invoice", weights={"principle": 10.0})
    assert keys(weighted)[0] == "k3"  # a group's weight multiplies its docs' scores
    assert dict(weighted)["k3"] == pytest.approx(10 * plain["k3"])
    assert dict(weighted)["k1"] == pytest.approx(plain["k1"])
    assert keys(index.search(("u",), "currency invoice PO boxes", limit=1)) == [
        keys(index.search(("u",), "currency invoice PO boxes", limit=10))[0]
    ]


def test_a_rewritten_key_takes_its_new_text(index_backend: Backend[Any]) -> None:
    index: TextIndex = index_backend.store
    index.add(("u",), NOTES)
    index.add(("u",), NOTES)  # the same texts again: nothing changes
    index.add(("u",), [Doc("k2", "PO boxes are fine since March.", "observation")])
    assert keys(index.search(("u",), "shipping")) == []
    assert keys(index.search(("u",), "PO boxes March")) == ["k2"]
    # The last write of a key in one batch wins, as in a loop of adds.
    index.add(("u",), [Doc("k5", "first draft"), Doc("k5", "final wording")])
    assert keys(index.search(("u",), "wording")) == ["k5"]
    assert index.search(("u",), "draft") == []
    if index_backend.durable:
        assert index_backend.rows() == 5


def test_scopes_never_see_each_other(index_backend: Backend[Any]) -> None:
    index: TextIndex = index_backend.store
    scopes = [("a",), ("a", "x"), ("a.x",), ("a", "x", "y"), ('a"', "x"), ("b",)]
    for n, scope in enumerate(scopes):
        index.add(scope, [Doc("same-key", f"shared word and scope{n}")])
    for n, scope in enumerate(scopes):
        assert keys(index.search(scope, "shared word")) == ["same-key"]
        assert keys(index.search(scope, f"scope{n}")) == ["same-key"]
        others = [f"scope{m}" for m in range(len(scopes)) if m != n]
        assert index.search(scope, " ".join(others)) == []
    assert index.search(("c",), "shared") == []


def test_empty_queries_find_nothing_and_bad_limits_are_refused(
    index_backend: Backend[Any],
) -> None:
    index: TextIndex = index_backend.store
    index.add(("u",), NOTES)
    index.add(("u",), [])
    assert index.search(("u",), "") == [] and index.search(("u",), "the of and") == []
    for limit in (0, -1, True):
        with pytest.raises(ConfigurationError) as info:
            index.search(("u",), "invoice", limit=limit)
        assert info.value.field == "limit"
    assert keys(index.search(("u",), "invoice"))


def test_async_is_the_sync_index(index_backend: Backend[Any]) -> None:
    index: TextIndex = index_backend.store

    async def session() -> list[tuple[str, float]]:
        await index.aadd(("u",), NOTES)
        found: list[tuple[str, float]] = await index.asearch(("u",), "currency invoice")
        return found

    found = index_backend.run(session())
    assert found == index.search(("u",), "currency invoice") and set(keys(found)) == {"k1", "k3"}


def test_concurrent_writers_lose_nothing(index_backend: Backend[Any]) -> None:
    index: TextIndex = index_backend.store

    def write(n: int) -> None:
        index.add(("u",), [Doc(f"k{n}", f"entry {n} about pumps")])
        index.add(("u",), [Doc(f"k{n}", f"entry {n} about pumps")])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(64)))
    assert sorted(keys(index.search(("u",), "pumps", limit=100))) == sorted(
        f"k{n}" for n in range(64)
    )
    if index_backend.durable:
        assert index_backend.rows() == 64


def test_an_index_survives_a_reopen(durable_index: Backend[Any]) -> None:
    durable_index.store.add(("u",), NOTES)
    with durable_index.reopen() as reopened:
        assert set(keys(reopened.search(("u",), "currency invoice"))) == {"k1", "k3"}
        reopened.add(("u",), [Doc("k9", "The currency moved to CHF.")])
    assert "k9" in keys(durable_index.store.search(("u",), "currency"))


# -- through MemoryBank, as separate processes share an index ---------------------------


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def index_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_bank(index_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Banks as separate processes would build them: one store, each its own index object."""
    closers: list[Any] = []
    if index_kind == "memory":
        store: Any = InMemoryStore()
        yield lambda: MemoryBank(store)
    elif index_kind == "sqlite":
        # One store object stands for a shared store (SqliteStore has no async methods).
        store = InMemoryStore()

        def sqlite_bank() -> MemoryBank:
            index = SQLiteMemoryIndex(tmp_path / "m.sqlite")
            closers.append(index)
            return MemoryBank(store, index=index)

        yield sqlite_bank
    else:
        url = request.getfixturevalue("postgres_db")
        migrate(url)
        with PostgresStore.from_conn_string(url) as pg_store:
            pg_store.setup()

            def pg_bank() -> MemoryBank:
                # The first bank opens a pool; the next shares the store's own connection.
                index = PostgresMemoryIndex(pg_store.conn if closers else url, max_size=2)
                closers.append(index)
                return MemoryBank(pg_store, index=index)

            yield pg_bank
    for index in closers:
        index.close()


FACTS = [
    ("The customer's preferred currency for invoices is EUR.", "observation"),
    ("Shipping to PO boxes is not allowed for this account.", "observation"),
    ("Always quote the currency code on an invoice.", "principle"),
    ("The vendor contract with Acme renews every January.", "pattern"),
]


def test_any_index_ranks_finds_and_keeps_scopes_apart(make_bank: Any) -> None:
    writer, reader = make_bank(), make_bank()
    for text, level in FACTS:
        writer.remember(("acme", "alice"), text, level=level)
    writer.remember(("acme", "bob"), "bob's preferred currency for invoices is USD")
    writer.remember(("acme", "alice", "team"), "the team's invoices use GBP currency")
    found = reader.search(("acme", "alice"), "Which currency should the invoice use?")
    assert {m.text for m in found} == {FACTS[0][0], FACTS[2][0]}
    assert all(m.scope == ("acme", "alice") for m in found)
    scores = [m.score for m in found]
    assert scores == sorted(scores, reverse=True) and max(m.relevance for m in found) == 1.0
    assert [m.text for m in reader.search(("acme", "bob"), "currency")] == [
        "bob's preferred currency for invoices is USD"
    ]
    assert reader.search(("acme", "carol"), "currency") == []


def test_any_index_takes_bulk_and_async_writes(make_bank: Any) -> None:
    bank = make_bank()
    bank.remember_many(("u",), [f"routine entry {i} about pumps" for i in range(300)])
    asyncio.run(bank.aremember(("u",), "the spare key hangs in the boiler room"))
    asyncio.run(bank.aremember_many(("u",), ["the boiler was serviced in May"]))
    found = asyncio.run(bank.asearch(("u",), "where is the spare key?"))
    assert found[0].text == "the spare key hangs in the boiler room"
    assert bank.search(("u",), "boiler serviced")[0].text.startswith("the boiler was")


@pytest.mark.parametrize(
    "index_kind", ["sqlite", "postgres"]
)  # memory: see tests/test_memory_index.py::test_banks_on_one_store
def test_a_shared_index_learns_a_stores_older_memories_by_reindex(make_bank: Any) -> None:
    bank = make_bank()
    ns = namespace(ROOT, ("old",))
    value = {"text": "The gate opens at 6 am.", "level": "observation", "source": "x"}
    bank.store.put(ns, "g1", {**value, "scope": ["old"]}, index=False)
    assert bank.search(("old",), "gate opens") == []
    assert bank.reindex(("old",)) == 1
    assert [m.key for m in bank.search(("old",), "gate opens")] == ["g1"]


# -- scopes never leak, whatever the contents (property) --------------------------------------

WORDS = ["alpha", "bravo", "charlie", "SHP-0042", "call_0", "the"]
SCOPES = [("a",), ("a", "x"), ("b",), ("a.x",), ("b", "y")]


@st.composite
def contents(draw: st.DrawFn) -> dict[tuple[str, ...], list[str]]:
    text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
    return {
        scope: draw(st.lists(text, max_size=5, unique=True))
        for scope in draw(st.lists(st.sampled_from(SCOPES), min_size=1, max_size=4, unique=True))
    }


def check_scopes(
    bank: MemoryBank, prefix: str, data: dict[tuple[str, ...], list[str]], query: str
) -> None:
    for scope, texts in data.items():
        if texts:
            bank.remember_many((prefix, *scope), texts)
    wanted = set(terms(query))
    for scope in SCOPES:
        texts = data.get(scope, [])
        found = bank.search((prefix, *scope), query, limit=50)
        assert {m.text for m in found} == {t for t in texts if wanted & set(terms(t))}
        assert all(m.scope == (prefix, *scope) for m in found)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=contents(), query=st.sampled_from([*WORDS, "alpha bravo", "zulu"]))
def test_memory_search_never_leaks_across_scopes(
    index_backend: Backend[Any], data: dict[tuple[str, ...], list[str]], query: str
) -> None:
    # One index serves every example: each example's scopes get a prefix of their own.
    bank = MemoryBank(InMemoryStore(), index=index_backend.store)
    check_scopes(bank, uuid.uuid4().hex[:8], data, query)


def test_every_index_satisfies_the_protocol(tmp_path: Path) -> None:
    def takes(index: TextIndex) -> TextIndex:
        return index

    with SQLiteMemoryIndex() as index:
        assert takes(index) is index
    lexical = LexicalIndex()
    assert takes(lexical) is lexical
