-- langgraph-ctx migration 0005: the archive indexed by passage (PostgreSQL).
--
-- 0003 indexed each archived message whole, and BM25 sank a long tool result
-- whose one line answers below short messages sharing the question's words.
-- Now a row per passage (a sentence; a line break always ends one): thread,
-- namespace, message id, its ordinal in the message, its text, and the
-- message's archive position (ties go to the earlier archived). A search ranks
-- messages by their best passage. Words, scope lexeme, GIN index and the
-- counts BM25 reads work as 0003's (lgctx_search_vector, lgctx_search_counted).
-- Passages are cut in Python (storage.hits.message_passages, the split recall
-- ranks by), so:
-- - PostgresArchive.put writes a message's passages in the statement that
--   archives it, for the rows that statement inserts (INSERT ... RETURNING);
-- - the rows archived before this migration are cut and written by the
--   migration runner right after this file, in the same transaction
--   (storage/_passages.py, the step registered for 0005_archive_passages).
-- 0003's message-level index, which no search reads any more, is dropped with
-- its columns, triggers and counts: one index per archive, kept by each write.
-- Applied migrations are append-only: change the schema in a new file.

DROP TRIGGER lgctx_archive_counted_insert ON lgctx_archive;
DROP TRIGGER lgctx_archive_counted_update ON lgctx_archive;
DROP TRIGGER lgctx_archive_counted_delete ON lgctx_archive;
DROP INDEX lgctx_archive_search;
ALTER TABLE lgctx_archive DROP COLUMN search, DROP COLUMN search_scope;
-- The archive's scopes are 'a' || md5s, the memory index's 'm' || md5 (0003, 0004).
DELETE FROM lgctx_search_terms WHERE scope LIKE 'a%';
DELETE FROM lgctx_search_scopes WHERE scope LIKE 'a%';

CREATE TABLE lgctx_archive_passages (
    thread_id    TEXT    NOT NULL,
    namespace    TEXT    NOT NULL DEFAULT '',
    message_id   TEXT    NOT NULL,
    ordinal      INTEGER NOT NULL,  -- the passage's place in its message, from 0
    position     BIGINT  NOT NULL,  -- its message's lgctx_archive.position
    body         TEXT    NOT NULL,
    search_scope TEXT GENERATED ALWAYS AS ('p' || md5(thread_id) || md5(namespace)) STORED,
    search       tsvector GENERATED ALWAYS AS (
        lgctx_search_vector('p' || md5(thread_id) || md5(namespace), body)) STORED,
    PRIMARY KEY (thread_id, namespace, message_id, ordinal)
);

-- fastupdate off, as the archive's was (see 0003): searches never read a pending list.
CREATE INDEX lgctx_archive_passages_search ON lgctx_archive_passages USING gin (search)
    WITH (fastupdate = off);

CREATE TRIGGER lgctx_passages_counted_insert AFTER INSERT ON lgctx_archive_passages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();

CREATE TRIGGER lgctx_passages_counted_update AFTER UPDATE ON lgctx_archive_passages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();

CREATE TRIGGER lgctx_passages_counted_delete AFTER DELETE ON lgctx_archive_passages
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();

-- The archive is append-only; should a row be deleted all the same, its passages go too.
CREATE FUNCTION lgctx_archive_passages_of_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lgctx_archive_passages AS p USING old_rows AS o
    WHERE p.thread_id = o.thread_id AND p.namespace = o.namespace
      AND p.message_id = o.message_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER lgctx_archive_passages_of_deleted AFTER DELETE ON lgctx_archive
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_archive_passages_of_deleted();
