"""The archive contract, on every archive backend: originals by id, idempotent
re-archive, order, thread and namespace isolation, refusal, concurrency, async, reopen.

Moved here from tests/test_archive.py (memory and SQLite only) and
tests/test_persistence.py (PostgreSQL only), which checked one backend each.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.middleware.glimpse import NOT_FOUND, ArchiveSource, GlimpseRequest
from langgraph_ctx.storage.archive import MessageArchive
from tests.storage.conformance.backends import Backend


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


def ids(messages: list[BaseMessage]) -> list[str | None]:
    return [m.id for m in messages]


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


def test_put_is_idempotent(archive: MessageArchive) -> None:
    originals = conversation()
    archive.put("t1", originals[:3], reason="compression")
    archive.put("t1", originals[:3], reason="compression")  # a retried step
    archive.put("t1", originals[2:], reason="retry")  # overlaps by one
    archive.put("t1", [originals[4], originals[4]], reason="dup in one batch")
    archive.put("t1", [], reason="an empty batch writes nothing")

    assert ids(archive.list("t1")) == ["m1", "m2", "m3", "m4", "m5"]


def test_put_is_idempotent_in_storage(durable_archive: Backend[Any]) -> None:
    archive, originals = durable_archive.store, conversation()
    archive.put("t1", originals[:3], reason="compression")
    archive.put("t1", originals[:3], reason="compression")
    archive.put("t1", [originals[0], *originals[3:], originals[4]], reason="retry")
    assert durable_archive.rows() == 5  # no duplicate row under any of them


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
    assert ids(archive.list("bob")) == ["m1"]
    assert ids(archive.list("alice", namespace="sub")) == ["m2", "m1"]
    sub = archive.get("alice", "m1", namespace="sub")
    assert sub is not None and sub.content == "sub's m1"
    assert archive.get("alice", "m2") is None
    assert archive.get("bob", "m2", namespace="sub") is None
    assert archive.list("carol") == []
    assert archive.get("carol", "m1") is None
    # A thread id that another one begins with, or a namespace that looks like a path.
    archive.put("alice/sub", [HumanMessage("lookalike", id="m3")], reason="x")
    assert archive.get("alice", "m3") is None
    assert archive.get("alice", "m3", namespace="sub") is None
    assert ids(archive.list("alice/sub")) == ["m3"]


def test_a_message_without_id_is_refused_and_nothing_is_written(
    archive: MessageArchive,
) -> None:
    with pytest.raises(ConfigurationError, match="no id") as info:
        archive.put("t1", [HumanMessage("ok", id="m1"), HumanMessage("no id")], reason="x")
    assert info.value.field == "message.id"
    assert archive.list("t1") == []
    with pytest.raises(ConfigurationError) as empty:
        archive.put("", [HumanMessage("ok", id="m1")], reason="x")
    assert empty.value.field == "thread_id"
    with pytest.raises(ConfigurationError) as bad:
        archive.put("t1", ["not a message"], reason="x")  # type: ignore[list-item]
    assert bad.value.field == "messages"
    assert archive.list("t1") == [] and archive.list("") == []


def test_concurrent_writers_get_unique_positions(archive: MessageArchive) -> None:
    def write(n: int) -> None:
        archive.put("t1", [HumanMessage(f"entry {n}", id=f"m{n}")], reason="x")
        archive.put("t1", [HumanMessage(f"entry {n}", id=f"m{n}")], reason="retry")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(64)))
    assert sorted(ids(archive.list("t1")), key=str) == sorted((f"m{n}" for n in range(64)), key=str)
    positions = [h.position for h in archive.search("t1", "entry", limit=100)]
    assert len(positions) == 64 and len(set(positions)) == 64


def test_two_stores_on_one_storage_write_concurrently_without_loss(
    durable_archive: Backend[Any],
) -> None:
    # Two processes' stores on one database: each its own connection (or pool).
    with durable_archive.reopen() as other:
        stores = [durable_archive.store, other]

        def write(n: int) -> None:
            stores[n % 2].put("t1", [HumanMessage(f"n{n}", id=f"m{n}")], reason="x")
            stores[(n + 1) % 2].put("t1", [HumanMessage(f"n{n}", id=f"m{n}")], reason="retry")

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(write, range(48)))
        for store in stores:
            assert sorted(ids(store.list("t1")), key=str) == sorted(
                (f"m{n}" for n in range(48)), key=str
            )
    assert durable_archive.rows() == 48


def test_async_round_trip_and_idempotence(archive_backend: Backend[Any]) -> None:
    archive, originals = archive_backend.store, conversation()

    async def session() -> None:
        await archive.aput("t1", originals, reason="compression")
        await archive.aput("t1", originals, reason="compression")
        assert await archive.alist("t1") == originals
        assert await archive.aget("t1", "m2") == originals[1]
        assert await archive.aget("t2", "m2") is None
        assert await archive.alist("t1", namespace="sub") == []
        with pytest.raises(ConfigurationError):
            await archive.aput("t1", [HumanMessage("no id")], reason="x")

    archive_backend.run(session())
    # What the async methods wrote, the sync ones read: one store, two doors.
    assert archive.list("t1") == originals


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=4), max_size=6))
def test_any_sequence_of_puts_lists_first_writes_in_order(
    archive: MessageArchive, batches: list[list[str]]
) -> None:
    thread = uuid.uuid4().hex  # one store serves every example: each its own thread
    for batch in batches:
        archive.put(thread, [HumanMessage(i, id=i) for i in batch], reason="x")
    assert ids(archive.list(thread)) == list(dict.fromkeys(i for b in batches for i in b))


def test_originals_survive_a_reopen(durable_archive: Backend[Any]) -> None:
    durable_archive.store.put("t1", conversation()[:3], reason="compression")
    durable_archive.store.put("t1", conversation()[3:4], reason="x", namespace="sub")
    with durable_archive.reopen() as reopened:  # a new process resuming the session
        assert reopened.list("t1") == conversation()[:3]
        assert reopened.get("t1", "m4", namespace="sub") == conversation()[3]
        assert [h.message_id for h in reopened.search("t1", "refund")] == ["m1"]
        reopened.put("t1", [HumanMessage("later", id="m9"), conversation()[0]], reason="x")
        assert ids(reopened.list("t1")) == ["m1", "m2", "m3", "m9"]
    assert ids(durable_archive.store.list("t1")) == ["m1", "m2", "m3", "m9"]


def test_postgres_archive_reports_its_size(postgres_archive: Backend[Any]) -> None:
    # An extended capability (as LangGraph's suite has optional ones): PostgreSQL alone.
    archive = postgres_archive.store
    first = [HumanMessage("a", id="m1"), AIMessage("b", id="m2")]
    archive.put("t", first, reason="compressed")
    archive.put("t", first, reason="compressed")  # a retried step
    archive.put("t", [HumanMessage("c", id="m3"), first[0]], reason="compressed")
    archive.put("t", [HumanMessage("d", id="m4")], reason="x", namespace="sub")
    archive.put("u", [HumanMessage("e", id="m1")], reason="x")
    got = archive.get("t", "m2")
    assert isinstance(got, AIMessage) and got.text == "b"
    rows, tokens = archive.size("t")
    assert rows == 4 and tokens > 0  # every namespace of the thread, no other thread
    assert archive.size("nobody") == (0, 0)


# -- glimpse over any archive ------------------------------------------------------------


def glimpse(archive: MessageArchive, thread: str, reference: str) -> Any:
    return ArchiveSource(archive).resolve(GlimpseRequest(reference, thread, "", []))


def test_glimpse_finds_this_threads_originals_and_says_not_found(archive: MessageArchive) -> None:
    archive.put("t1", conversation(), reason="compression")
    archive.put("t2", [HumanMessage("t2's secret vessel", id="x7")], reason="compression")
    ((label, text),) = glimpse(archive, "t1", "m3")
    assert label == "m3" and text.startswith('{"amount": "12480.50"}')
    # Another thread's id is not this thread's: nothing, never the other's text.
    assert glimpse(archive, "t1", "x7") is None
    assert glimpse(archive, "t2", "m3") is None
    # An id no message has, but one mentions: "not found" first, then what mentions it.
    found = glimpse(archive, "t1", "INV-2024-0931")
    assert found[0][0] == NOT_FOUND and "INV-2024-0931" in found[0][1]
    assert {label for label, _ in found[1:]} == {"m1", "m2"}
    assert glimpse(archive, "nobody", "m3") is None
