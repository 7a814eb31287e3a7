"""Loss paths found by fuzzing (issue 31): each message a user or a tool gave stays,
verbatim, in the active state or in the archive.

- a message re-sent with the id of one already archived (a client that reuses ids):
  the archive kept the old text and skipped the new one as a retry;
- a tool result separated from its call by a user message: the archive kept
  pre-flight's repair (an assistant note) instead of the tool result;
- a small pinned tool result pinned its whole parallel exchange, so a huge
  unpinned sibling could never be reduced and the run failed over budget.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    ContextState,
    Pipeline,
    PreflightCheck,
    call_llm_node,
    is_compacted,
    is_pinned,
    pin,
)
from langgraph_ctx.compression.ceiling import fit_prompt
from langgraph_ctx.edits.core import EditOp
from langgraph_ctx.markers import compacted
from langgraph_ctx.storage.archive import InMemoryArchive, SQLiteArchive
from langgraph_ctx.strategies.base import RewritingStrategy
from langgraph_ctx.testing import ScriptedChatModel
from tests.fuzz_sessions import provider_rejects
from tests.middleware.test_compression import COUNTER, FILLER, cfg, events, make_graph, turn


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    return (
        a.type == b.type
        and a.content == b.content
        and getattr(a, "tool_calls", None) == getattr(b, "tool_calls", None)
        and getattr(a, "tool_call_id", None) == getattr(b, "tool_call_id", None)
    )


def missing(graph: Any, config: Any, archive: InMemoryArchive, given: list[BaseMessage]) -> list:
    """The given messages found neither in the state nor in the archive, verbatim."""
    thread = config["configurable"]["thread_id"]
    kept = [*graph.get_state(config).values["messages"], *archive.list(thread)]
    return [m.id for m in given if not any(_same(m, k) for k in kept)]


def test_a_result_after_a_user_message_is_archived_as_the_tool_result() -> None:
    """Pre-flight shows the detached result to the model as an assistant note (its
    call is in another turn); compression then archived that note under the
    result's id, and the ToolMessage was gone."""
    archive = InMemoryArchive()
    graph, _, _ = make_graph(archive=archive)
    config = cfg("detached")
    given: list[BaseMessage] = [
        HumanMessage("Audit the vendor invoices.", id="task"),
        AIMessage("", id="c1", tool_calls=[{"name": "lookup", "args": {}, "id": "k1"}]),
        HumanMessage("Meanwhile, also check INV-0777.", id="u-mid"),
        ToolMessage("INV-0777 amount 42.10", tool_call_id="k1", name="lookup", id="r-late"),
    ]
    graph.invoke({"messages": given}, config)
    for i in range(1, 30):
        given += turn(i)
        graph.invoke({"messages": turn(i)}, config)
    assert events(graph, config, "compression")
    archived = archive.get("detached", "r-late")
    assert isinstance(archived, ToolMessage)
    assert archived.content == "INV-0777 amount 42.10" and archived.tool_call_id == "k1"
    assert missing(graph, config, archive, given) == []


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.slow
def test_a_message_resent_with_an_archived_id_is_kept_and_the_collision_recorded(
    store: str, run: str, tmp_path: Path
) -> None:
    """The client reuses ``u2`` after ``u2`` was compressed: the new text is neither
    dropped as a retry nor put over the original; both stay, and the ledger says so."""
    archive: Any = (
        InMemoryArchive() if store == "memory" else SQLiteArchive(str(tmp_path / "a.sqlite"))
    )
    graph, _, _ = make_graph(archive=archive)
    config = cfg("reused-id")

    def send(messages: list[BaseMessage]) -> None:
        if run == "sync":
            graph.invoke({"messages": messages}, config)
        else:
            asyncio.run(graph.ainvoke({"messages": messages}, config))

    given: list[BaseMessage] = []
    for i in range(30):
        given += turn(i)
        send(turn(i))
    assert archive.get("reused-id", "u2") is not None
    again = HumanMessage("Turn 2 again: the refund code is RF-9182. " + FILLER, id="u2")
    given.append(again)
    send([again])
    for i in range(30, 60):
        given += turn(i)
        send(turn(i))
    assert missing(graph, config, archive, given) == []
    # The original keeps its key: what referred to it still finds it.
    original = archive.get("reused-id", "u2")
    assert original is not None and original.text.startswith("Turn 2: ")
    collisions = events(graph, config, "archive_id_collision")
    assert collisions and collisions[0]["id"] == "u2"
    moved = archive.get("reused-id", collisions[0]["archived_as"])
    assert moved is not None and "RF-9182" in moved.text


# A step: a user turn, a tool exchange, a tool result detached from its call by a
# user message, or a message re-sent with the id of an earlier user message.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.integers(5, 60)),
        st.tuples(st.just("tools"), st.integers(0, 40)),
        st.tuples(st.just("detached"), st.integers(0, 40)),
        st.tuples(st.just("reuse"), st.integers(0, 1_000)),
    ),
    min_size=6,
    max_size=28,
)


def _step(step: tuple[str, int], n: int, users: list[str]) -> list[BaseMessage]:
    kind, size = step
    if kind == "user":
        return [HumanMessage(f"Request {n}: " + "check the ledger entry " * size, id=f"u{n}")]
    if kind == "reuse" and users:
        return [HumanMessage(f"Resent {n}: code RC-{n} " + FILLER, id=users[size % len(users)])]
    rows = json.dumps([{"id": f"ROW-{n}-{r}", "amount": r} for r in range(size)])
    call = AIMessage("", id=f"c{n}", tool_calls=[{"name": "rows", "args": {}, "id": f"k{n}"}])
    result = ToolMessage(rows, tool_call_id=f"k{n}", name="rows", id=f"r{n}")
    if kind == "detached":
        return [call, HumanMessage(f"And then {n}? " + FILLER, id=f"u{n}"), result]
    return [call, result]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
@pytest.mark.slow
def test_random_sessions_keep_every_given_message_verbatim(session: list[Any]) -> None:
    archive = InMemoryArchive()
    graph, _, _ = make_graph(window=3_000, archive=archive)
    config = cfg("fuzz")
    given: list[BaseMessage] = [HumanMessage("The task: reconcile the ledger.", id="task")]
    graph.invoke({"messages": given[:1]}, config)
    users: list[str] = []
    for n, step in enumerate(session):
        messages = _step(step, n, users)
        users += [m.id for m in messages if m.type == "human" and m.id]
        active = {m.id for m in graph.get_state(config).values["messages"]}
        # An id still active is replaced by LangGraph's reducer: the user's own edit.
        replaced = {m.id for m in messages} & active
        given = [m for m in given if m.id not in replaced] + messages
        graph.invoke({"messages": messages}, config)
        assert missing(graph, config, archive, given) == [], f"after step {n}"


# -- a pin protects what it pins, not its whole parallel exchange --------------------


def _rows(n: int) -> str:
    return json.dumps(
        [{"row": i, "sku": f"SKU-{i:05d}", "note": "backordered east"} for i in range(n)]
    )


def _parallel(sizes: list[int], pinned: int) -> list[BaseMessage]:
    calls = [{"name": "rows", "args": {"page": k}, "id": f"k{k}"} for k in range(len(sizes))]
    results = [
        ToolMessage(_rows(n), tool_call_id=f"k{k}", name="rows", id=f"r{k}")
        for k, n in enumerate(sizes)
    ]
    pin(results[pinned])
    return [
        HumanMessage("Audit the backorders.", id="task"),
        AIMessage("", id="c", tool_calls=calls),
        *results,
    ]


def test_a_pinned_small_result_lets_its_huge_sibling_be_cut() -> None:
    """Pinned, the small result pinned its whole exchange: the 19,500-token sibling
    could not be reduced and the run failed with ``BudgetExceededError``, though the
    same run unpinned fits by compacting the sibling."""
    archive = InMemoryArchive()
    graph, model, _ = make_graph(window=16_000, archive=archive)
    config = cfg("pinned-sibling")
    given = _parallel([2, 850], pinned=0)
    assert 19_000 < COUNTER.count_message(given[-1]) < 20_000
    graph.invoke({"messages": given}, config)
    for i in range(1, 4):
        given += turn(i)
        graph.invoke({"messages": turn(i)}, config)
    state = {m.id: m for m in graph.get_state(config).values["messages"]}
    assert state["r0"].content == given[2].content and is_pinned(state["r0"])  # verbatim
    assert is_compacted(state["r1"]) and state["r1"].tool_call_id == "k1"  # cut, still paired
    assert missing(graph, config, archive, given) == []
    limit = Budget.for_window(16_000).prompt_limit
    for call in model.calls:
        assert provider_rejects(list(call.messages)) is None
        assert COUNTER.count_messages(list(call.messages)) <= limit


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 300), min_size=2, max_size=4),
    st.integers(0, 3),
    st.floats(0.05, 1.0),
)
@pytest.mark.slow
def test_the_ceiling_frees_from_a_pinned_exchange_what_it_frees_unpinned(
    sizes: list[int], which: int, share: float
) -> None:
    """Whatever the exchange and whichever result is pinned: what the prompt ceiling
    can free from the unpinned results it frees, the pinned one stays as it is, and
    every call keeps its result."""
    messages = _parallel(sizes, pinned=which % len(sizes))
    pinned = messages[2 + which % len(sizes)]
    loose = [m for m in messages[2:] if m is not pinned]
    # What cutting each unpinned result to its header and marker surely frees.
    freeable = sum(max(0, COUNTER.count_message(m) - 120) for m in loose)
    over = max(1, int(share * freeable))
    fit = fit_prompt(messages, over, COUNTER.count_message, COUNTER)
    if freeable > 0:
        assert fit.over <= 0
    assert any(m is pinned for m in fit.messages)
    assert provider_rejects(fit.messages) is None


class _TwoEdits(RewritingStrategy):
    """Compacts the tool result in place, then, in the same call, deletes a reply."""

    name = "two-edits"
    protection = "tiers"

    def before(self, view: Any, ctx: Any) -> Any:
        messages = list(view["messages"])
        result = next((m for m in messages if m.type == "tool" and not is_compacted(m)), None)
        if result is None:
            return view
        small = compacted(result, "42 rows", COUNTER.count_message(result))
        view, _ = yield from self.edit(view, ctx, [EditOp.replacing([str(result.id)], small, "")])
        view, _ = yield from self.edit(view, ctx, [EditOp(("a0",), None, "stale", "")])
        return view


def test_a_second_edit_in_one_call_keeps_what_the_first_made() -> None:
    """Edits archive and persist the state's own message for what a layer only showed
    otherwise (the pair repair's note), never for what an earlier edit of the same call
    made: a result compacted in place keeps its id, and mapping it back to the state's
    original would undo the compaction the first edit persisted."""
    archive = InMemoryArchive()
    model = ScriptedChatModel(default="ok", report_usage=False)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline(
        [PreflightCheck(), _TwoEdits(archive=archive)], budget=Budget.for_window(8_000)
    )
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    config = cfg("two-edits")
    graph.invoke({"messages": turn(0, tools=True)}, config)
    state = {m.id: m for m in graph.get_state(config).values["messages"]}
    assert "a0" not in state
    assert is_compacted(state["r0"]) and state["r0"].tool_call_id == "call0"
    original = archive.get("two-edits", "r0")
    assert original is not None and not is_compacted(original)
