-- langgraph-ctx migration 0003: full-text search over the archive (SQLite, FTS5).
--
-- 1. lgctx_archive gets a stable integer key. The index refers to rows by it,
--    and VACUUM may renumber the implicit rowid of a table without one. The
--    table is rebuilt once (same columns, same order, same key as a UNIQUE).
-- 2. lgctx_archive_text: what is indexed of each row, computed from the stored
--    JSON alone (text blocks, name, tool_call_id, and each tool call's name, id
--    and argument keys and values: the words of archive.searchable_text), plus a scope
--    token naming its thread and namespace (hex, so injective), which a search
--    ANDs with its terms: a thread's search reads only that thread's postings.
-- 3. lgctx_archive_fts indexes that view. Contentless: no second copy of the
--    text (and an external-content table cannot read a view that calls
--    json_each). Fed by triggers in the same transaction as the archive write,
--    so an ignored duplicate (INSERT OR IGNORE) indexes nothing. Rows archived
--    before this migration are indexed here, from the same view.
-- Applied migrations are append-only: change the schema in a new file.

CREATE TABLE lgctx_archive_0003 (
    id           INTEGER PRIMARY KEY,
    thread_id    TEXT    NOT NULL,
    namespace    TEXT    NOT NULL DEFAULT '',
    message_id   TEXT    NOT NULL,
    position     INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    content_json TEXT    NOT NULL,
    tokens       INTEGER NOT NULL,
    archived_at  REAL    NOT NULL,
    reason       TEXT    NOT NULL,
    UNIQUE (thread_id, namespace, message_id)
);

INSERT INTO lgctx_archive_0003 (thread_id, namespace, message_id, position, role,
                                content_json, tokens, archived_at, reason)
SELECT thread_id, namespace, message_id, position, role, content_json, tokens, archived_at, reason
FROM lgctx_archive ORDER BY thread_id, namespace, position;

DROP TABLE lgctx_archive;

ALTER TABLE lgctx_archive_0003 RENAME TO lgctx_archive;

CREATE INDEX lgctx_archive_order ON lgctx_archive (thread_id, namespace, position);

CREATE VIEW lgctx_archive_text (id, scope, body) AS
SELECT
    a.id,
    's' || lower(hex(a.thread_id)) || 'g' || lower(hex(a.namespace)),
    coalesce(
        CASE json_type(a.content_json, '$.data.content')
            WHEN 'text' THEN json_extract(a.content_json, '$.data.content')
            WHEN 'array' THEN (
                SELECT group_concat(
                    CASE WHEN b.type = 'text' THEN b.value ELSE json_extract(b.value, '$.text') END,
                    char(10))
                FROM json_each(a.content_json, '$.data.content') AS b
                WHERE b.type = 'text' OR json_extract(b.value, '$.type') = 'text')
        END, '')
    || char(10) || coalesce(json_extract(a.content_json, '$.data.name'), '')
    || char(10) || coalesce(json_extract(a.content_json, '$.data.tool_call_id'), '')
    || char(10) || coalesce((
        SELECT group_concat(
            coalesce(json_extract(c.value, '$.name'), '') || ' '
            || coalesce(json_extract(c.value, '$.id'), '') || ' '
            || coalesce((
                -- every key and scalar of the arguments, nested ones too
                SELECT group_concat(
                    trim(CASE WHEN typeof(t.key) = 'text' THEN t.key ELSE '' END || ' '
                    || CASE t.type
                        WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                        WHEN 'object' THEN '' WHEN 'array' THEN '' WHEN 'null' THEN ''
                        ELSE t.value END), ' ')
                FROM json_tree(c.value, '$.args') AS t
                WHERE t.parent IS NOT NULL), ''),
            char(10))
        FROM json_each(a.content_json, '$.data.tool_calls') AS c), '')
FROM lgctx_archive AS a;

-- unicode61 without diacritics removal: words are matched as terms() reads
-- them (case-folded, accents kept), the same in every backend.
CREATE VIRTUAL TABLE lgctx_archive_fts USING fts5(
    scope, body,
    content = '',
    tokenize = 'unicode61 remove_diacritics 0'
);

-- The scope token only selects rows: it weighs nothing in the rank.
INSERT INTO lgctx_archive_fts (lgctx_archive_fts, rank) VALUES ('rank', 'bm25(0.0, 1.0)');

INSERT INTO lgctx_archive_fts (rowid, scope, body) SELECT id, scope, body FROM lgctx_archive_text;

-- Document frequencies per column, for the search's bounds (MaxScore).
CREATE VIRTUAL TABLE lgctx_archive_vocab USING fts5vocab(lgctx_archive_fts, 'col');

CREATE TRIGGER lgctx_archive_fts_insert AFTER INSERT ON lgctx_archive BEGIN
    INSERT INTO lgctx_archive_fts (rowid, scope, body)
    SELECT id, scope, body FROM lgctx_archive_text WHERE id = NEW.id;
END;

-- The archive is append-only; should a row be deleted or changed all the same,
-- its index entry goes with it (a contentless index needs the old words to
-- remove them, so they are read from the view while the row still exists).
CREATE TRIGGER lgctx_archive_fts_delete BEFORE DELETE ON lgctx_archive BEGIN
    INSERT INTO lgctx_archive_fts (lgctx_archive_fts, rowid, scope, body)
    SELECT 'delete', id, scope, body FROM lgctx_archive_text WHERE id = OLD.id;
END;

CREATE TRIGGER lgctx_archive_fts_before_update BEFORE UPDATE ON lgctx_archive BEGIN
    INSERT INTO lgctx_archive_fts (lgctx_archive_fts, rowid, scope, body)
    SELECT 'delete', id, scope, body FROM lgctx_archive_text WHERE id = OLD.id;
END;

CREATE TRIGGER lgctx_archive_fts_after_update AFTER UPDATE ON lgctx_archive BEGIN
    INSERT INTO lgctx_archive_fts (rowid, scope, body)
    SELECT id, scope, body FROM lgctx_archive_text WHERE id = NEW.id;
END;
