"""The archive, SQLite's table layout and archives from URLs. The contract every archive
backend shares is checked by the conformance suite (tests/storage/conformance/).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.archive import InMemoryArchive, SQLiteArchive
from langgraph_ctx.storage.checkpointers import archive_from_url
from langgraph_ctx.storage.urls import redact_url
from tests.storage.conformance.test_archive import conversation


def ids(messages: list[BaseMessage]) -> list[str | None]:
    return [m.id for m in messages]


def sqlite_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def test_sqlite_table_layout_wal_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "archive.db"
    with SQLiteArchive(str(path)) as archive:
        archive.put("t1", conversation()[:2], reason="compression")
        archive.put("t1", conversation()[2:3], reason="eviction")
    rows = sqlite_rows(
        path,
        "SELECT thread_id, namespace, message_id, position, role, tokens, reason, archived_at"
        " FROM lgctx_archive ORDER BY position",
    )
    assert [r[:5] for r in rows] == [
        ("t1", "", "m1", 0, "human"),
        ("t1", "", "m2", 1, "ai"),
        ("t1", "", "m3", 2, "tool"),
    ]
    assert all(isinstance(r[5], int) and r[5] > 0 for r in rows)
    assert [r[6] for r in rows] == ["compression", "compression", "eviction"]
    assert all(isinstance(r[7], float) for r in rows)
    assert sqlite_rows(path, "PRAGMA journal_mode") == [("wal",)]
    with SQLiteArchive(str(path)) as reopened:  # a new process resuming the session
        assert reopened.list("t1") == conversation()[:3]
        reopened.put("t1", [HumanMessage("later", id="m9")], reason="compression")
        assert ids(reopened.list("t1")) == ["m1", "m2", "m3", "m9"]


def test_archive_from_url(tmp_path: Path) -> None:
    assert isinstance(archive_from_url(None), InMemoryArchive)
    assert isinstance(archive_from_url("memory://"), InMemoryArchive)
    file_archive = archive_from_url(f"sqlite:///{tmp_path}/a.db")  # absolute: sqlite:////tmp/...
    assert isinstance(file_archive, SQLiteArchive)
    assert file_archive.path == f"{tmp_path}/a.db"
    file_archive.put("t1", [HumanMessage("x", id="m1")], reason="x")
    file_archive.close()
    assert (tmp_path / "a.db").exists()
    in_memory = archive_from_url("sqlite:///:memory:")
    assert isinstance(in_memory, SQLiteArchive) and in_memory.path == ":memory:"
    in_memory.close()


@pytest.mark.parametrize(
    "url", ["postgresql://bob:hunter2@db.internal:5432/app", "redis://h", "sqlite:///", "memory"]
)
def test_archive_from_url_refuses_unknown_urls_without_leaking_passwords(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        archive_from_url(url)
    assert info.value.field == "archive_url"
    assert "hunter2" not in str(info.value)
    assert redact_url(url) in str(info.value)
