-- langgraph-ctx migration 0004: a lexical index of long-term memories (PostgreSQL).
--
-- MemoryBank keeps memories in a LangGraph store; for a store without an
-- embedding index, storage.PostgresMemoryIndex indexes their text here, so that
-- every process sees one index. One row per memory (store namespace and key),
-- its level as the group a search weighs it by. The words, the scope lexeme
-- and the counts BM25 needs work as in the archive's index (migration 0003).
-- Applied migrations are append-only: change the schema in a new file.

CREATE TABLE lgctx_memory_index (
    namespace    TEXT NOT NULL,  -- the store namespace, labels joined by '.' (escaped)
    key          TEXT NOT NULL,
    grp          TEXT NOT NULL DEFAULT '',
    body         TEXT NOT NULL,
    search_scope TEXT GENERATED ALWAYS AS ('m' || md5(namespace)) STORED,
    search       tsvector
        GENERATED ALWAYS AS (lgctx_search_vector('m' || md5(namespace), body)) STORED,
    PRIMARY KEY (namespace, key)
);

-- fastupdate off, as the archive's (see 0003): searches never read a pending list.
CREATE INDEX lgctx_memory_index_search ON lgctx_memory_index USING gin (search)
    WITH (fastupdate = off);

CREATE TRIGGER lgctx_memory_counted_insert AFTER INSERT ON lgctx_memory_index
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();

CREATE TRIGGER lgctx_memory_counted_update AFTER UPDATE ON lgctx_memory_index
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();

CREATE TRIGGER lgctx_memory_counted_delete AFTER DELETE ON lgctx_memory_index
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();
