"""Memory search through an index: every memory ranked, any scale, scopes apart, shared indexes."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import TextIndex
from langgraph_ctx.retrieval.memory import ROOT, MemoryBank, namespace
from langgraph_ctx.retrieval.text import terms
from langgraph_ctx.storage.memory_index import PostgresMemoryIndex, SQLiteMemoryIndex
from langgraph_ctx.storage.migrations import migrate
from tests.test_memory import HashEmbeddings

# -- any scale ------------------------------------------------------------------------------

PLANTED = {
    0: ("The loading dock code is 4471.", "What is the code of the loading dock?"),
    4_999: ("Invoices for Acme go out in EUR.", "Which currency do Acme invoices use?"),
    49_999: ("The backup generator lives in room B12.", "Where is the backup generator?"),
    99_999: ("Maria prefers calls after 3 pm.", "When does Maria prefer calls?"),
}


@pytest.mark.slow
def test_the_best_match_is_found_wherever_it_sits_among_100_000_memories() -> None:
    # The 1st, the 5,000th, the 50,000th and the newest: the old lexical search ranked
    # only the first 2,000 of a scope, so three of these were never found.
    texts = [
        f"Shift log {i}: pump {i % 89} pressure checked on line {i % 97}." for i in range(100_000)
    ]
    for at, (fact, _) in PLANTED.items():
        texts[at] = fact
    bank = MemoryBank()
    bank.remember_many(("plant",), texts)
    for fact, question in PLANTED.values():
        found = bank.search(("plant",), question, limit=3)
        assert found[0].text == fact, (question, [m.text for m in found])
        assert found[0].relevance == 1.0


def test_the_newest_of_many_matches_is_ranked_like_the_first() -> None:
    bank = MemoryBank()
    bank.remember_many(("u",), [f"note {i} about the weather" for i in range(3_000)])
    bank.remember(("u",), "note about the invoice currency: EUR")
    assert bank.search(("u",), "invoice currency")[0].text.endswith("EUR")


# -- the index's behaviour, in memory ---------------------------------------------------------


def test_levels_boost_the_ranking_and_relevance_stays_the_bm25() -> None:
    bank = MemoryBank()
    bank.remember(("u",), "Invoices go out in EUR.", level="observation")
    bank.remember(("u",), "Invoices go out in EUR, always.", level="framework")
    found = bank.search(("u",), "invoices EUR")
    assert [m.level for m in found] == ["framework", "observation"]
    assert max(m.relevance for m in found) == 1.0
    for m in found:
        assert m.score == pytest.approx(m.relevance * bank.boosts[m.level])


def test_banks_on_one_store_share_its_index_and_read_what_it_held() -> None:
    store = InMemoryStore()
    writer = MemoryBank(store)
    writer.remember(("u",), "The audit is due in March.")
    assert MemoryBank(store).search(("u",), "audit due")[0].text == "The audit is due in March."
    # Written to the store before any bank touched the scope: read once, then indexed.
    store.put(
        namespace(ROOT, ("v",)),
        "k1",
        {"text": "Deploys freeze on Fridays.", "level": "principle", "source": "x", "scope": ["v"]},
    )
    later = MemoryBank(store)
    assert [m.key for m in later.search(("v",), "deploy freeze Fridays")] == ["k1"]


def test_the_store_stays_the_truth() -> None:
    bank = MemoryBank()
    memory = bank.remember(("u",), "The vault code is 1234.")
    bank.store.delete(namespace(ROOT, ("u",)), memory.key)
    assert bank.search(("u",), "vault code") == []
    bank.remember(("u",), "The vault code is 1234.", key="vault")
    bank.remember(("u",), "The safe holds gold.", key="vault")  # rewritten under its key
    assert bank.search(("u",), "vault code") == []
    assert [m.text for m in bank.search(("u",), "safe gold")] == ["The safe holds gold."]


def test_bad_input_is_refused_before_anything_is_written() -> None:
    bank = MemoryBank()
    with pytest.raises(ConfigurationError, match="key"):
        bank.remember_many(("u",), ["a fact", "another fact"], key="same")
    with pytest.raises(ConfigurationError, match="text"):
        bank.remember_many(("u",), ["a fact", "  "])
    with pytest.raises(ConfigurationError, match="scope"):
        bank.remember_many((), ["a fact"])
    assert bank.store.search(namespace(ROOT, ("u",))) == []
    assert bank.search(("u",), "fact") == [] and bank.search(("u",), "") == []
    with pytest.raises(ConfigurationError, match="scope"):
        bank.search((), "fact")


def test_lexical_scan_is_deprecated_and_an_index_needs_a_store_without_one() -> None:
    with pytest.warns(DeprecationWarning, match="lexical_scan"):
        MemoryBank(lexical_scan=100)
    semantic = InMemoryStore(index={"embed": HashEmbeddings(), "dims": 64, "fields": ["text"]})
    with pytest.raises(ConfigurationError) as info:
        MemoryBank(semantic, index=SQLiteMemoryIndex())
    assert info.value.field == "MemoryBank.index"
    assert MemoryBank(semantic).index is None


# -- every index: the same behaviour ----------------------------------------------------------


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


def test_a_sqlite_store_and_its_index_share_one_file(tmp_path: Path) -> None:
    # Autocommit, as the package's own connections: an open transaction of the
    # store's would hold the file's write lock.
    conn = sqlite3.connect(tmp_path / "m.sqlite", check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    with (
        SQLiteMemoryIndex(tmp_path / "m.sqlite") as a,
        SQLiteMemoryIndex(tmp_path / "m.sqlite") as b,
    ):
        MemoryBank(store, index=a).remember(("u",), "The audit is due in March.")
        assert MemoryBank(store, index=b).search(("u",), "audit")[0].text.startswith("The audit")
    conn.close()


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
)  # memory: see test_banks_on_one_store
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


@settings(max_examples=40, deadline=None)
@given(data=contents(), query=st.sampled_from([*WORDS, "alpha bravo", "zulu"]))
def test_in_memory_memory_search_never_leaks_across_scopes(
    data: dict[tuple[str, ...], list[str]], query: str
) -> None:
    check_scopes(MemoryBank(), "p", data, query)


@settings(max_examples=25, deadline=None)
@given(data=contents(), query=st.sampled_from([*WORDS, "alpha bravo", "zulu"]))
def test_sqlite_memory_search_never_leaks_across_scopes(
    data: dict[tuple[str, ...], list[str]], query: str
) -> None:
    with SQLiteMemoryIndex() as index:
        check_scopes(MemoryBank(InMemoryStore(), index=index), "p", data, query)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=contents(), query=st.sampled_from([*WORDS, "alpha bravo", "zulu"]))
def test_postgres_memory_search_never_leaks_across_scopes(
    postgres_db: str, data: dict[tuple[str, ...], list[str]], query: str
) -> None:
    migrate(postgres_db)
    with PostgresMemoryIndex(postgres_db, max_size=1) as index:
        bank = MemoryBank(InMemoryStore(), index=index)
        check_scopes(bank, uuid.uuid4().hex[:8], data, query)


def test_every_index_satisfies_the_protocol() -> None:
    def takes(index: TextIndex) -> TextIndex:
        return index

    with SQLiteMemoryIndex() as index:
        assert takes(index) is index
