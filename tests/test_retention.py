"""Checkpoint retention (issue 36): a thread keeps its latest N checkpoints, on real SQLite
files and a real PostgreSQL, and loses nothing a resume, a pending write or a delta
channel's rebuild needs.

Agents are the prebuilt ones (``tests/retention_worker.py``: each turn a tool call and a
reply), in this process or, where a process must die, in one of their own.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.inspect import inspect_session
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.state import delta_messages
from langgraph_ctx.storage.checkpointers import (
    archive_from_url,
    async_checkpointer_from_url,
    checkpointer_from_url,
)
from langgraph_ctx.storage.retention import DEFAULT_KEEP
from langgraph_ctx.testing import ScriptedChatModel
from tests.retention_worker import agent, turn

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.sqlite'}"
    return str(request.getfixturevalue("postgres_db"))


def counts(url: str, thread: str = "t") -> dict[str, int]:
    """Checkpoints per namespace of ``thread``."""
    sql = "SELECT checkpoint_ns, count(*) FROM checkpoints WHERE thread_id = {} GROUP BY 1"
    return {str(ns): int(n) for ns, n in _query(url, sql, (thread,))}


def _query(url: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            return conn.execute(sql.replace("{}", "?"), params).fetchall()
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql.replace("{}", "%s").encode(), params).fetchall()


def orphans(url: str) -> list[tuple[Any, ...]]:
    """Writes whose checkpoint is gone; in PostgreSQL also blobs no checkpoint uses."""
    writes = "writes" if url.startswith("sqlite") else "checkpoint_writes"
    found = _query(
        url,
        f"SELECT w.checkpoint_id FROM {writes} w WHERE NOT EXISTS (SELECT 1 FROM checkpoints c"
        " WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns"
        " AND c.checkpoint_id = w.checkpoint_id) AND w.thread_id = {}",
        ("t",),
    )
    if not url.startswith("sqlite"):
        found += _query(
            url,
            "SELECT b.channel, b.version FROM checkpoint_blobs b WHERE NOT EXISTS ("
            " SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id"
            " AND c.checkpoint_ns = b.checkpoint_ns"
            " AND c.checkpoint ->> 'channel_versions' IS NOT NULL"
            " AND (c.checkpoint -> 'channel_versions' ->> b.channel) = b.version)"
            " AND b.thread_id = {}",
            ("t",),
        )
    return found


def kept_ids(url: str, values: dict[str, Any], thread: str = "t") -> list[str]:
    """Message ids in the state, then the archive's (what compression took out)."""
    with archive_from_url(url) as archive:  # type: ignore[attr-defined]
        archived = [str(m.id) for m in archive.list(thread)]
    return [str(m.id) for m in values["messages"]] + archived


def expected(turns: range) -> set[str]:
    return {f"{kind}{i}" for i in turns for kind in ("u", "call-", "a")}


@pytest.mark.slow
def test_a_thread_keeps_its_latest_n_checkpoints_over_30_turns(url: str) -> None:
    graph = agent(url, "tiered", "4", None)
    config = {"configurable": {"thread_id": "t"}}
    seen = []
    for i in range(30):
        graph.invoke({"messages": [turn(i)]}, config)
        seen.append(counts(url))
    assert all(c == {"": 4} for c in seen), seen
    assert orphans(url) == []
    ids = kept_ids(url, graph.get_state(config).values)
    assert expected(range(30)) <= set(ids)
    assert len([i for i in ids if i in expected(range(30))]) == len(expected(range(30)))

    # Time travel: every kept checkpoint loads, and a fork from the oldest runs on.
    history = list(graph.get_state_history(config))
    assert len(history) == 4
    oldest = history[-1]
    forked = graph.invoke({"messages": [turn(99)]}, oldest.config)
    ids = [str(m.id) for m in forked["messages"]]
    assert (ids[-4], ids[-3], ids[-1]) == ("u99", "call-99", "a99")  # the tool result between
    # What the fork compressed away is in the archive.
    assert {str(m.id) for m in oldest.values["messages"]} <= set(kept_ids(url, forked))


@pytest.mark.slow
def test_keep_all_keeps_every_checkpoint(tmp_path: Path) -> None:
    config = {"configurable": {"thread_id": "t"}}
    kept = f"sqlite:///{tmp_path / 'kept.sqlite'}"
    graph = agent(kept, "tiered", "all", None)
    conn = sqlite3.connect(tmp_path / "plain.sqlite", check_same_thread=False)
    plain = create_context_agent(
        ScriptedChatModel(default=lambda m: AIMessage("ok"), report_usage=False),
        checkpointer=SqliteSaver(conn),
        think=False,
    )
    made = []
    for i in range(6):
        graph.invoke({"messages": [turn(i)]}, config)
        plain.invoke({"messages": [HumanMessage(f"hello {i}")]}, config)
        made.append(len(list(plain.get_state_history(config))))
    assert counts(kept)[""] == len(list(graph.get_state_history(config))) > DEFAULT_KEEP
    assert made[-1] == 6 * made[0] > DEFAULT_KEEP  # a saver of the caller's own: never pruned
    conn.close()


@pytest.mark.slow
def test_a_delta_state_rebuilds_every_message_after_pruning(url: str, tmp_path: Path) -> None:
    """PACE's DeltaContextState stores a step's new messages, rebuilt from the last full
    copy: the kept checkpoints hold one, and a new graph reads every message back."""
    config = {"configurable": {"thread_id": "t"}}
    graph = agent(url, "pace", "3", None)
    whole = f"sqlite:///{tmp_path / 'whole.sqlite'}"
    reference = agent(whole, "pace", "all", None)
    for i in range(12):
        graph.invoke({"messages": [turn(i)]}, config)
        reference.invoke({"messages": [turn(i)]}, config)
        assert sum(counts(url).values()) <= 2 * 3  # the documented bound: twice keep
    assert sum(counts(whole).values()) > 40
    assert orphans(url) == []
    again = agent(url, "pace", "3", None).get_state(config).values["messages"]
    want = reference.get_state(config).values["messages"]
    assert [(m.type, m.text) for m in again] == [(m.type, m.text) for m in want]
    assert [m.id for m in again if m.type != "tool"] == [m.id for m in want if m.type != "tool"]
    assert expected(range(12)) <= {str(m.id) for m in again}


class Counter(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(delta_messages, snapshot_frequency=4)]


def test_a_graph_of_its_own_keeps_the_ancestors_its_delta_channel_needs(tmp_path: Path) -> None:
    """Without the agent, the saver does not know the channel's reducer: it keeps the
    ancestors back to the last full copy instead."""
    url = f"sqlite:///{tmp_path / 'own.sqlite'}"
    builder = StateGraph(Counter)
    builder.add_node("echo", lambda s: {"messages": [AIMessage(f"echo {len(s['messages'])}")]})
    builder.add_edge(START, "echo")
    config = {"configurable": {"thread_id": "t"}}
    with checkpointer_from_url(url, keep_checkpoints=2) as saver:
        graph = builder.compile(checkpointer=saver)
        for i in range(30):
            graph.invoke({"messages": [HumanMessage(f"m{i}", id=f"m{i}")]}, config)
            assert sum(counts(url).values()) <= 2 + 2 * 4
    with checkpointer_from_url(url, keep_checkpoints=2) as saver:
        values = builder.compile(checkpointer=saver).get_state(config).values
    assert [m.text for m in values["messages"]] == [
        t for i in range(30) for t in (f"m{i}", f"echo {2 * i + 1}")
    ]


def spawn(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.retention_worker", "--url", url, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("strategy", ["tiered", "pace"])
@pytest.mark.slow
def test_a_session_killed_mid_turn_resumes_with_every_message(url: str, strategy: str) -> None:
    killed = spawn(url, "--strategy", strategy, "--keep", "3", "--turns", "0:10", "--kill-at", "6")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    resumed = spawn(url, "--strategy", strategy, "--keep", "3", "--resume", "--turns", "7:12")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    state_ids = json.loads(resumed.stdout.strip().splitlines()[-1])["ids"]
    with archive_from_url(url) as archive:  # type: ignore[attr-defined]
        ids = state_ids + [str(m.id) for m in archive.list("t")]
    assert expected(range(12)) <= set(ids)  # every message: in the state, or archived
    in_state = [i for i in state_ids if i in expected(range(12))]
    assert len(in_state) == len(set(in_state))  # none twice
    assert "a6" in state_ids  # the killed turn's reply: resume ran the pending call
    assert sum(counts(url).values()) <= (3 if strategy == "tiered" else 6)
    assert orphans(url) == []


def test_async_savers_prune_too(url: str) -> None:
    async def run() -> dict[str, int]:
        async with async_checkpointer_from_url(url, keep_checkpoints=3) as saver:
            model = ScriptedChatModel(default=lambda m: AIMessage("ok"), report_usage=False)
            graph = create_context_agent(model, checkpointer=saver, think=False)
            for i in range(6):
                await graph.ainvoke(
                    {"messages": [HumanMessage(f"hi {i}")]}, {"configurable": {"thread_id": "t"}}
                )
            state = await graph.aget_state({"configurable": {"thread_id": "t"}})
            assert len(state.values["messages"]) == 12
        return counts(url)

    assert asyncio.run(run()) == {"": 3}


@pytest.mark.slow
def test_inspect_says_what_a_thread_keeps(tmp_path: Path) -> None:
    config = {"configurable": {"thread_id": "t"}}
    sizes = {}
    for keep in ("3", "all"):
        url = f"sqlite:///{tmp_path / f'{keep}.sqlite'}"
        graph = agent(url, "tiered", keep, None)
        for i in range(8):
            graph.invoke({"messages": [turn(i)]}, config)
        seen = inspect_session(url, "t")
        assert seen.checkpoints == sum(counts(url).values())
        sizes[keep] = seen.checkpoint_bytes
    assert seen.checkpoints > 3
    assert 0 < sizes["3"] < sizes["all"] / 3


@pytest.mark.parametrize("bad", [0, -2, "some", True, 2.5])
def test_a_bad_keep_is_a_configuration_error(bad: Any, tmp_path: Path) -> None:
    at = f"sqlite:///{tmp_path / 'x.sqlite'}"
    with (
        pytest.raises(ConfigurationError, match="keep_checkpoints"),
        checkpointer_from_url(at, keep_checkpoints=bad),
    ):
        pass
    model = ScriptedChatModel(default=lambda m: AIMessage("ok"))
    with pytest.raises(ConfigurationError, match="keep_checkpoints"):
        create_context_agent(model, keep_checkpoints=bad, think=False)


def test_an_in_memory_saver_cannot_prune() -> None:
    model = ScriptedChatModel(default=lambda m: AIMessage("ok"))
    with pytest.raises(ConfigurationError, match=r"keep_checkpoints.*InMemorySaver"):
        create_context_agent(model, keep_checkpoints=3, think=False)


@pytest.mark.slow
def test_a_sub_agent_calls_namespace_goes_with_its_root_checkpoint(url: str) -> None:
    """Each delegation runs the child graph in a namespace of its own (``tools:<task>``),
    kept to N like the root while the root checkpoint it started from is kept."""
    from langchain_core.messages import ToolMessage

    from langgraph_ctx.agent import SubAgents, SubAgentSpec
    from tests.test_subagents import get_rates

    def parent(msgs: list[Any]) -> AIMessage:
        if isinstance(msgs[-1], ToolMessage):
            return AIMessage("done")
        n = sum(1 for m in msgs if m.type == "human")
        call = {"name": "delegate", "id": f"d{n}", "args": {"agent": "rates", "task": f"{n}"}}
        return AIMessage("", tool_calls=[call])

    def child(msgs: list[Any]) -> AIMessage:
        if isinstance(msgs[-1], ToolMessage):
            return AIMessage("3.2 USD/kg")
        return AIMessage("", tool_calls=[{"name": "get_rates", "args": {"route": "R"}, "id": "k"}])

    rates = SubAgentSpec(
        name="rates",
        description="rates specialist",
        system_prompt="You are the rates specialist.",
        model=ScriptedChatModel(default=child, report_usage=False),
        kind="tool",
        tools=[get_rates],
    )
    graph = create_context_agent(
        ScriptedChatModel(default=parent, report_usage=False),
        [SubAgents([rates]).tool()],
        always_include=["delegate"],
        think=False,
        checkpointer=url,
        keep_checkpoints=3,
    )
    config = {"configurable": {"thread_id": "t"}}
    for i in range(6):
        graph.invoke({"messages": [HumanMessage(f"turn {i}")]}, config)
        kept = counts(url)
        calls = [ns for ns in kept if ns.startswith("tools:")]
        assert kept[""] == 3 and len(calls) == 1 and kept[calls[0]] <= 3, kept
    answers = [m.text for m in graph.get_state(config).values["messages"] if m.type == "tool"]
    assert len(answers) == 6 and all("3.2 USD/kg" in a for a in answers)
    assert orphans(url) == []


def test_blobs_a_killed_put_left_are_swept(postgres_db: str) -> None:
    """A put writes its blobs before its checkpoint; a process killed between the two
    leaves blobs no checkpoint reads (the kill test above lands there by chance)."""
    graph = agent(postgres_db, "tiered", "3", None)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [turn(0)]}, config)
    stray = ("t", "", "messages", f"{1:032}.0.5", "msgpack", b"\x90")
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            stray,
        )
    assert orphans(postgres_db) == [("messages", stray[3])]
    graph.invoke({"messages": [turn(1)]}, config)
    assert orphans(postgres_db) == []
