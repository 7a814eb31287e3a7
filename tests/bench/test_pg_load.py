"""The load and fault benchmark (benchmarks/pg_load.py): at its ``--quick`` size, three
worker processes keep every thread whole through a SIGKILL and a PostgreSQL restart; and
its after-run check finds a lost, a doubled and a foreign message when there is one.
Timings are the benchmark's business, not asserted here."""

from __future__ import annotations

from typing import Any

import pg_load
import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage

from langgraph_ctx.storage.checkpointers import archive_from_url


@pytest.mark.postgres
def test_quick_run_keeps_every_thread_through_a_kill_and_a_restart() -> None:
    out = pg_load.main(["--quick"])
    assert out is not None
    run, checked = out["run"], out["checked"]
    assert run.exits == {"w0": 0, "w1": 0, "w2": 0}, run.events
    assert any("SIGKILL" in e for e in run.events), run.events
    assert any("PostgreSQL stopped" in e for e in run.events), run.events
    assert checked["threads"] == 30
    for count in ("unfinished", "missing", "duplicated", "foreign"):
        assert checked[count] == 0, checked["problems"][:10]
    # The run did what it is meant to load: compressions into the archive, memories.
    assert checked["compressed_threads"] > 0
    assert checked["memories"] > 0


def test_check_finds_a_lost_a_doubled_and_a_foreign_message(postgres_db: str) -> None:
    threads, turns = ["o-0000", "b-0000"], 3
    pg_load.migrate(postgres_db)
    work = pg_load.Workloads(threads, turns)
    with pg_load.graphs(postgres_db, "test", work) as by_kind:
        for thread_id in threads:
            for index in range(turns):
                pg_load.play(
                    by_kind["ours" if thread_id[0] == "o" else "bare"], work, thread_id, index
                )
        clean = pg_load.check(postgres_db, threads, turns)
        assert clean["problems"] == []

        answer = work.by_thread["b-0000"].messages(turns)[-1]
        assert answer.type == "ai" and answer.text
        bare: Any = by_kind["bare"]
        lost = RemoveMessage(id="t0001-user")
        copy = AIMessage(answer.text, id="a-copy")  # the same answer under a new id
        bare.update_state(
            pg_load.config_for("b-0000"), {"messages": [lost, copy]}, as_node="call_llm"
        )
    with archive_from_url(postgres_db) as archive:  # type: ignore[attr-defined]
        stray = HumanMessage("[b-0000] a message of the other thread", id="stray")
        archive.put("o-0000", [stray], reason="compression")

    found = pg_load.check(postgres_db, threads, turns)
    assert found["missing"] == 1, found["problems"]
    assert found["duplicated"] == 1, found["problems"]
    assert found["foreign"] == 1, found["problems"]
    assert found["unfinished"] == 0


def test_check_counts_repeated_texts_of_the_workload_as_the_messages_they_are(
    postgres_db: str,
) -> None:
    """Thread 0285's first 31 turns say an answer twice (turns 4 and 29) and an update
    twice, once with a fact added (turns 29 and 30). The full run flagged such pairs as
    one message held twice, judging by text; they are two planned ids. And turn 29's
    own answer is made (the scripted model used to answer it with turn 30's)."""
    thread_id, turns = "b-0285", 31
    pg_load.migrate(postgres_db)
    work = pg_load.Workloads([thread_id], turns)
    planned = work.by_thread[thread_id].messages(turns)
    texts = [m.text for m in planned if m.type == "ai" and m.text]
    assert len(texts) > len(set(texts))  # the workload does repeat an answer
    with pg_load.graphs(postgres_db, "test", work) as by_kind:
        for index in range(turns):
            pg_load.play(by_kind["bare"], work, thread_id, index)
    checked = pg_load.check(postgres_db, [thread_id], turns)
    assert checked["problems"] == []
