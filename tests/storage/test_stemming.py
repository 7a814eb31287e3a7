"""Stemmed search (issue 34): the three backends hold the same stems and rank alike, and
migration 0006 stems the indexes of a database made before it, keeping every row.

Per-backend checks of inflected questions are in tests/storage/conformance/test_stemming.py.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import snowballstemmer  # type: ignore[import-untyped]
from langchain_core.messages import BaseMessage, HumanMessage, messages_to_dict

from langgraph_ctx.retrieval.index import Doc, LexicalIndex, TextIndex
from langgraph_ctx.retrieval.text import stem, terms
from langgraph_ctx.storage._fts import scope_token, scoped_terms
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive, SQLiteArchive
from langgraph_ctx.storage.memory_index import PostgresMemoryIndex, SQLiteMemoryIndex, scope_key
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.postgres import PostgresArchive

SQL = Path(__file__).parents[2] / "langgraph_ctx" / "storage" / "sql"

# Inflected words whose stems FTS5's porter (Porter 1980) and Porter2 disagree on, and
# words that only stem alike through Porter2's rules: PostgreSQL must agree on each.
WORDS = [
    "taxes", "tax", "anniversaries", "anniversary", "booked", "booking", "added", "always",
    "directly", "dying", "skies", "generously", "preferred", "airlines", "invoices",
    "müllers", "naïve", "v2", "mp3s", "2024", "shipments", "rerouted", "o'brien",
]  # fmt: skip

CORPUS = [
    "Shipment SHP-7 was rerouted through Gdansk after the strike.",
    "The strike at the port delayed three shipments.",
    "Invoices for rerouted shipments are paid by the carrier.",
    "The carrier's invoice was paid in March.",
    "Gdansk's port reopened after the strikes ended.",
    "Our anniversary dinner is booked at the harbour restaurant.",
    "Restaurants near the harbour close early on Sundays.",
    "The tax advisor booked a call about carrier invoices.",
]
QUERIES = [
    "Which shipments were rerouted?",
    "When did the strikes at the port end?",
    "Who pays the invoices of the carriers?",
    "Where is the anniversary dinner booked?",
    "restaurant harbour Sundays",
]


def test_package_stems_as_postgres_does(postgres_db: str) -> None:
    with psycopg.connect(postgres_db) as conn:
        migrate(postgres_db)
        for word in WORDS:
            row = conn.execute(
                "SELECT tsvector_to_array(to_tsvector('lgctx_english', lgctx_search_words(%s)))",
                (word.replace("'", " "),),
            ).fetchone()
            assert row is not None
            expected = [stem(part) for part in word.split("'")]
            assert sorted(row[0]) == sorted(expected), word
    # And the stemmer is Snowball's English, not Porter's original.
    assert stem("always") == snowballstemmer.stemmer("english").stemWord("always") == "alway"


def ranking(store: TextIndex | MessageArchive, query: str) -> list[str]:
    """The best three keys (an archive's thread "t", an index's scope ("u",))."""
    if hasattr(store, "put"):
        return [hit.message_id for hit in store.search("t", query, limit=3)]
    return [key for key, _ in store.search(("u",), query, limit=3)]


def test_three_backends_rank_alike(postgres_db: str, tmp_path: Path) -> None:
    migrate(postgres_db)
    messages = [HumanMessage(text, id=f"d{i}") for i, text in enumerate(CORPUS)]
    docs = [Doc(f"d{i}", text) for i, text in enumerate(CORPUS)]
    memory_archive = InMemoryArchive()
    memory_index = LexicalIndex()
    with (
        SQLiteArchive(str(tmp_path / "a.sqlite")) as sqlite_archive,
        SQLiteMemoryIndex(str(tmp_path / "m.sqlite")) as sqlite_index,
        PostgresArchive(postgres_db) as pg_archive,
        PostgresMemoryIndex(postgres_db) as pg_index,
    ):
        for archive in (memory_archive, sqlite_archive, pg_archive):
            archive.put("t", messages, reason="x")
        for index in (memory_index, sqlite_index, pg_index):
            index.add(("u",), docs)
        for query in QUERIES:
            archives = [ranking(a, query) for a in (memory_archive, sqlite_archive, pg_archive)]
            indexes = [ranking(i, query) for i in (memory_index, sqlite_index, pg_index)]
            assert archives[0], query  # every query finds something
            assert archives[1:] == [archives[0]] * 2, (query, archives)
            assert indexes[1:] == [indexes[0]] * 2, (query, indexes)
            assert indexes[0] == archives[0], query


# -- a database made before stemming (0005) ----------------------------------------------------


def old_migrations(tmp_path: Path, last: int = 5) -> Path:
    directory = tmp_path / f"old-sql-{last}"
    directory.mkdir()
    for path in SQL.glob("000[1-9]_*.sql"):
        if int(path.name[:4]) <= last:
            shutil.copy(path, directory / path.name)
    return directory


MEMORIES = [
    ("tax", "My tax advisor is Ines Moreau."),
    ("anniversary", "The restaurant is booked for anniversaries in May."),
    ("courier", "The courier arrives on Tuesdays."),
]


def old_log() -> list[BaseMessage]:
    return [HumanMessage(text, id=key) for key, text in MEMORIES]


def check_stemmed(archive: MessageArchive, index: TextIndex) -> None:
    """Rows written before 0006 are found by inflected questions, and so are new ones."""
    for store in (archive, index):
        assert ranking(store, "Who does my taxes?")[:1] == ["tax"]
        assert ranking(store, "our anniversary dinner")[:1] == ["anniversary"]
        assert ranking(store, "courier arriving")[:1] == ["courier"]
    assert sorted(m.id for m in archive.list("t")) == sorted(k for k, _ in MEMORIES)
    archive.put("t", [HumanMessage("The parcels were rerouted.", id="new")], reason="x")
    index.add(("u",), [Doc("new", "The parcels were rerouted.")])
    assert ranking(archive, "parcel rerouting") == ["new"]
    assert ranking(index, "parcel rerouting") == ["new"]


def test_sqlite_migration_stems_rows_indexed_before_it(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    migrate(f"sqlite:///{path}", directory=old_migrations(tmp_path))
    log = old_log()
    token = scope_token("t", "")
    # Rows as the package wrote them before 0006: passages' terms unstemmed, and a
    # memory's body alone (FTS5 tokenized it).
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany(
            "INSERT INTO lgctx_archive (thread_id, namespace, message_id, position, role,"
            " content_json, tokens, archived_at, reason) VALUES ('t', '', ?, ?, ?, ?, 1, 0, 'x')",
            [
                (m.id, i, m.type, json.dumps(d))
                for i, (m, d) in enumerate(zip(log, messages_to_dict(log), strict=True))
            ],
        )
        conn.executemany(
            "INSERT INTO lgctx_archive_passages (thread_id, namespace, message_id, ordinal,"
            " body, terms) VALUES ('t', '', ?, 0, ?, ?)",
            [(key, text, " ".join(scoped_terms(token, terms(text)))) for key, text in MEMORIES],
        )
        conn.executemany(
            "INSERT INTO lgctx_memory_index (namespace, key, body) VALUES (?, ?, ?)",
            [(scope_key(("u",)), key, text) for key, text in MEMORIES],
        )
    with SQLiteArchive(str(path)) as archive:  # opening it migrates it
        with closing(sqlite3.connect(path)) as conn:
            for fts in ("lgctx_archive_passages_fts", "lgctx_memory_fts"):
                conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('integrity-check')")
            (version,) = conn.execute("SELECT max(version) FROM lgctx_schema_versions").fetchone()
        assert version == 7
        with SQLiteMemoryIndex(str(path)) as index:
            check_stemmed(archive, index)


def test_postgres_migration_stems_rows_indexed_before_it(postgres_db: str, tmp_path: Path) -> None:
    migrate(postgres_db, directory=old_migrations(tmp_path))
    # At 0005 the database itself computes each row's words ('simple', unstemmed): the
    # package's writes leave the rows as an older package did.
    with PostgresArchive(postgres_db) as archive, PostgresMemoryIndex(postgres_db) as index:
        archive.put("t", old_log(), reason="x")
        index.add(("u",), [Doc(key, text) for key, text in MEMORIES])
        before = archive._read("SELECT * FROM lgctx_search_scopes ORDER BY scope", ())
        assert migrate(postgres_db).applied_now == (6, 7)
        check_stemmed(archive, index)
        # The counts BM25 reads were rebuilt from the stems, then kept by the triggers.
        after = archive._read("SELECT * FROM lgctx_search_scopes ORDER BY scope", ())
        assert [r["docs"] for r in after] == [r["docs"] + 1 for r in before]
        (stale,) = archive._read(
            "SELECT count(*) AS n FROM lgctx_search_terms WHERE term IN ('taxes', 'tax')", ()
        )
        (stemmed,) = archive._read(
            "SELECT count(*) AS n FROM lgctx_search_terms WHERE term = 'anniversari'", ()
        )
        assert (stale["n"], stemmed["n"]) == (2, 2)  # 'tax' in both scopes, no 'taxes'
