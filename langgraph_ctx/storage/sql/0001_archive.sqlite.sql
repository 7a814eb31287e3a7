-- langgraph-ctx migration 0001: the archive of original messages (SQLite).
--
-- The same table as the PostgreSQL migration, in SQLite's types: content as
-- JSON text, times as Unix seconds. IF NOT EXISTS because SQLiteArchive
-- creates this exact table itself when it opens a file that was never
-- migrated; a test keeps the two definitions identical.
-- Applied migrations are append-only: change the schema in a new file.

CREATE TABLE IF NOT EXISTS lgctx_archive (
    thread_id    TEXT    NOT NULL,
    namespace    TEXT    NOT NULL DEFAULT '',
    message_id   TEXT    NOT NULL,
    position     INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    content_json TEXT    NOT NULL,
    tokens       INTEGER NOT NULL,
    archived_at  REAL    NOT NULL,
    reason       TEXT    NOT NULL,
    PRIMARY KEY (thread_id, namespace, message_id)
);

CREATE INDEX IF NOT EXISTS lgctx_archive_order
    ON lgctx_archive (thread_id, namespace, position);
