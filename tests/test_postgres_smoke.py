"""Smoke tests: the real-PostgreSQL fixtures work end to end."""

from __future__ import annotations

from datetime import datetime, timezone

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row


def test_server_version_and_pgvector(postgres_db: str) -> None:
    with psycopg.connect(postgres_db) as conn:
        version = conn.execute("select version()").fetchone()
        assert version is not None and version[0].startswith("PostgreSQL ")
        assert conn.info.server_version >= 150000, version[0]

        conn.execute("create extension if not exists vector")
        row = conn.execute("select '[1,2,3]'::vector <-> '[1,2,4]'::vector").fetchone()
        assert row is not None and row[0] == 1.0


def test_postgres_saver_roundtrip(postgres_db: str) -> None:
    # PostgresSaver requires autocommit (setup() runs CREATE INDEX CONCURRENTLY) and dict rows.
    with psycopg.connect(postgres_db, autocommit=True, row_factory=dict_row) as conn:
        saver = PostgresSaver(conn)
        saver.setup()

        checkpoint: Checkpoint = {
            "v": 1,
            "id": "1ef4f797-8335-6428-8001-8a1503f9b875",
            "ts": datetime.now(timezone.utc).isoformat(),
            "channel_values": {"messages": ["hello"]},
            "channel_versions": {"messages": 1},
            "versions_seen": {},
            "updated_channels": ["messages"],
        }
        config: RunnableConfig = {"configurable": {"thread_id": "smoke", "checkpoint_ns": ""}}
        saved = saver.put(config, checkpoint, {"source": "input", "step": 1}, {"messages": 1})
        assert saved["configurable"]["checkpoint_id"] == checkpoint["id"]

        got = saver.get_tuple(saved)
        assert got is not None
        assert got.checkpoint["id"] == checkpoint["id"]
        assert got.checkpoint["channel_values"] == {"messages": ["hello"]}
        assert got.metadata["step"] == 1
