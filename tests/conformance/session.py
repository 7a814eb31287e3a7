"""One cell of the conformance matrix: a session through ``create_context_agent``,
checked at every model call and after every turn, across a restart.

A cell is a strategy of the registry (``"none"`` included), recall on or off,
think on or off, a window and a saver. Its session is the workload generator's
(:func:`~langgraph_ctx.testing.workloads.generate_session`), with tool results sized to the
window so that a few turns overflow it and the strategy has to act; the model is
the scripted one, playing an agent that calls the turn's tools once and then
answers. The session runs :data:`TURNS` turns, then the process restarts (a new
graph, a new model, on the same saver; for a database, optionally a real
subprocess: :func:`run_worker`) and runs :data:`MORE` turns.

What every call the model received must satisfy (:func:`call_violations`):

- the prompt, messages and bound tool schemas, within the budget's prompt limit;
- no orphan: every tool call answered right after it, every result after its call
  (:func:`tests.fuzz_sessions.provider_rejects`);
- the task (turn 0's message) and the turn's own question present, verbatim;
- every chat client of the provider matrix (:mod:`tests.providers`) builds its
  request from it, and keeps the summaries and the recall block it holds.

After every turn (:func:`turn_violations`): the turn ran without an exception and
within :data:`MAX_CALLS_PER_TURN` model calls (a loop raises
``GraphRecursionError`` at :data:`RECURSION_LIMIT` steps); every message the user
or a tool gave is, by id and content, in the state or in the archive (the graph's
for an in-memory saver, the database's otherwise: what survives a restart); and for
a database, ``langgraph-ctx inspect`` finds the session with its messages and every
event the run streamed.

Violations are collected, not raised, so a cell reports all of them at once, and
so a subprocess can hand them back as JSON (``python -m tests.conformance.session``).
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.demo import workload_tools
from langgraph_ctx.cli.inspect import inspect_session
from langgraph_ctx.markers import RECALL_PREFIX, SUMMARY_PREFIX
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive
from langgraph_ctx.storage.checkpointers import archive_from_url
from langgraph_ctx.strategies.registry import STRATEGIES
from langgraph_ctx.testing import ScriptedChatModel, thought_about_the_question
from langgraph_ctx.testing.workloads import Workload, generate_session
from langgraph_ctx.tokens import TokenCounter
from tests.fuzz_sessions import provider_rejects
from tests.providers.test_provider_matrix import CLIENTS, _escaped, _payloads

ROOT = Path(__file__).resolve().parents[2]
WINDOWS = {"4K": 4_000, "32K": 32_000, "128K": 128_000}
SAVERS = ("memory", "sqlite", "postgres")
TURNS = 7
"""Turns before the restart: with results sized by :func:`workload`, enough for
every strategy to act at every window (checked: :data:`ACTED`)."""
MORE = 3
"""Turns after the restart."""
SEED = 31
MAX_CALLS_PER_TURN = 10
"""think, act, think after the tools, act: 4 a turn; BACM's fold adds a step. More is a loop."""
RECURSION_LIMIT = 40
"""LangGraph's default (10,007 steps) would let a loop run for minutes first."""
SYSTEM = "You are the operations agent of a logistics company. Be exact about ids and amounts."
COUNTER = TokenCounter()


def _condensed(event: dict[str, Any]) -> bool:
    data = event["data"]
    return any(data.get(level, 0) for level in ("detailed", "brief", "placeholder", "omitted"))


ACTED: dict[str, Callable[[dict[str, Any]], bool]] = {
    "tiered": lambda e: e["kind"] == "compression",
    "adacom": lambda e: e["kind"] == "context_edit",
    "arc": lambda e: e["kind"] == "arc_reflection",
    "bacm": lambda e: e["kind"] == "fold",
    "pace": lambda e: e["kind"] == "pace_context" and _condensed(e),
    # Nothing manages the history: pre-flight's ceiling fits each call.
    "none": lambda e: e["kind"] == "ceiling_enforced",
}
"""The event that shows a strategy did its work: compressed, edited, reflected,
folded, condensed; for ``"none"``, that the session did overflow the window."""
assert set(ACTED) == set(STRATEGIES), "a strategy added to the registry needs its event here"


@dataclass(frozen=True)
class Cell:
    strategy: str
    recall: bool
    think: bool
    window: str
    saver: str

    @property
    def id(self) -> str:
        on = {True: "on", False: "off"}
        return (
            f"{self.strategy}-recall_{on[self.recall]}-think_{on[self.think]}"
            f"-{self.window}-{self.saver}"
        )


MATRIX = [
    Cell(*c) for c in itertools.product(STRATEGIES, (False, True), (False, True), WINDOWS, SAVERS)
]
"""The whole matrix: the test runs a part of it, ``python benchmarks/conformance.py`` all of it."""


@dataclass
class Record:
    """What a phase of a cell saw: JSON, so that a subprocess can hand it back."""

    violations: list[str] = field(default_factory=list)
    events: dict[str, int] = field(default_factory=dict)
    """Every event the run streamed, by kind."""
    acted: bool = False
    calls: int = 0
    raised: bool = False
    """An exception stopped the phase (building the agent, or a turn)."""

    def add(self, other: Record) -> None:
        self.violations += other.violations
        self.events = dict(Counter(self.events) + Counter(other.events))
        self.acted = self.acted or other.acted
        self.calls += other.calls
        self.raised = self.raised or other.raised


@functools.cache
def workload(window: str, turns: int = TURNS + MORE) -> Workload:
    """The session at ``window``: every turn but probes calls tools, whose results
    average about half the window in characters (a seventh of it in tokens; one to
    three a turn), so the history overflows within the first few turns. The same
    seed gives the same first turns whatever ``turns`` is (they are drawn in order)."""
    mean = WINDOWS[window] // 2
    return generate_session(
        turns, seed=SEED, tool_rate=1.0, result_chars=(mean * 2 // 3, mean * 4 // 3)
    )


class ScriptedAgent:
    """The model's side: on the turn being run, call its tools once, then answer."""

    def __init__(self, script: Workload) -> None:
        self.script = script
        self.turn = script.turns[0]
        self.called: set[int] = set()

    def act(self, messages: Sequence[BaseMessage]) -> AIMessage:
        turn = self.turn
        if turn.tool_steps and turn.index not in self.called:
            self.called.add(turn.index)
            calls = [
                {"name": s.name, "args": dict(s.args), "id": s.call_id, "type": "tool_call"}
                for s in turn.tool_steps
            ]
            return AIMessage("", tool_calls=calls)
        return AIMessage(turn.answer)


def build(cell: Cell, checkpointer: Any, agent: ScriptedAgent) -> tuple[Any, ScriptedChatModel]:
    """The agent a user gets for ``cell``: the defaults but for the options the cell names."""
    model = ScriptedChatModel(
        default=agent.act, structured_default=thought_about_the_question("tool_call")
    )
    graph = create_context_agent(
        model,
        workload_tools(agent.script),
        checkpointer=checkpointer,
        system_prompt=SYSTEM,
        always_include=list(agent.script.tool_names),
        budget=Budget.for_window(WINDOWS[cell.window]),
        strategy=cell.strategy,
        recall=cell.recall,
        think=cell.think,
    )
    return graph, model


def user_message(index: int, text: str) -> HumanMessage:
    return HumanMessage(text, id=f"u{index:03d}")


# -- the checks -------------------------------------------------------------


@functools.cache
def _builders() -> dict[str, Any]:
    return {name: make() for name, make in sorted(CLIENTS.items())}


MARKERS = (SUMMARY_PREFIX, RECALL_PREFIX)
SKELETON_CHARS = 200


def _cut(text: str) -> str:
    lines = text.splitlines()
    kept = [line for line in lines[1:] if any(marker in line for marker in MARKERS)]
    return "\n".join([text[:SKELETON_CHARS], *kept])


def skeleton(message: BaseMessage) -> BaseMessage:
    """``message`` with each text cut to its start and the lines that hold a marker.
    What a client accepts or drops depends on roles, order, pairing and content
    blocks, not on length, and its payload builder's cost does (OpenAI's Responses
    input grows with the square of a tool result's length)."""
    content = message.content
    if isinstance(content, str):
        cut: Any = _cut(content)
    else:
        cut = [
            {**b, "text": _cut(b["text"])} if isinstance(b, dict) and "text" in b else b
            for b in content
        ]
    return message.model_copy(update={"content": cut})


def provider_violations(messages: list[BaseMessage]) -> list[str]:
    """What each chat client of the provider matrix refuses or drops of ``messages``."""
    text = "\n".join(m.text for m in messages)
    kept = [marker for marker in MARKERS if marker in text]
    shown = [skeleton(m) for m in messages]
    out = []
    for name, build_payload in _builders().items():
        try:
            (payload,) = _payloads(build_payload, [shown])
        except Exception as exc:  # what the client raises is the finding
            out.append(f"{name} refuses the prompt: {type(exc).__name__}: {exc}"[:300])
            continue
        out += [f"{name} drops {marker!r}" for marker in kept if _escaped(marker) not in payload]
    return out


def call_violations(call: Any, budget: Budget, task: str, question: str, where: str) -> list[str]:
    """What is wrong with one model call (``call``: a scripted model's record)."""
    sent = list(call.messages)
    out = []
    tokens = COUNTER.count_messages(sent) + sum(map(COUNTER.count_tool, call.tools))
    if tokens > budget.prompt_limit:
        out.append(f"prompt of {tokens} tokens over the limit {budget.prompt_limit}")
    orphan = provider_rejects(sent)
    if orphan:
        out.append(f"orphan: {orphan}")
    if task not in call.text:
        out.append("the task is missing")
    if question not in call.text:
        out.append("the turn's question is missing")
    out += provider_violations(sent)
    node = "think" if call.structured else "call_llm"
    return [f"{where}, {node}: {v}" for v in out]


def given(script: Workload, upto: int) -> list[tuple[str, str, str]]:
    """Every message the user or a tool gave in turns ``[0, upto)``: (kind, key, text),
    the key a user message's id or a tool result's call id."""
    out = []
    for turn in script.turns[:upto]:
        out.append(("user", f"u{turn.index:03d}", turn.user))
        out += [("tool", s.call_id, s.result) for s in turn.tool_steps]
    return out


def lost(
    expected: list[tuple[str, str, str]], state: list[BaseMessage], archived: list[BaseMessage]
) -> list[str]:
    """The expected messages neither the state nor the archive holds verbatim."""
    held = [*state, *archived]
    users = {(m.id, m.content) for m in held if isinstance(m, HumanMessage)}
    tools = {(m.tool_call_id, m.content) for m in held if isinstance(m, ToolMessage)}
    return [
        f"{kind} message {key} lost"
        for kind, key, text in expected
        if (key, text) not in (users if kind == "user" else tools)
    ]


def inspect_violations(
    url: str, thread: str, state: list[BaseMessage], events: dict[str, int]
) -> list[str]:
    """What ``langgraph-ctx inspect`` fails to show of the session."""
    seen = inspect_session(url, thread)
    if not seen.found:
        return ["inspect finds no session"]
    out = []
    if seen.messages != len(state):
        out.append(f"inspect shows {seen.messages} messages, the state holds {len(state)}")
    short = {k: (seen.event_counts.get(k, 0), n) for k, n in events.items()}
    short = {k: v for k, v in short.items() if v[0] < v[1]}
    if short:
        out.append(f"inspect ({seen.events_source}) shows fewer events (shown, streamed): {short}")
    return out


# -- running a cell ---------------------------------------------------------


def graph_archive(graph: Any) -> MessageArchive:
    """The archive the graph's strategy writes (an in-memory saver's session keeps it
    in memory): found on the pipeline ``create_context_agent`` attached."""
    run = graph.builder.nodes["call_llm"].runnable._run.func
    (pipeline,) = [
        c.cell_contents for c in run.__closure__ or () if isinstance(c.cell_contents, Pipeline)
    ]
    found = {
        id(mw.archive): mw.archive
        for mw in (layer.middleware for layer in pipeline._registered)
        if getattr(mw, "archive", None) is not None
    }
    assert len(found) <= 1, f"expected one archive in the pipeline, found {len(found)}"
    # PACE keeps every step in the state and archives nothing: an empty archive.
    return next(iter(found.values())) if found else InMemoryArchive()


def run_phase(
    cell: Cell,
    checkpointer: Any,
    turns: range,
    url: str | None,
    streamed: dict[str, int],
) -> Record:
    """Run ``turns`` of the cell's session on a new graph over ``checkpointer``:
    its record. ``streamed``: the events earlier phases streamed (for ``inspect``).
    For an in-memory saver the archive is this graph's: the saver's own, so what
    an earlier graph on it archived must be there."""
    script = workload(cell.window, max(turns.stop, TURNS + MORE))
    agent = ScriptedAgent(script)
    try:
        graph, model = build(cell, checkpointer, agent)
    except Exception as exc:  # a combination refused is a finding too
        return Record([f"building the agent: {type(exc).__name__}: {exc}"[:400]], raised=True)
    budget = Budget.for_window(WINDOWS[cell.window])
    record = Record()
    config: Any = {"configurable": {"thread_id": cell.id}, "recursion_limit": RECURSION_LIMIT}
    task = script.turns[0].user
    with _archive(graph, url) as archive:
        for i in turns:
            turn = agent.turn = script.turns[i]
            where = f"turn {i}"
            before = len(model.calls)
            try:
                for chunk in graph.stream(
                    {"messages": [user_message(i, turn.user)]}, config, stream_mode="custom"
                ):
                    event = chunk.get("langgraph_ctx") if isinstance(chunk, dict) else None
                    if event is not None:
                        record.events[event["kind"]] = record.events.get(event["kind"], 0) + 1
                        record.acted = record.acted or ACTED[cell.strategy](event)
            except Exception as exc:  # any exception is the finding; later turns would not run
                record.violations.append(f"{where}: {type(exc).__name__}: {exc}"[:400])
                record.raised = True
                break
            calls = model.calls[before:]
            record.calls += len(calls)
            if len(calls) > MAX_CALLS_PER_TURN:
                record.violations.append(f"{where}: {len(calls)} model calls (a loop)")
            for call in calls:
                record.violations += call_violations(call, budget, task, turn.user, where)
            state = list(graph.get_state(config).values["messages"])
            archived = archive.list(cell.id)
            record.violations += [
                f"{where}: {v}" for v in lost(given(script, i + 1), state, archived)
            ]
            if url is not None:
                seen = dict(Counter(streamed) + Counter(record.events))
                record.violations += [
                    f"{where}: {v}" for v in inspect_violations(url, cell.id, state, seen)
                ]
    del graph  # a restart's old process is gone: a URL's saver and stores close with the graph
    if url is not None:
        gc.collect()  # now, not when a later cell's garbage is collected
    return record


@contextmanager
def _archive(graph: Any, url: str | None) -> Iterator[MessageArchive]:
    """Where the originals must be: the database's archive, read on a connection of
    our own, or for an in-memory saver the graph's own."""
    if url is None:
        yield graph_archive(graph)
        return
    archive = archive_from_url(url)
    try:
        yield archive
    finally:
        getattr(archive, "close", lambda: None)()


def run_worker(cell: Cell, url: str, turns: range) -> Record:
    """Run ``turns`` of the cell in a process of its own (which then exits): its record."""
    command = [
        sys.executable,
        "-m",
        "tests.conformance.session",
        "--cell",
        json.dumps(asdict(cell)),
        "--url",
        url,
        "--turns",
        f"{turns.start}:{turns.stop}",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return Record(violations=[f"worker exited {done.returncode}: {done.stderr[-2000:]}"])
    return Record(**json.loads(done.stdout.strip().splitlines()[-1]))


LEXICAL_PACE = ("langgraph_ctx.strategies.pace.scorer.minilm_available", lambda: False)
"""Patched in: PACE scores steps lexically, as it does without the ``embeddings``
extra (the core install). The matrix is about combinations, and the encoder would
cost most of its time; the default with the extra has a cell of its own."""


def score_pace_lexically() -> None:
    """:data:`LEXICAL_PACE` for a whole process (a worker, the benchmark), where no
    ``monkeypatch`` is there to put it back."""
    target, value = LEXICAL_PACE
    module, name = target.rsplit(".", 1)
    setattr(sys.modules.get(module) or __import__(module, fromlist=[name]), name, value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cell", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--turns", required=True)
    args = parser.parse_args(argv)
    cell = Cell(**json.loads(args.cell))
    start, stop = map(int, args.turns.split(":"))
    score_pace_lexically()
    record = run_phase(cell, args.url, range(start, stop), args.url, {})
    print(json.dumps(asdict(record)))


if __name__ == "__main__":
    main()
