-- langgraph-ctx migration 0007: vectors for hybrid archive search (SQLite: none yet).
--
-- PostgreSQL's 0007 adds lgctx_archive_vectors (pgvector). SQLiteArchive keeps no
-- vectors: its search is lexical (FTS5, stemmed), so a question that shares no word
-- with what answers it is not found there (the README says so; InMemoryArchive and
-- PostgresArchive take embeddings=). This file changes nothing: it keeps the two
-- dialects' versions paired, as every migration so far.
SELECT 1;
