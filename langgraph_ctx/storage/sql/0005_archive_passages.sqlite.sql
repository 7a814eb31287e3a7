-- langgraph-ctx migration 0005: the archive indexed by passage (SQLite, FTS5).
--
-- 0003 indexed each archived message whole, and BM25 sank a long tool result
-- whose one line answers below short messages sharing the question's words.
-- Now a row per passage (a sentence; a line break always ends one): thread,
-- namespace, message id, its ordinal in the message, and its text. A search
-- ranks messages by their best passage. Passages are cut in Python
-- (storage.hits.message_passages, the split recall ranks by), so:
-- - SQLiteArchive.put writes a message's passages in the transaction that
--   archives it, for the messages that transaction inserts (a duplicate, kept
--   out by the archive's UNIQUE key, writes none);
-- - the rows archived before this migration are cut and written by the
--   migration runner right after this file, in the same transaction
--   (storage/_passages.py, the step registered for 0005_archive_passages).
-- lgctx_archive_fts (0003), which no search reads any more, is dropped with its
-- triggers and view: one index per archive, kept by each write.
-- Applied migrations are append-only: change the schema in a new file.

DROP TRIGGER lgctx_archive_fts_insert;
DROP TRIGGER lgctx_archive_fts_delete;
DROP TRIGGER lgctx_archive_fts_before_update;
DROP TRIGGER lgctx_archive_fts_after_update;
DROP TABLE lgctx_archive_vocab;
DROP TABLE lgctx_archive_fts;
DROP VIEW lgctx_archive_text;

CREATE TABLE lgctx_archive_passages (
    id         INTEGER PRIMARY KEY,
    thread_id  TEXT    NOT NULL,
    namespace  TEXT    NOT NULL DEFAULT '',
    message_id TEXT    NOT NULL,
    ordinal    INTEGER NOT NULL,  -- the passage's place in its message, from 0
    body       TEXT    NOT NULL,  -- the passage, as a hit shows it
    -- What is indexed: the passage's terms, each prefixed by its scope (hex of thread
    -- and namespace, as 0003's scope token, then 'x'), written by the package.
    terms      TEXT    NOT NULL,
    UNIQUE (thread_id, namespace, message_id, ordinal)
);

-- Why scoped terms rather than 0003's scope token ANDed with every search: bm25()
-- counts the rows of every phrase of a query for its idf, and a scope token is in
-- every row of its thread, so each search paid for reading the whole thread's list
-- (15 ms at 300,000 passages). A scoped term's rows are its thread's rows only: a
-- search reads the postings of its own thread's terms and nothing else, and the
-- document frequencies are the thread's. unicode61 without diacritics removal, as
-- 0003: the terms arrive as terms() reads them.
CREATE VIRTUAL TABLE lgctx_archive_passages_fts USING fts5(
    terms,
    content = 'lgctx_archive_passages', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

-- Document frequencies, for the search's bounds (MaxScore).
CREATE VIRTUAL TABLE lgctx_archive_passages_vocab
USING fts5vocab(lgctx_archive_passages_fts, 'col');

CREATE TRIGGER lgctx_archive_passages_fts_insert AFTER INSERT ON lgctx_archive_passages BEGIN
    INSERT INTO lgctx_archive_passages_fts (rowid, terms) VALUES (NEW.id, NEW.terms);
END;

CREATE TRIGGER lgctx_archive_passages_fts_delete AFTER DELETE ON lgctx_archive_passages BEGIN
    INSERT INTO lgctx_archive_passages_fts (lgctx_archive_passages_fts, rowid, terms)
    VALUES ('delete', OLD.id, OLD.terms);
END;

-- The archive is append-only; should a row be deleted all the same, its passages go too.
CREATE TRIGGER lgctx_archive_passages_of_deleted AFTER DELETE ON lgctx_archive BEGIN
    DELETE FROM lgctx_archive_passages
    WHERE thread_id = OLD.thread_id AND namespace = OLD.namespace
      AND message_id = OLD.message_id;
END;
