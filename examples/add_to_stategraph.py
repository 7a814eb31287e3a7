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
    for i in range(60):
        text = (
            f"Note {i}: shipment SHP-{i:04d} left the Rotterdam depot with {i * 3} pallets; "
            "customs cleared it at 09:40 and the carrier is Maersk."
        )
        graph.invoke({"messages": [HumanMessage(text)]}, config)
    ledger = graph.get_state(config).values["context_ledger"]
    kinds = [e["kind"] for e in ledger]
    peak = max(e["data"]["utilization"] for e in ledger if e["kind"] == "utilization")
    print(f"{kinds.count('compression')} compressions; peak utilization {peak:.2f}")
    print("last prompt:", len(model.calls[-1].messages), "messages")
    return {"compressions": kinds.count("compression"), "peak": peak}


if __name__ == "__main__":
    main()
