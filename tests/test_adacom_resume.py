"""A session SIGKILLed in the middle of an AdaCoM edit (originals archived, rewrite not
yet checkpointed) resumes from SQLite with nothing lost and nothing applied twice."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from tests.adacom_worker import THREAD, TURNS, drive, run_killed, session, turn


def sent_ids(upto: int) -> set[str]:
    return {str(m.id) for i in range(upto) for m in turn(i)["messages"]}


def shape(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in messages]


@pytest.mark.slow
def test_sigkill_mid_edit_resumes_with_nothing_lost(tmp_path: Path) -> None:
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"
    killed_dir.mkdir()
    clean_dir.mkdir()
    proc = run_killed("tests.adacom_worker", str(killed_dir), "--kill-after", "4")
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    config = {"configurable": {"thread_id": THREAD}}
    with session(str(killed_dir)) as (graph, archive):
        state = graph.get_state(config)
        assert state.tasks, "killed inside a step: its rewrite must not be checkpointed"
        done = int(state.values["session"]["turns"])
        live = {str(m.id) for m in state.values["messages"]}
        kept = {str(m.id) for m in archive.list(THREAD)}
        # The edit in flight archived its originals, and the state still holds them.
        assert live & kept
        assert sent_ids(done) <= live | kept

        drive(graph)
        final = graph.get_state(config).values
        live = {str(m.id) for m in final["messages"]}
        kept = {str(m.id) for m in archive.list(THREAD)}
        assert sent_ids(TURNS) <= live | kept  # every message sent: active or archived
        assert len(live) == len(final["messages"])  # nothing applied twice
        calls = {
            c["id"] for m in final["messages"] if isinstance(m, AIMessage) for c in m.tool_calls
        }
        assert calls == {m.tool_call_id for m in final["messages"] if isinstance(m, ToolMessage)}
        killed = shape(final["messages"])

    with session(str(clean_dir)) as (graph, _):
        drive(graph)
        clean = shape(graph.get_state(config).values["messages"])
    assert killed == clean  # the resumed session is the one that never died
