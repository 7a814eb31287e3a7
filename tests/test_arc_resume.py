"""A session SIGKILLed in the middle of an ARC update (inside the manager's background
fold, or after the fold's archive write and before its checkpoint) resumes from SQLite
with nothing lost, nothing applied twice, and ends as the session that never died."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from tests.adacom_worker import THREAD, TURNS, run_killed, turn
from tests.arc_worker import drive, session


def sent_ids(upto: int) -> set[str]:
    return {str(m.id) for i in range(upto) for m in turn(i)["messages"]}


def shape(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in messages]


@pytest.mark.parametrize("kill", [["--kill-in-update", "5"], ["--kill-after", "4"]])
@pytest.mark.slow
def test_sigkill_mid_update_resumes_with_nothing_lost(tmp_path: Path, kill: list[str]) -> None:
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"
    killed_dir.mkdir()
    clean_dir.mkdir()
    proc = run_killed("tests.arc_worker", str(killed_dir), *kill)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    config = {"configurable": {"thread_id": THREAD}}
    with session(str(killed_dir)) as (graph, archive):
        state = graph.get_state(config)
        done = int(state.values["session"]["turns"])
        assert 0 < done < TURNS
        live = {str(m.id) for m in state.values["messages"]}
        kept = {str(m.id) for m in archive.list(THREAD)}
        assert sent_ids(done) <= live | kept  # what was committed is all there

        drive(graph)
        final = graph.get_state(config).values
        messages = final["messages"]
        live = {str(m.id) for m in messages}
        kept = {str(m.id) for m in archive.list(THREAD)}
        assert sent_ids(TURNS) <= live | kept  # every message sent: active or archived
        assert len(live) == len(messages)  # nothing applied twice
        calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        assert calls == {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        memory = messages[2].text
        for i in range(TURNS - 1):  # every folded step is in the memory
            assert f'"page": {i}' in memory, (i, memory)
        killed = shape(messages)

    with session(str(clean_dir)) as (graph, _):
        drive(graph)
        clean = shape(graph.get_state(config).values["messages"])
    assert killed == clean  # the resumed session is the one that never died
