"""The long run's saver: only the latest checkpoint is kept, every byte serialized is counted."""

from __future__ import annotations

from typing import Any

from harness.savers import TallySaver, open_backend
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph


def graph(saver: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [AIMessage("ok")]})
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def test_tally_saver_keeps_the_latest_checkpoint_and_counts_bytes() -> None:
    saver = TallySaver()
    g, config = graph(saver), {"configurable": {"thread_id": "t"}}
    written = []
    for i in range(3):
        g.invoke({"messages": [HumanMessage("x" * 1_000, id=f"h{i}")]}, config)
        written.append(saver.written)
    assert written[0] > 1_000 and written[1] - written[0] > written[0]  # the history grows
    assert len(saver.storage["t"][""]) == 1  # older checkpoints pruned
    assert len(g.get_state(config).values["messages"]) == 6  # and the state is intact
    channels = {k[2] for k in saver.blobs}
    assert len(saver.blobs) == len(channels)  # one version per channel


def test_sqlite_backend_reports_the_payload_it_stored() -> None:
    with open_backend("sqlite") as store:
        g = graph(store.saver)
        g.invoke({"messages": [HumanMessage("x" * 5_000)]}, {"configurable": {"thread_id": "t"}})
        assert store.bytes_written() > 5_000
