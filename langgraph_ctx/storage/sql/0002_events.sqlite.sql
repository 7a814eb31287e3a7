-- langgraph-ctx migration 0002: the context event log (SQLite).
--
-- The same table as the PostgreSQL migration, in SQLite's types: data as JSON
-- text, ts as Unix seconds.
-- Applied migrations are append-only: change the schema in a new file.

CREATE TABLE IF NOT EXISTS lgctx_events (
    thread_id TEXT    NOT NULL,
    namespace TEXT    NOT NULL DEFAULT '',
    seq       INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    node      TEXT    NOT NULL,
    ts        REAL    NOT NULL,
    data_json TEXT    NOT NULL,
    PRIMARY KEY (thread_id, namespace, node, seq)
);

CREATE INDEX IF NOT EXISTS lgctx_events_kind ON lgctx_events (thread_id, kind);
