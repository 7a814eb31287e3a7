"""Compression prepared ahead: applied only while it still describes the history,
equivalent to the synchronous path, lost without harm when the process dies."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    ContextState,
    Pipeline,
    PreflightCheck,
    TieredCompression,
    call_llm_node,
    is_summary,
)
from langgraph_ctx.compression.summarizers import ExtractiveSummarizer
from langgraph_ctx.markers import summary_info
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
FILLER = (
    "Reviewed the vendor contract clauses and the shipping schedule for the next quarter, "
    "cross-checking invoice totals against the ledger entries recorded by finance. "
) * 2


def turn(i: int, mark: str = "") -> list[BaseMessage]:
    return [
        HumanMessage(f"{mark}Turn {i}: check invoice INV-{i:04d}. " + FILLER, id=f"u{i}"),
        AIMessage(f"Invoice INV-{i:04d} is settled. " + FILLER, id=f"a{i}"),
    ]


class Heads:
    """A summarizer whose summary names every message it covers by id and first
    words: what was summarized is visible in the summary."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        self.calls.append([str(m.id) for m in messages])
        return "; ".join(f"{m.id}={m.text.split(':')[0]}" for m in messages)

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        return self.summarize(messages, previous=previous, max_tokens=max_tokens)


class Session:
    def __init__(self, *, window: int = 4_000, **options: Any) -> None:
        self.model = ScriptedChatModel(default="ok", report_usage=False)
        self.archive = InMemoryArchive()
        self.compression = TieredCompression(archive=self.archive, **options)
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(self.model))
        builder.add_edge(START, "call_llm")
        self.pipeline = Pipeline(
            [PreflightCheck(), self.compression], budget=Budget.for_window(window)
        )
        self.graph = self.pipeline.attach(builder).compile(checkpointer=InMemorySaver())
        self.config: Any = {"configurable": {"thread_id": "t"}}

    def pending(self) -> Any:
        return self.pipeline.session_for(self.config, {}).scratch.get("compression_prepared")

    def settle(self) -> None:
        """Let a preparation under way finish: the model's latency, in a real run."""
        pending = self.pending()
        if pending is not None:
            pending.future.exception(timeout=30)

    def send(self, messages: list[BaseMessage]) -> None:
        self.graph.invoke({"messages": messages}, self.config)

    def messages(self) -> list[BaseMessage]:
        return list(self.graph.get_state(self.config).values["messages"])

    def compressions(self) -> list[dict[str, Any]]:
        ledger = self.graph.get_state(self.config).values.get("context_ledger", [])
        return [e["data"] for e in ledger if e["kind"] == "compression"]


def until_compressed(session: Session, start: int, *, settle: bool = True) -> int:
    """Feed turns from ``start`` until the first compression; the next turn index."""
    i = start
    while not session.compressions():
        session.send(turn(i))
        if settle:
            session.settle()
        i += 1
        assert i < start + 200, "no compression"
    return i


def test_a_ready_prepared_summary_is_applied_and_equals_the_synchronous_one() -> None:
    prepared = Session(summarizer=Heads())
    synchronous = Session(summarizer=Heads(), prepare_ahead=False)
    until_compressed(prepared, 0)
    until_compressed(synchronous, 0)
    [event] = prepared.compressions()
    assert event["path"] == "prepared" and event["prepared"] in ("ready", "short")
    assert synchronous.compressions()[0]["path"] == "synchronous"
    for s in (prepared, synchronous):
        # The same shape: the pinned task, one summary, then the turns kept
        # verbatim; the summary names exactly the messages that left the history
        # (all archived), so it describes the history it was applied to.
        history = s.messages()
        assert history[0].id == "u0"
        assert [is_summary(m) for m in history[1:3]] == [True, False]
        covered = (summary_info(history[1]) or {})["covers"]
        assert all(s.archive.get("t", i) is not None for i in covered)
        sent = {f"{k}{i}" for i in range(int(history[-2].id[1:]) + 1) for k in "ua"}
        assert sent - {m.id for m in history} == {i for i in covered if i[0] in "ua"}
    # Both keep the same newest turns verbatim.
    tail_p = [m.text for m in prepared.messages()[-6:]]
    tail_s = [m.text for m in synchronous.messages()[-6:]]
    assert tail_p == tail_s


class Terse(Heads):
    """A summarizer that compresses as a model would: ids only, a few tokens."""

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        self.calls.append([str(m.id) for m in messages])
        return "covered " + " ".join(str(m.id) for m in messages)


def cross_far_past_the_line(**options: Any) -> tuple[Session, dict[str, Any], dict[str, Any]]:
    """Two sessions, one preparing ahead, fed the same turns until a summary is
    prepared, then seven turns at once: the session that prepared, and the last
    compression event of each."""
    sessions = [
        Session(summarizer=Terse(), max_summary_layers=1, prepare_ahead=p, **options)
        for p in (True, False)
    ]
    ahead, synchronous = sessions
    i = until_compressed(ahead, 0)
    while ahead.pending() is None:
        ahead.send(turn(i))
        i += 1
    ahead.settle()
    for j in range(i):  # the same turns, without preparing
        synchronous.send(turn(j))
    for s in sessions:
        s.send([m for j in range(i, i + 7) for m in turn(j)])
    return ahead, ahead.compressions()[-1], synchronous.compressions()[-1]


@pytest.mark.slow
def test_a_short_prepared_span_that_clears_the_red_line_is_applied() -> None:
    # The crossing turn lands far past the red line: the synchronous plan would
    # compress more than the span prepared ahead covers (well under 75% of it),
    # yet applying the prepared summary leaves the history well under the line.
    ahead, applied, planned = cross_far_past_the_line()
    assert (applied["path"], applied["prepared"]) == ("prepared", "short")
    assert planned["path"] == "synchronous"
    assert applied["messages"] < 0.75 * planned["messages"]
    assert applied["utilization_after"] < ahead.pipeline.budget.red_line / 4_000
    # Nothing lost: every message the prepared summary replaced is archived.
    summary = next(m for m in ahead.messages() if is_summary(m))
    covered = summary.text.split("covered ", 1)[1].split()
    assert covered and all(ahead.archive.get("t", c) is not None for c in covered)


@pytest.mark.slow
def test_a_short_prepared_span_far_above_a_deep_target_is_made_again() -> None:
    # The same crossing with a deep target (as with recall on): the prepared span
    # would leave the messages far above the goal, and what a compression keeps
    # verbatim is what a provider's prompt cache misses after it. Made again.
    # (Small summaries and one protected turn: what compression must keep is then
    # under 0.1 of the room, so the deep target stands: see _line_and_goal.)
    _, made, planned = cross_far_past_the_line(
        target_utilization=0.1, min_protected_turns=1, summary_tokens=(50, 100), window=6_000
    )
    assert (made["path"], made["prepared"]) == ("synchronous", "span_mismatch")
    assert made["messages"] == planned["messages"]
    assert made["utilization_after"] < 0.2  # near the goal, not twice it


def test_a_prepared_summary_overtaken_by_an_edit_is_never_applied() -> None:
    summarizer = Heads()
    session = Session(summarizer=summarizer)
    i = 0
    while session.pending() is None:
        session.send(turn(i))
        i += 1
        assert i < 200
    session.settle()
    span = [str(m.id) for m in session.messages() if str(m.id).startswith("u")]
    target = span[1]  # a user message the prepared summary covers
    assert target in summarizer.calls[-1]
    # The crossing call also edits a message of the prepared span (same id, new
    # content): the prepared summary no longer describes the history.
    index = int(target[1:])
    edited = HumanMessage(f"EDITED Turn {index}: " + FILLER, id=target)
    large = HumanMessage(f"Turn {i}: the full vendor report. " + FILLER * 12, id=f"u{i}")
    session.send([edited, large])
    [event] = session.compressions()
    assert (event["path"], event["prepared"]) == ("synchronous", "overtaken")
    summary = next(m for m in session.messages() if is_summary(m))
    assert f"{target}=EDITED Turn {index}" in summary.text
    assert f"{target}=Turn {index}" not in summary.text


def test_an_overtaken_preparation_is_rebuilt_in_the_yellow_zone() -> None:
    summarizer = Heads()
    session = Session(summarizer=summarizer)
    i = 0
    while session.pending() is None:
        session.send(turn(i))
        i += 1
    session.settle()
    first = session.pending()
    target = first.span[0][0]
    # An edit of a covered message, while still in the yellow zone.
    session.send([HumanMessage("EDITED " + FILLER, id=target)])
    session.settle()
    if not session.compressions():
        rebuilt = session.pending()
        assert rebuilt is not first
        assert dict(rebuilt.span)[target] != dict(first.span)[target]
    until_compressed(session, i)
    summary = next(m for m in session.messages() if is_summary(m))
    assert f"{target}=EDITED" in summary.text


@pytest.mark.slow
def test_a_model_summarizer_prepares_on_the_event_loop_under_ainvoke() -> None:
    class SlowModel(ScriptedChatModel):
        async def _agenerate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0.01)
            return await super()._agenerate(messages, *args, **kwargs)

    def reply(messages: list[BaseMessage]) -> str:
        return "Summary: " + " ".join(messages[-1].text.split()[:40])

    summarizer_model = SlowModel(default=reply, report_usage=False)

    async def run() -> Session:
        session = Session(summarizer=summarizer_model)
        i = 0
        while not session.compressions():
            await session.graph.ainvoke({"messages": turn(i)}, session.config)
            pending = session.pending()
            if pending is not None:
                assert pending.task is not None  # a task on this loop, not a thread
                await asyncio.wrap_future(pending.future)
            i += 1
            assert i < 200
        return session

    session = asyncio.run(run())
    event = session.compressions()[0]
    assert event["path"] == "prepared" and event["prepared"] in ("ready", "short")
    assert summarizer_model.calls, "the model made the summary"


def test_an_extractive_summary_is_prepared_in_the_package_pool_under_ainvoke() -> None:
    import threading

    threads: list[str] = []

    class Where(Heads):
        def summarize(self, messages: Any, **kwargs: Any) -> str:
            threads.append(threading.current_thread().name)
            return super().summarize(messages, **kwargs)

    async def run() -> Session:
        session = Session(summarizer=Where())
        i = 0
        while not session.compressions():
            await session.graph.ainvoke({"messages": turn(i)}, session.config)
            pending = session.pending()
            if pending is not None:
                assert pending.task is None  # CPU work: never a task on the loop
                await asyncio.wrap_future(pending.future)
            i += 1
        return session

    session = asyncio.run(run())
    assert session.compressions()[0]["path"] == "prepared"
    # Not the loop's thread, and not the loop's default executor.
    assert threads and all(name.startswith("lgctx-prep") for name in threads)


@pytest.mark.slow
def test_the_stable_prefix_is_byte_identical_between_compressions() -> None:
    session = Session()  # the extractive summarizer, which keeps to its token cap
    system = SystemMessage("You are the billing agent. Never reveal card numbers.", id="sys")
    session.send([system, *turn(0)])
    for i in range(1, 80):
        session.send(turn(i))
        session.settle()
    assert len({e["seq"] for e in session.compressions()}) >= 2
    prefixes = set()
    for call in session.model.calls:
        head = call.messages[:2]  # the system prompt, then the pinned task
        prefixes.add(json.dumps([(m.type, m.content, m.id) for m in head]))
    assert len(prefixes) == 1


WORKER = textwrap.dedent(
    """
    import sqlite3, sys, time
    from langgraph.checkpoint.sqlite import SqliteSaver
    from tests.middleware.test_prepared_compression import graph_on, turn

    class Slow:
        def summarize(self, messages, *, previous=None, max_tokens):
            time.sleep(120)
            return "never"
        async def asummarize(self, messages, *, previous=None, max_tokens):
            return self.summarize(messages, max_tokens=max_tokens)

    saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
    graph, pipeline = graph_on(saver, Slow())
    config = {"configurable": {"thread_id": "t"}}
    for i in range(200):
        graph.invoke({"messages": turn(i)}, config)
        if pipeline.session_for(config, {}).scratch.get("compression_prepared"):
            print("PREPARING", i, flush=True)
            time.sleep(600)
    """
)


def graph_on(saver: Any, summarizer: Any) -> tuple[Any, Pipeline]:
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok")))
    builder.add_edge(START, "call_llm")
    compression = TieredCompression(summarizer=summarizer, archive=InMemoryArchive())
    pipeline = Pipeline([PreflightCheck(), compression], budget=Budget.for_window(4_000))
    return pipeline.attach(builder).compile(checkpointer=saver), pipeline


@pytest.mark.slow
def test_a_kill_between_preparation_and_application_loses_nothing(tmp_path: Path) -> None:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "session.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(db)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PREPARING"), proc.stderr.read() if proc.stderr else line
        last = int(line.split()[1])
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph, _ = graph_on(SqliteSaver(conn), ExtractiveSummarizer())
        config: Any = {"configurable": {"thread_id": "t"}}
        state = graph.get_state(config).values
        # Every committed turn is there, verbatim; nothing prepared was persisted.
        ids = [m.id for m in state["messages"]]
        for i in range(last + 1):
            assert f"u{i}" in ids and f"a{i}" in ids
        assert not any(is_summary(m) for m in state["messages"])
        assert not [e for e in state.get("context_ledger", []) if e["kind"] == "compression"]
        # The resumed session compresses on its own (synchronously: nothing was
        # prepared in this process yet, or what it prepared is applied whole).
        i = last + 1
        while not [e for e in graph.get_state(config).values.get("context_ledger", [])
                   if e["kind"] == "compression"]:  # fmt: skip
            graph.invoke({"messages": turn(i)}, config)
            i += 1
            assert i < last + 200
        history = graph.get_state(config).values["messages"]
        assert sum(is_summary(m) for m in history) == 1
    finally:
        conn.close()


def test_a_ready_preparation_is_not_planned_again_on_every_yellow_call(monkeypatch: Any) -> None:
    # Planning is a pass over the whole history: in the yellow zone it runs when the
    # history has grown enough to move the span (REPLAN_SHARE of it), not per call.
    from langgraph_ctx.strategies.tiered import planner, prepared
    from langgraph_ctx.tokens import TokenCounter

    plans: list[int] = []
    real = planner.plan_compression

    def counting(*args: Any, **kwargs: Any) -> Any:
        plans.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(planner, "plan_compression", counting)
    session = Session(summarizer=Heads())
    i = 0
    while session.pending() is None:
        session.send(turn(i))
        i += 1
        assert i < 200, "never prepared"
    session.settle()
    pending = session.pending()
    plans.clear()
    for n in range(3):  # a few tokens each: far less than a tenth of the span
        session.send([HumanMessage(f"ok {n}", id=f"small{n}")])
        session.send([AIMessage("noted", id=f"noted{n}")])
    assert plans == [] and session.pending() is pending and not session.compressions()
    grown = 0
    while grown < prepared.REPLAN_SHARE * pending.tokens:
        session.send(turn(1000 + grown))
        grown += sum(TokenCounter().count_message(m) for m in turn(0))
    assert plans, "grown past the share: planned again"
    until_compressed(session, 2000)
    assert session.compressions()[0]["path"] == "prepared"


def test_a_compression_event_names_only_a_known_path_and_outcome() -> None:
    # The ledger types the two fields (CompressionPath, PreparedOutcome), so every
    # test's recorded events are checked against the outcomes tiered can give.
    from tests.ledger_check import mismatch

    event = {
        "seq": 1, "messages": 4, "through": "m4", "tokens_before": 400, "tokens_after": 60,
        "max_tokens": 80, "ratio": 6.67, "entity_retention": 1.0, "meta": False,
        "utilization_after": 0.4, "path": "prepared", "prepared": "short",
    }  # fmt: skip
    assert mismatch({"kind": "compression", "data": event}) is None
    assert mismatch({"kind": "compression", "data": {**event, "prepared": "stale"}})
    assert mismatch({"kind": "compression", "data": {**event, "path": "sync"}})
