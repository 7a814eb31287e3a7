-- langgraph-ctx migration 0007: a vector per archived passage, for hybrid search (PostgreSQL).
--
-- With embeddings= (any LangChain Embeddings), PostgresArchive embeds each passage
-- of lgctx_archive_passages off the caller's path (a background thread after put;
-- PostgresArchive.backfill_vectors for rows archived before) and a search fuses the
-- nearest passages by cosine with the lexical ranking (reciprocal-rank fusion, as
-- the in-memory archive). Without embeddings nothing writes or reads this table.
--
-- The vectors are REAL[], not pgvector's type: this file applies on a server
-- without pgvector, and a table can hold any model's vectors (model, dims). The
-- archive creates, for the dimension its model gives, an HNSW index on the cast
-- (embedding::vector(dims)) WHERE dims = <dims>, and searches by that expression,
-- which needs pgvector (CREATE EXTENSION vector) only once embeddings are used.
-- Every existing row is kept; none is rewritten.
-- Applied migrations are append-only: change the schema in a new file.

CREATE TABLE lgctx_archive_vectors (
    thread_id  TEXT    NOT NULL,
    namespace  TEXT    NOT NULL DEFAULT '',
    model      TEXT    NOT NULL,  -- which Embeddings computed it: another model, another row
    message_id TEXT    NOT NULL,
    ordinal    INTEGER NOT NULL,  -- lgctx_archive_passages.ordinal
    dims       INTEGER NOT NULL,
    embedding  REAL[]  NOT NULL,
    PRIMARY KEY (thread_id, namespace, model, message_id, ordinal)
);

-- As the passages (0005): an archived row deleted all the same takes its vectors along.
CREATE FUNCTION lgctx_archive_vectors_of_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lgctx_archive_vectors AS v USING old_rows AS o
    WHERE v.thread_id = o.thread_id AND v.namespace = o.namespace
      AND v.message_id = o.message_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER lgctx_archive_vectors_of_deleted AFTER DELETE ON lgctx_archive
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_archive_vectors_of_deleted();
