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

-- The nearest passages of one thread, by cosine: the HNSW index of the archive's
-- dims (made by the archive: its dimension is the model's), read by an iterative scan
-- (pgvector 0.8) so that the thread's own rows fill the LIMIT however many other
-- threads' rows lie nearer; without it an HNSW scan returns ef_search rows of all
-- threads (40 by default) and the thread's are what is left of them after the filter.
-- The settings hold for this function's queries only. plpgsql: the body names
-- pgvector's type, and is only read when called (so this file needs no pgvector).
CREATE FUNCTION lgctx_nearest_passages(
    query text, dims integer, thread text, ns text, model_name text, n integer
) RETURNS TABLE (message_id text, ordinal integer, similarity double precision)
LANGUAGE plpgsql STABLE
SET hnsw.ef_search = 200
SET hnsw.iterative_scan = 'strict_order'
AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT v.message_id, v.ordinal,
                1 - ((v.embedding::vector(%1$s)) <=> $1::vector(%1$s))
         FROM lgctx_archive_vectors AS v
         WHERE v.thread_id = $2 AND v.namespace = $3 AND v.model = $4 AND v.dims = %1$s
         ORDER BY (v.embedding::vector(%1$s)) <=> $1::vector(%1$s)
         LIMIT $5', dims)
    USING query, thread, ns, model_name, n;
END
$$;

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
