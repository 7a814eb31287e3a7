"""Our built-ins inside LangChain's ``create_agent``: one middleware in the list.

Run it: ``python examples/create_agent_builtins.py``. It uses the scripted model,
so it needs no network or API key; swap in any LangChain chat model. Needs
``langchain>=1.0``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import Budget, PreflightCheck, TieredCompression, is_summary
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.testing import ScriptedChatModel


@tool
def track(shipment: str) -> str:
    """Where a shipment is now."""
    return (
        f"{shipment}: left the Rotterdam depot at 09:40 with 24 pallets; customs cleared it at "
        "11:05; the carrier is Maersk, vessel Emma, berth 7 at Antwerp, ETA Friday 14:00."
    )


ids = itertools.count()


def reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted model: a tool call for each question, then an answer from the result."""
    if isinstance(messages[-1], HumanMessage):
        n = next(ids)
        call = {"name": "track", "args": {"shipment": f"SHP-{n:04d}"}, "id": f"c{n}"}
        return AIMessage("", tool_calls=[call])
    return AIMessage("Tracked: " + messages[-1].text)


model = ScriptedChatModel(default=reply)
context = ContextMiddleware(
    [PreflightCheck(), TieredCompression()],
    budget=Budget.for_window(3_000),  # tiny on purpose: compression within a few turns
)
agent = create_agent(
    model,
    [track],
    system_prompt="You are a logistics assistant. Track shipments before answering.",
    middleware=[context],  # first in the list: it sees the messages as checkpointed
    checkpointer=InMemorySaver(),
)


def main() -> dict[str, Any]:
    config: Any = {"configurable": {"thread_id": "example"}}
    events: list[dict[str, Any]] = []
    for i in range(30):
        question = HumanMessage(f"Question {i}: where is shipment SHP-{i:04d} for order ORD-{i}?")
        for chunk in agent.stream({"messages": [question]}, config, stream_mode="custom"):
            events.append(chunk["langgraph_ctx"])
    messages = agent.get_state(config).values["messages"]
    compressions = sum(e["kind"] == "compression" for e in events)
    peak = max(e["data"]["sent_utilization"] for e in events if e["kind"] == "utilization")
    print(
        f"{len(model.calls)} model calls; {compressions} compressions; peak utilization {peak:.2f}"
    )
    print(
        f"checkpoint: {len(messages)} messages, {sum(map(is_summary, messages))} summary; "
        f"last prompt: {len(model.calls[-1].messages)} messages"
    )
    return {"compressions": compressions, "peak": peak, "messages": len(messages)}


if __name__ == "__main__":
    main()
