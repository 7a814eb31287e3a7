"""Add langgraph-ctx to an existing StateGraph: two lines, no change to your nodes.

Run it: ``python examples/add_to_stategraph.py``. It uses the scripted model,
so it needs no network or API key; swap in any LangChain chat model.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, TieredCompression
from langgraph_ctx.testing import ScriptedChatModel

model = ScriptedChatModel(default="Noted.")


def agent(state: ContextState) -> dict[str, Any]:
    """Your node, as it was: call the model on the messages."""
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(ContextState)
builder.add_node("agent", agent)
builder.add_edge(START, "agent")

# The two lines: a pipeline for the "agent" node, attached before compile().
pipeline = Pipeline(
    [PreflightCheck(nodes=["agent"]), TieredCompression(nodes=["agent"])],
    budget=Budget.for_window(2_500),
)
graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())


def main() -> dict[str, Any]:
    config: Any = {"configurable": {"thread_id": "example"}}
    events: list[dict[str, Any]] = []
    for i in range(60):
        text = (
            f"Note {i}: shipment SHP-{i:04d} left the Rotterdam depot with {i * 3} pallets; "
            "customs cleared it at 09:40 and the carrier is Maersk."
        )
        # Every event of the session is on the custom stream; the checkpointed
        # ledger keeps only the latest 32.
        for chunk in graph.stream({"messages": [HumanMessage(text)]}, config, stream_mode="custom"):
            events.append(chunk["langgraph_ctx"])
    compressions = sum(e["kind"] == "compression" for e in events)
    sent = [e["data"]["sent_utilization"] for e in events if e["kind"] == "utilization"]
    print(f"{len(sent)} model calls; {compressions} compressions; peak utilization {max(sent):.2f}")
    print("last prompt:", len(model.calls[-1].messages), "messages")
    return {"compressions": compressions, "peak": max(sent)}


if __name__ == "__main__":
    main()
