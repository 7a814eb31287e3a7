-- langgraph-ctx migration 0006: every search index holds English stems (SQLite, FTS5).
--
-- Until 0005 a word was matched as written, so "Who does my taxes?" missed "my tax
-- advisor". Now the archive's passages and the memory index hold stems: Snowball's
-- English (Porter2), computed by the package (retrieval.text.stems), the algorithm
-- PostgreSQL's index runs in the server (its 0006) and the in-process index in
-- Python, so the three backends hold the same terms and rank alike.
-- Why not FTS5's own porter tokenizer: it is Porter's 1980 algorithm, whose stems
-- differ from Porter2's for words as common as "added" (ad), "always" (alwai) and
-- "directly" (directli); and the passages index scoped terms (0005), whose scope
-- prefix would change what that tokenizer cuts. So SQLite keeps unicode61 and is
-- given stems, as 0005 already gave it terms.
-- - lgctx_archive_passages.terms: rewritten from each passage's body by the
--   migration runner right after this file, in the same transaction
--   (storage/_passages.py, the step registered for 0006_stemmed_search), then its
--   index is rebuilt from them.
-- - lgctx_memory_index gets a terms column (its stems, scope-free: the scope
--   column still selects), written by SQLiteMemoryIndex; its index is made anew
--   over it, and the rows indexed before are given their stems by the same step.
--   NULL marks a row not stemmed yet: its first update indexes it and removes
--   nothing (a contentless 'delete' of words never indexed corrupts an FTS5 index).
-- Applied migrations are append-only: change the schema in a new file.

ALTER TABLE lgctx_memory_index ADD COLUMN terms TEXT;  -- NULL: not stemmed yet

DROP TRIGGER lgctx_memory_fts_insert;
DROP TRIGGER lgctx_memory_fts_delete;
DROP TRIGGER lgctx_memory_fts_update;
DROP TABLE lgctx_memory_vocab;
DROP TABLE lgctx_memory_fts;

CREATE VIRTUAL TABLE lgctx_memory_fts USING fts5(
    scope, terms,
    content = 'lgctx_memory_index', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

INSERT INTO lgctx_memory_fts (lgctx_memory_fts, rank) VALUES ('rank', 'bm25(0.0, 1.0)');

CREATE VIRTUAL TABLE lgctx_memory_vocab USING fts5vocab(lgctx_memory_fts, 'col');

CREATE TRIGGER lgctx_memory_fts_insert AFTER INSERT ON lgctx_memory_index BEGIN
    INSERT INTO lgctx_memory_fts (rowid, scope, terms) VALUES (NEW.id, NEW.scope, NEW.terms);
END;

CREATE TRIGGER lgctx_memory_fts_delete AFTER DELETE ON lgctx_memory_index BEGIN
    INSERT INTO lgctx_memory_fts (lgctx_memory_fts, rowid, scope, terms)
    SELECT 'delete', OLD.id, OLD.scope, OLD.terms WHERE OLD.terms IS NOT NULL;
END;

CREATE TRIGGER lgctx_memory_fts_update AFTER UPDATE ON lgctx_memory_index BEGIN
    INSERT INTO lgctx_memory_fts (lgctx_memory_fts, rowid, scope, terms)
    SELECT 'delete', OLD.id, OLD.scope, OLD.terms WHERE OLD.terms IS NOT NULL;
    INSERT INTO lgctx_memory_fts (rowid, scope, terms) VALUES (NEW.id, NEW.scope, NEW.terms);
END;
