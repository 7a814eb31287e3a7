"""The archive of original messages: round-trips, idempotence, scoping, order, URLs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive, SQLiteArchive
from langgraph_ctx.storage.checkpointers import archive_from_url
from langgraph_ctx.storage.urls import redact_url


def conversation() -> list[BaseMessage]:
    """One message of every kind, with every field a round-trip could lose."""
    return [
        HumanMessage("Refund INV-2024-0931, please.", id="m1", name="maria"),
        AIMessage(
            "Looking it up.",
            id="m2",
            tool_calls=[
                {
                    "name": "query_orders",
                    "args": {"invoice": "INV-2024-0931", "limit": 5, "filters": {"open": True}},
                    "id": "call_1",
                    "type": "tool_call",
                }
            ],
            additional_kwargs={"reasoning": {"steps": 2}},
        ),
        ToolMessage('{"amount": "12480.50"}', tool_call_id="call_1", id="m3", name="query_orders"),
        SystemMessage(
            "[Conversation Summary] Maria asked about a refund.",
            id="m4",
            additional_kwargs={"lgctx": {"summary": {"seq": 1, "through": "m0"}}},
        ),
        AIMessage([{"type": "text", "text": "Here is the refund."}], id="m5"),
    ]


@pytest.fixture(params=["memory", "sqlite"])
def archive(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MessageArchive]:
    if request.param == "memory":
        yield InMemoryArchive()
    else:
        with SQLiteArchive(str(tmp_path / "archive.db")) as sqlite_archive:
            yield sqlite_archive


def ids(messages: list[BaseMessage]) -> list[str | None]:
    return [m.id for m in messages]


def sqlite_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def test_round_trip_keeps_every_field(archive: MessageArchive) -> None:
    originals = conversation()
    archive.put("t1", originals, reason="compression")

    back = archive.list("t1")
    assert back == originals  # pydantic equality: every field
    assert [type(m) for m in back] == [type(m) for m in originals]
    ai, tool, system = back[1], back[2], back[3]
    assert isinstance(ai, AIMessage) and isinstance(tool, ToolMessage)
    assert ai.tool_calls == originals[1].tool_calls  # type: ignore[attr-defined]
    assert ai.additional_kwargs == {"reasoning": {"steps": 2}}
    assert tool.tool_call_id == "call_1" and tool.name == "query_orders"
    assert system.additional_kwargs["lgctx"]["summary"] == {"seq": 1, "through": "m0"}
    assert back[0].name == "maria"
    assert back[4].content == [{"type": "text", "text": "Here is the refund."}]
    for message in originals:
        assert message.id is not None
        assert archive.get("t1", message.id) == message


def test_archived_messages_do_not_alias_the_callers(archive: MessageArchive) -> None:
    message = HumanMessage("keep me", id="m1")
    archive.put("t1", [message], reason="compression")
    message.additional_kwargs["lgctx"] = {"pinned": True}  # mutated after archiving
    got = archive.get("t1", "m1")
    assert got is not None and got.additional_kwargs == {}
    got.content = "changed by a reader"
    assert archive.list("t1")[0].content == "keep me"


def test_put_is_idempotent(archive: MessageArchive, tmp_path: Path) -> None:
    originals = conversation()
    archive.put("t1", originals[:3], reason="compression")
    archive.put("t1", originals[:3], reason="compression")  # a retried step
    archive.put("t1", originals[2:], reason="retry")  # overlaps by one
    archive.put("t1", [originals[4], originals[4]], reason="dup in one batch")

    assert ids(archive.list("t1")) == ["m1", "m2", "m3", "m4", "m5"]
    if isinstance(archive, SQLiteArchive):
        rows = sqlite_rows(tmp_path / "archive.db", "SELECT COUNT(*) FROM lgctx_archive")
        assert rows == [(5,)]


def test_a_changed_message_under_an_archived_id_keeps_the_first_write(
    archive: MessageArchive,
) -> None:
    archive.put("t1", [HumanMessage("first", id="m1")], reason="compression")
    archive.put("t1", [HumanMessage("second", id="m1")], reason="compression")
    assert [m.content for m in archive.list("t1")] == ["first"]


def test_order_is_archive_order_not_id_order(archive: MessageArchive) -> None:
    archive.put("t1", [HumanMessage("c", id="zz")], reason="compression")
    archive.put("t1", [HumanMessage("a", id="aa"), HumanMessage("b", id="mm")], reason="x")
    archive.put("t1", [HumanMessage("d", id="bb")], namespace="other", reason="x")
    archive.put("t1", [HumanMessage("e", id="ab")], reason="x")
    assert ids(archive.list("t1")) == ["zz", "aa", "mm", "ab"]


def test_reads_are_scoped_by_thread_and_namespace(archive: MessageArchive) -> None:
    archive.put("alice", [HumanMessage("alice's", id="m1")], reason="compression")
    archive.put("bob", [HumanMessage("bob's", id="m1")], reason="compression")
    archive.put("alice", [HumanMessage("sub-agent", id="m2")], namespace="sub", reason="x")
    archive.put("alice", [HumanMessage("sub's m1", id="m1")], namespace="sub", reason="x")

    alice, bob = archive.get("alice", "m1"), archive.get("bob", "m1")
    assert alice is not None and alice.content == "alice's"
    assert bob is not None and bob.content == "bob's"
    assert ids(archive.list("alice")) == ["m1"]
    assert ids(archive.list("alice", namespace="sub")) == ["m2", "m1"]
    sub = archive.get("alice", "m1", namespace="sub")
    assert sub is not None and sub.content == "sub's m1"
    assert archive.get("alice", "m2") is None
    assert archive.get("bob", "m2", namespace="sub") is None
    assert archive.list("carol") == []
    assert archive.get("carol", "m1") is None


def test_a_message_without_id_is_refused_and_nothing_is_written(
    archive: MessageArchive,
) -> None:
    with pytest.raises(ConfigurationError) as info:
        archive.put("t1", [HumanMessage("ok", id="m1"), HumanMessage("no id")], reason="x")
    assert info.value.field == "message.id"
    assert archive.list("t1") == []
    with pytest.raises(ConfigurationError):
        archive.put("", [HumanMessage("ok", id="m1")], reason="x")


def test_concurrent_writers_get_unique_positions(archive: MessageArchive) -> None:
    def write(n: int) -> None:
        archive.put("t1", [HumanMessage(str(n), id=f"m{n}")], reason="x")
        archive.put("t1", [HumanMessage(str(n), id=f"m{n}")], reason="retry")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(64)))
    assert sorted(ids(archive.list("t1")), key=str) == sorted((f"m{n}" for n in range(64)), key=str)


async def test_async_round_trip_and_idempotence(archive: MessageArchive) -> None:
    originals = conversation()
    await archive.aput("t1", originals, reason="compression")
    await archive.aput("t1", originals, reason="compression")
    assert await archive.alist("t1") == originals
    assert await archive.aget("t1", "m2") == originals[1]
    assert await archive.aget("t2", "m2") is None
    assert await archive.alist("t1", namespace="sub") == []


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=4), max_size=6),
    st.sampled_from(["memory", "sqlite"]),
)
def test_any_sequence_of_puts_lists_first_writes_in_order(
    batches: list[list[str]], kind: str
) -> None:
    archive: MessageArchive = InMemoryArchive() if kind == "memory" else SQLiteArchive(":memory:")
    for batch in batches:
        archive.put("t", [HumanMessage(i, id=i) for i in batch], reason="x")
    assert ids(archive.list("t")) == list(dict.fromkeys(i for b in batches for i in b))
    if isinstance(archive, SQLiteArchive):
        archive.close()


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
