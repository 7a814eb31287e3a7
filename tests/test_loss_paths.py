"""Loss paths found by fuzzing (issue 31): each message a user or a tool gave stays,
verbatim, in the active state or in the archive.

- a message re-sent with the id of one already archived (a client that reuses ids):
  the archive kept the old text and skipped the new one as a retry;
- a tool result separated from its call by a user message: the archive kept
  pre-flight's repair (an assistant note) instead of the tool result.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx.storage.archive import InMemoryArchive
from tests.middleware.test_compression import FILLER, cfg, events, make_graph, turn


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


def test_a_message_resent_with_an_archived_id_is_kept_and_the_collision_recorded() -> None:
    """The client reuses ``u2`` after ``u2`` was compressed: the new text is neither
    dropped as a retry nor put over the original; both stay, and the ledger says so."""
    archive = InMemoryArchive()
    graph, _, _ = make_graph(archive=archive)
    config = cfg("reused-id")
    given: list[BaseMessage] = []
    for i in range(30):
        given += turn(i)
        graph.invoke({"messages": turn(i)}, config)
    assert archive.get("reused-id", "u2") is not None
    again = HumanMessage("Turn 2 again: the refund code is RF-9182. " + FILLER, id="u2")
    given.append(again)
    graph.invoke({"messages": [again]}, config)
    for i in range(30, 60):
        given += turn(i)
        graph.invoke({"messages": turn(i)}, config)
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
