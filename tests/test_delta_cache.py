"""``DeltaReadCache``: every value read through it is the one the saver alone rebuilds
(whatever the mix of invokes, state updates, removals, forks and writers), a write by
another saver instance is read, not shadowed; and with it a PACE agent's invoke reads
back, keys and encodes only what the turn added."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from typing_extensions import TypedDict

from langgraph_ctx import Budget, DeltaReadCache, PredictiveExtraction
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.state import delta_messages, merge_records
from langgraph_ctx.storage.checkpointers import async_checkpointer_from_url, checkpointer_from_url
from langgraph_ctx.strategies import LexicalScorer
from langgraph_ctx.testing import ScriptedChatModel


class TinyState(TypedDict, total=False):
    """Two delta channels that snapshot often, so short runs cross several copies."""

    messages: Annotated[list[AnyMessage], DeltaChannel(delta_messages, snapshot_frequency=3)]
    notes: Annotated[dict[str, Any], DeltaChannel(merge_records, snapshot_frequency=4)]


def tiny_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """Two nodes in parallel on each step: the replay must keep their writes' order."""

    def a(state: TinyState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"a saw {len(state.get('messages', []))}")]}

    def b(state: TinyState) -> dict[str, Any]:
        n = len(state.get("messages", []))
        return {"messages": [AIMessage(f"b saw {n}")], "notes": {f"b{n}": n}}

    builder = StateGraph(TinyState)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    return builder.compile(checkpointer=saver)


def values(graph: Any, config: Any) -> tuple[Any, ...]:
    state = graph.get_state(config).values
    messages = [(m.type, m.id, m.text) for m in state.get("messages", [])]
    return messages, state.get("notes", {})


def apply(graph: Any, thread: str, op: tuple[str, int], k: int) -> None:
    """One operation on ``thread`` through ``graph``."""
    kind, n = op
    config: Any = {"configurable": {"thread_id": thread}}
    new = [HumanMessage(f"{kind} {k}.{i}", id=f"{thread}-{k}-{i}") for i in range(n)]
    if kind == "invoke":
        graph.invoke({"messages": new}, config)
    elif kind == "update":
        graph.update_state(config, {"messages": new, "notes": {f"u{k}": n}}, as_node="a")
    elif kind == "remove":  # the oldest message, by id
        first = graph.get_state(config).values.get("messages", [])[:1]
        if first:
            graph.update_state(config, {"messages": [RemoveMessage(id=first[0].id)]}, as_node="a")
    elif kind == "reset":
        graph.update_state(
            config, {"messages": [RemoveMessage(REMOVE_ALL_MESSAGES), *new]}, as_node="a"
        )
    else:  # "fork": run again from an earlier checkpoint; the branch becomes the latest
        past = [c.config for c in graph.get_state_history(config)]
        if past:
            graph.invoke({"messages": new}, past[min(n, len(past) - 1)])


OPERATIONS = st.tuples(
    st.sampled_from(["invoke", "update", "remove", "reset", "fork"]), st.integers(1, 3)
)


@pytest.fixture(scope="module")
def sqlite_saver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteSaver]:
    path = tmp_path_factory.mktemp("delta-cache") / "c.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    yield SqliteSaver(conn)
    conn.close()


EXAMPLES = iter(range(10**9))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(OPERATIONS, st.booleans()), min_size=1, max_size=12),
    st.integers(0, 30),
)
@pytest.mark.slow
def test_every_read_equals_the_savers_own(
    sqlite_saver: SqliteSaver, ops: list[tuple[tuple[str, int], bool]], back: int
) -> None:
    # One database, two graphs on it: one reads through the cache, one through the
    # saver alone. Operations go through either (the cache's graph also meets writes
    # it did not make); after each, both read the latest and an earlier checkpoint.
    cache = DeltaReadCache(sqlite_saver, max_walk=8)
    cached, plain = tiny_graph(cache), tiny_graph(sqlite_saver)
    thread = f"t{next(EXAMPLES)}"
    config: Any = {"configurable": {"thread_id": thread}}
    for k, (op, through_cache) in enumerate(ops):
        apply(cached if through_cache else plain, thread, op, k)
        assert values(cached, config) == values(plain, config)
        history = [c.config for c in plain.get_state_history(config)]
        if history:  # a removal on an empty thread writes nothing
            earlier = history[min(back, len(history) - 1)]
            assert values(cached, earlier) == values(plain, earlier)


@contextmanager
def two_savers(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Two saver instances (two connections or pools) on one database."""
    url = (
        f"sqlite:///{tmp_path}/two.sqlite"
        if kind == "sqlite"
        else request.getfixturevalue("postgres_db")
    )
    with ExitStack() as stack:
        yield [stack.enter_context(checkpointer_from_url(url)) for _ in range(2)]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_write_from_another_saver_instance_is_read(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with two_savers(kind, tmp_path, request) as (mine, theirs):
        cache = DeltaReadCache(mine)
        ours, other = tiny_graph(cache), tiny_graph(theirs)
        config: Any = {"configurable": {"thread_id": "shared"}}
        for k in range(4):
            apply(ours, "shared", ("invoke", 1), k)
        misses = cache.misses
        for k in range(4, 7):  # the other instance moves the thread on
            apply(other, "shared", ("invoke", 2), k)
        assert values(ours, config) == values(other, config)
        apply(other, "shared", ("reset", 1), 7)
        apply(other, "shared", ("remove", 1), 8)
        assert values(ours, config) == values(other, config)
        apply(ours, "shared", ("invoke", 1), 9)
        assert values(other, config) == values(ours, config)
        # Their checkpoints were read from the database onto the kept answer.
        assert cache.misses == misses
        assert len(values(ours, config)[0]) == 3


class CountingScorer(LexicalScorer):
    """The lexical scorer, counting the step texts it is asked to encode."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[int] = []

    def encode(self, keys: Any, query: str) -> Any:
        self.encoded.append(len(keys))
        return super().encode(keys, query)


class CountingSaver(SqliteSaver):
    """SQLite, counting the reads a graph makes of it."""

    tuples = 0
    histories = 0

    def get_tuple(self, config: Any) -> Any:
        self.tuples += 1
        return super().get_tuple(config)

    def get_delta_channel_history(self, *, config: Any, channels: Any) -> Any:
        self.histories += 1
        return super().get_delta_channel_history(config=config, channels=channels)


@pytest.mark.slow
def test_a_pace_invoke_reads_keys_and_encodes_only_the_new_turn(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "pace.sqlite", check_same_thread=False)
    saver, scorer = CountingSaver(conn), CountingScorer()
    graph = create_context_agent(
        ScriptedChatModel(default=lambda m: AIMessage(f"noted {len(m)}"), report_usage=False),
        checkpointer=saver,
        think=False,
        strategy=PredictiveExtraction(scorer=scorer),
        budget=Budget.for_window(4_000),  # the history soon exceeds it: PACE condenses
    )
    assert isinstance(graph.checkpointer, DeltaReadCache)
    config: Any = {"configurable": {"thread_id": "spy"}}

    def turn(i: int) -> tuple[int, int, list[int]]:
        tuples, histories, encoded = saver.tuples, saver.histories, len(scorer.encoded)
        text = f"Turn {i}: the parcel for depot {i % 7} weighs {i} kg " + "and more " * 40
        graph.invoke({"messages": [HumanMessage(text)]}, config)
        return saver.tuples - tuples, saver.histories - histories, scorer.encoded[encoded:]

    first = [turn(i) for i in range(30)]
    late = [turn(i) for i in range(30, 40)]
    assert [h for _, h, _ in first] == [0, 1, *[0] * 28]  # one whole-history read, the first
    for tuples, histories, encoded in late:
        assert histories == 0  # no whole-history read: the turn's writes onto the kept one
        assert tuples == late[0][0]  # the same few checkpoints a turn, at any length
        assert encoded == [1]  # one new step keyed; the others' keys are kept
    assert late[0][0] == first[5][0]
    conn.close()


async def test_async_reads_resume_from_the_kept_answer_too(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/async.sqlite"
    async with async_checkpointer_from_url(url) as saver:
        cache = DeltaReadCache(saver)
        cached, plain = tiny_graph(cache), tiny_graph(saver)
        config: Any = {"configurable": {"thread_id": "async"}}
        for k in range(6):
            new = [HumanMessage(f"turn {k}", id=f"h{k}")]
            await (cached if k % 3 else plain).ainvoke({"messages": new}, config)
            mine, theirs = await cached.aget_state(config), await plain.aget_state(config)
            assert mine.values == theirs.values
        assert cache.hits >= 4
        assert len(mine.values["messages"]) == 18
