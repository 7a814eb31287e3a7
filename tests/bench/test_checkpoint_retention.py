"""The storage bound of issue 36, on the agent a user gets: ``create_context_agent`` on a
SQLite URL, its default retention (the latest 10 checkpoints), recall on, a 128K
window, 1,000 turns of benchmarks/checkpoint_retention.py's workload (a 2 KB tool page
and a reply a turn).

The bound: the checkpoints a thread keeps take at most ``KEPT_BOUND`` however long the
session (they hold at most a window of history each), and the file at 1,000 turns is
under ``FILE_BOUND``; the rest of the file is the archive (every original a compression
replaced, kept on purpose) and the event table, which grow with the turns. Keeping
every checkpoint, as LangGraph does, passes ``FILE_BOUND`` before turn 70 (a full copy
of the history in each of about six checkpoints a turn). benchmarks/RESULTS.md has the
same at 2,000 turns."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from checkpoint_retention import agent, ask, config_of, file_size, manifest, reply, verify
from langchain_core.messages import HumanMessage

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.inspect import inspect_session
from langgraph_ctx.testing import ScriptedChatModel

TURNS = 1_000
KEPT_BOUND = 8_000_000
"""Bytes of the checkpoints kept (with their writes), as ``inspect`` counts them:
10 checkpoints of at most a 128K window of history (about 0.5 MB of text) each."""
FILE_BOUND = 48_000_000
"""Bytes of the SQLite file with its write-ahead log at 1,000 turns."""


def test_a_thousand_turn_session_at_128k_stays_under_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "session.sqlite"
    url = f"sqlite:///{path}"
    graph = create_context_agent(
        ScriptedChatModel(default=reply, report_usage=False, keep_calls=0),
        [manifest],
        checkpointer=url,  # keep_checkpoints left at its default
        always_include=["manifest"],
        recall=True,
        think=False,
        budget=Budget.for_window(128_000),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    kept = []
    for i in range(TURNS):
        graph.invoke({"messages": [HumanMessage(f"Read page {i}.", id=f"u{i}")]}, config)
        if i + 1 in (TURNS // 2, TURNS):
            seen = inspect_session(url, "t")
            assert seen.checkpoints == 10
            kept.append(seen.checkpoint_bytes)
    assert max(kept) < KEPT_BOUND, kept
    assert file_size(path) < FILE_BOUND, file_size(path)
    seen = inspect_session(url, "t")
    assert seen.archive_rows > TURNS  # compressions archived the originals: nothing lost
    # The thread resumes whole from what is kept.
    state = graph.get_state(config)
    assert not state.tasks and state.values["messages"][-1].text == f"Noted crate {TURNS - 1}."


def test_the_benchmarks_resume_check_finds_a_lost_and_a_foreign_message(tmp_path: Path) -> None:
    """benchmarks/checkpoint_retention.py asserts, not only measures: its check passes on
    two threads pruned to 3 checkpoints at 4K (compressed, so most originals are only in
    the archive), and fails on one archived original deleted, or on another thread's
    message in a state."""
    url = f"sqlite:///{tmp_path / 'session.sqlite'}"
    graph = agent(url, "tiered", 3, 4_000)
    for i in range(12):
        for thread in ("t0", "t1"):
            graph.invoke({"messages": [ask(thread, i)]}, config_of(thread))
    seen = verify(url, "tiered", 3, 4_000, ["t0", "t1"], 12, play=True)
    assert seen["archived"] > seen["in_state"]  # the check read originals from the archive
    with sqlite3.connect(tmp_path / "session.sqlite") as db:
        gone = db.execute(
            "DELETE FROM lgctx_archive WHERE thread_id = 't1' AND message_id = 'u1'"
        ).rowcount
    assert gone == 1
    with pytest.raises(AssertionError, match="t1: u1 in neither state nor archive"):
        verify(url, "tiered", 3, 4_000, ["t0", "t1"], 13, play=False)
    stray = HumanMessage("[t1] Read page 0.", id="stray")
    graph.update_state(config_of("t0"), {"messages": [stray]})
    with pytest.raises(AssertionError, match=r"t0: holds text of \['t1'\]"):
        verify(url, "tiered", 3, 4_000, ["t0"], 13, play=False)
