-- langgraph-ctx migration 0002: the context event log (PostgreSQL).
--
-- Every ledger entry a node call records (utilization per LLM call,
-- compressions, evictions, recall timeouts, delegations, ...). The checkpoint
-- keeps only the last few; this table keeps them all. The key is the node and
-- the ledger's own sequence number, so a step re-run after a crash writes
-- nothing twice, and parallel nodes of one step (which number their events
-- from the same ledger) do not collide.
-- Applied migrations are append-only: change the schema in a new file.

CREATE TABLE lgctx_events (
    thread_id TEXT        NOT NULL,
    namespace TEXT        NOT NULL DEFAULT '',
    seq       BIGINT      NOT NULL,
    kind      TEXT        NOT NULL,
    node      TEXT        NOT NULL,
    ts        TIMESTAMPTZ NOT NULL,
    data      JSONB       NOT NULL,
    PRIMARY KEY (thread_id, namespace, node, seq)
);

CREATE INDEX lgctx_events_kind ON lgctx_events (thread_id, kind);
