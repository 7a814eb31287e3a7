"""The event log contract, on every event sink backend: entries read back in ``seq``
order, whole; a re-run step's entries written once; threads and namespaces apart;
concurrent writers lose nothing; async and sync the same; everything survives a reopen.

Moved here from tests/test_persistence.py, which checked the sinks' idempotence and
isolation; an event sink has no in-memory backend (see ``backends.KINDS``).
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

import pytest

from langgraph_ctx.state import LedgerEntry
from tests.storage.conformance.backends import Backend


def entry(seq: int, kind: str = "utilization", node: str = "call_llm", **data: Any) -> LedgerEntry:
    return LedgerEntry(seq=seq, kind=kind, node=node, ts=1_700_000_000.25 + seq, data=data)


def test_event_sinks_are_idempotent_on_seq(events_backend: Backend[Any]) -> None:
    sink = events_backend.store
    sink.write("t", "", [entry(0, utilization=0.5), entry(1, "compression", ratio=5.0)])
    sink.write("t", "", [entry(1, "compression", ratio=9.9), entry(2, zone="red")])  # re-run
    sink.write("t", "", [])
    got = sink.list("t")
    assert [(e["seq"], e["kind"]) for e in got] == [
        (0, "utilization"),
        (1, "compression"),
        (2, "utilization"),
    ]
    assert got[1]["data"] == {"ratio": 5.0} and got[0]["ts"] == pytest.approx(1_700_000_000.25)
    assert events_backend.rows() == 3


def test_entries_are_read_in_seq_order_whatever_the_write_order(
    events_backend: Backend[Any],
) -> None:
    sink = events_backend.store
    sink.write("t", "", [entry(5), entry(2)])
    sink.write("t", "", [entry(10), entry(0)])
    sink.write("t", "", [entry(7)])
    assert [e["seq"] for e in sink.list("t")] == [0, 2, 5, 7, 10]


def test_one_seq_from_parallel_nodes_keeps_both_in_node_order(
    events_backend: Backend[Any],
) -> None:
    # Parallel nodes of one step start from the same ledger, so they number alike;
    # the node keeps them apart, and orders them, so every backend reads one order.
    sink = events_backend.store
    sink.write("t", "", [entry(1, node="right", side="r"), entry(0, node="right")])
    sink.write("t", "", [entry(1, node="left", side="l"), entry(1, node="middle")])
    sink.write("t", "", [entry(1, node="left", side="again")])  # the left node re-run
    got = [(e["seq"], e["node"], e["data"]) for e in sink.list("t")]
    assert got == [
        (0, "right", {}),
        (1, "left", {"side": "l"}),
        (1, "middle", {}),
        (1, "right", {"side": "r"}),
    ]
    # Enough ties that a database sorts them as it likes unless told: PostgreSQL read
    # them in heap order (seq only), SQLite in its key's (node) order.
    nodes = [f"node{i:03d}" for i in range(300)]
    random.Random(7).shuffle(nodes)
    for seq in range(3):
        sink.write("many", "", [entry(seq, node=n) for n in nodes])
    read = [(e["seq"], e["node"]) for e in sink.list("many")]
    assert read == sorted(read) and len(read) == 900


def test_entries_come_back_whole(events_backend: Backend[Any]) -> None:
    sink = events_backend.store
    data = {
        "nested": {"list": [1, 2.5, "drei", None, True], "empty": {}},
        "text": "Müller — 東京 \"quoted\" 'single' \\ back",
        "big": 2**53,
        "negative": -0.125,
    }
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    written = LedgerEntry(seq=3, kind="compression", node="tiered", ts=1_750_000_000.5, data=data)
    odd = LedgerEntry(seq=4, kind="custom", node="n", ts=0.0, data={"when": when})  # type: ignore[dict-item]
    sink.write("t", "ns", [written, odd])
    back, back_odd = sink.list("t", namespace="ns")
    assert back == written
    assert isinstance(back["seq"], int) and isinstance(back["ts"], float)
    # Not JSON: kept as its text (json.dumps(default=str)), the same on every backend.
    assert back_odd["data"] == {"when": str(when)} and back_odd["ts"] == 0.0


def test_one_thread_cannot_read_anothers_events(events_backend: Backend[Any]) -> None:
    sink = events_backend.store
    sink.write("alice", "", [entry(0, secret=True)])
    sink.write("bob", "", [entry(0)])
    sink.write("alice", "researcher", [entry(0, sub=True)])
    sink.write("alice/researcher", "", [entry(0, lookalike=True)])
    assert [e["data"] for e in sink.list("alice")] == [{"secret": True}]
    assert [e["data"] for e in sink.list("bob")] == [{}]
    assert [e["data"] for e in sink.list("alice", namespace="researcher")] == [{"sub": True}]
    assert [e["data"] for e in sink.list("alice/researcher")] == [{"lookalike": True}]
    assert sink.list("carol") == []
    assert sink.list("bob", namespace="researcher") == []


def test_concurrent_writers_lose_nothing(events_backend: Backend[Any]) -> None:
    with events_backend.reopen() as other:
        sinks = [events_backend.store, other]

        def write(n: int) -> None:
            batch = [entry(2 * n, n=n), entry(2 * n + 1, n=n)]
            sinks[n % 2].write("t", "", batch)
            sinks[(n + 1) % 2].write("t", "", batch)  # the step re-run by the other process

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(write, range(40)))
        for sink in sinks:
            assert [e["seq"] for e in sink.list("t")] == list(range(80))
    assert events_backend.rows() == 80


def test_async_writes_and_reads_are_the_sync_ones(events_backend: Backend[Any]) -> None:
    sink = events_backend.store

    async def session() -> list[LedgerEntry]:
        await sink.awrite("t", "", [entry(1, zone="amber"), entry(0)])
        await sink.awrite("t", "", [entry(1, zone="changed on re-run")])
        await sink.awrite("t", "", [])
        got: list[LedgerEntry] = await sink.alist("t")
        assert await sink.alist("t", namespace="sub") == []
        return got

    got = events_backend.run(session())
    assert [(e["seq"], e["data"]) for e in got] == [(0, {}), (1, {"zone": "amber"})]
    assert sink.list("t") == got


def test_events_survive_a_reopen(events_backend: Backend[Any]) -> None:
    events_backend.store.write("t", "", [entry(0), entry(1, "compression", ratio=3.0)])
    with events_backend.reopen() as reopened:
        assert [e["kind"] for e in reopened.list("t")] == ["utilization", "compression"]
        reopened.write("t", "", [entry(1), entry(2)])
    assert [e["seq"] for e in events_backend.store.list("t")] == [0, 1, 2]
