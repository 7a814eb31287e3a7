"""A BACM session SIGKILLed between a fold and the observation it makes room for (the
fold's originals archived, the step that shows the observation not yet checkpointed)
resumes from SQLite with nothing lost, the fold applied once, and the same history as
a session that never died."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from langgraph_ctx.edits.core import is_edited
from langgraph_ctx.strategies.bacm.policy import FOLD_TOOL
from tests.adacom_worker import run_killed
from tests.bacm_worker import STEP, THREAD, TURNS, drive, session


def shape(messages: list[Any]) -> list[tuple[str, str]]:
    # A folded block's id comes from its originals' ids, and the tools node gives every
    # result a fresh random id: two runs differ in those ids, never in what was folded.
    return [(m.type, STEP.sub("c?", m.text)) for m in messages]


def sent_ids(upto: int) -> set[str]:
    """The turns' and the agent's own message ids (tool results get fresh ids)."""
    return {f"t{i}-user" for i in range(upto)} | {f"ai-{i}-call" for i in range(upto)}


@pytest.mark.slow
def test_sigkill_between_fold_and_observation_resumes_with_nothing_lost(tmp_path: Path) -> None:
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"
    killed_dir.mkdir()
    clean_dir.mkdir()
    proc = run_killed("tests.bacm_worker", str(killed_dir), "--kill-after", "2")
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    config = {"configurable": {"thread_id": THREAD}}
    with session(str(killed_dir)) as (graph, archive):
        state = graph.get_state(config)
        assert state.next == ("call_llm",), "killed in the step that applies the fold"
        messages = state.values["messages"]
        last_call = next(m for m in reversed(messages) if isinstance(m, AIMessage))
        assert FOLD_TOOL in [c["name"] for c in last_call.tool_calls]
        ack = next(m for m in messages if getattr(m, "tool_call_id", "") == "fold2")
        assert not is_edited(ack)  # the fold is not in the checkpoint ...
        live = {str(m.id) for m in messages}
        assert live & {str(m.id) for m in archive.list(THREAD)}  # ... its originals archived

        drive(graph)
        final = graph.get_state(config).values["messages"]
        live = {str(m.id) for m in final}
        kept = {str(m.id) for m in archive.list(THREAD)}
        assert sent_ids(TURNS) <= live | kept  # every step: active or archived
        assert len(live) == len(final)  # nothing applied twice
        calls = {c["id"] for m in final if isinstance(m, AIMessage) for c in m.tool_calls}
        assert calls == {m.tool_call_id for m in final if isinstance(m, ToolMessage)}
        killed = shape(final)

    with session(str(clean_dir)) as (graph, _):
        drive(graph)
        clean = shape(graph.get_state(config).values["messages"])
    assert killed == clean  # the resumed session is the one that never died
    assert sum("Folded steps" in text for _, text in clean) >= 2
