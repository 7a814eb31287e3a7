-- langgraph-ctx migration 0004: a lexical index of long-term memories (SQLite, FTS5).
--
-- MemoryBank keeps memories in a LangGraph store; for a store without an
-- embedding index, storage.SQLiteMemoryIndex indexes their text here, so that
-- several processes share one index. One row per memory (store namespace and
-- key), its level as the group a search weighs it by; an external-content
-- FTS5 table indexes the rows, kept in step by triggers. The scope token (hex
-- of the namespace) is ANDed with every search, as in the archive's index.
-- Applied migrations are append-only: change the schema in a new file.

CREATE TABLE lgctx_memory_index (
    id        INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,  -- the store namespace, labels joined by '.' (escaped)
    key       TEXT NOT NULL,
    grp       TEXT NOT NULL DEFAULT '',
    body      TEXT NOT NULL,
    scope     TEXT GENERATED ALWAYS AS ('s' || lower(hex(namespace))) VIRTUAL,
    UNIQUE (namespace, key)
);

CREATE VIRTUAL TABLE lgctx_memory_fts USING fts5(
    scope, body,
    content = 'lgctx_memory_index', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

INSERT INTO lgctx_memory_fts (lgctx_memory_fts, rank) VALUES ('rank', 'bm25(0.0, 1.0)');

CREATE VIRTUAL TABLE lgctx_memory_vocab USING fts5vocab(lgctx_memory_fts, 'col');

CREATE TRIGGER lgctx_memory_fts_insert AFTER INSERT ON lgctx_memory_index BEGIN
    INSERT INTO lgctx_memory_fts (rowid, scope, body) VALUES (NEW.id, NEW.scope, NEW.body);
END;

CREATE TRIGGER lgctx_memory_fts_delete AFTER DELETE ON lgctx_memory_index BEGIN
    INSERT INTO lgctx_memory_fts (lgctx_memory_fts, rowid, scope, body)
    VALUES ('delete', OLD.id, OLD.scope, OLD.body);
END;

CREATE TRIGGER lgctx_memory_fts_update AFTER UPDATE ON lgctx_memory_index BEGIN
    INSERT INTO lgctx_memory_fts (lgctx_memory_fts, rowid, scope, body)
    VALUES ('delete', OLD.id, OLD.scope, OLD.body);
    INSERT INTO lgctx_memory_fts (rowid, scope, body) VALUES (NEW.id, NEW.scope, NEW.body);
END;
