"""A long agent session that compresses, recalls, thinks and delegates, recorded call by call.

The prebuilt agent runs on scripted models; what each model call received
(``ScriptedChatModel.calls``, the parent's and the sub-agent's) is what a real
provider client would have been handed. The provider matrix builds each
client's request payload from exactly those messages.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget, MemoryBank
from langgraph_ctx.agent import SubAgents, SubAgentSpec, create_context_agent
from langgraph_ctx.middleware.placement import Placement
from langgraph_ctx.testing import ScriptedChatModel

SYSTEM = "You are the order desk of a logistics company. Be exact about ids and amounts."
MEMORY = "Ana's carrier is DHL Express; she ships from her warehouse in Rotterdam."
TURNS = 36
DELEGATE_EVERY = 6


@tool
def get_order(order_id: str) -> str:
    """Fetch an order with its full event log."""
    events = "; ".join(f"event {i}: scanned at hub H{i:02d} for {order_id}" for i in range(40))
    return f'{{"order": "{order_id}", "status": "in transit", "log": "{events}"}}'


@tool
def audit_log(order_id: str) -> str:
    """Audit trail of an order."""
    return f"{order_id}: created, paid, picked, packed, shipped"


def _call(name: str, args: dict[str, Any], cid: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": cid}])


def parent_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if last.type == "tool":
        return AIMessage(f"Here is what I found: {last.text[:60]}")
    turn = sum(1 for m in messages if m.type == "human")
    if turn % DELEGATE_EVERY == 0:
        args = {"agent": "auditor", "task": f"Audit order ORD-{turn:04d}", "inputs": {}}
        return _call("delegate", args, f"d{turn}")
    return _call("get_order", {"order_id": f"ORD-{turn:04d}"}, f"g{turn}")


def child_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    if messages[-1].type == "tool":
        return AIMessage(f"Audit complete: {messages[-1].text}")
    return _call("audit_log", {"order_id": "ORD-AUDIT"}, "a1")


THOUGHT = {
    "hypothesis": "The user wants the order's status",
    "confidence": 0.9,
    "gaps": [],
    "next_thought_needed": False,
    "actions": [{"kind": "tool_call", "detail": "get_order", "expected_utility": 0.8}],
}


def order_desk(model: Any, turns: int, thread: str, **options: Any) -> Any:
    """The agent with :func:`get_order` at a 12K window, asked about one order a turn
    for ``turns`` turns on ``thread``; ``options`` go to ``create_context_agent``."""
    agent = create_context_agent(
        model,
        [get_order],
        always_include=["get_order"],
        system_prompt=SYSTEM,
        budget=Budget.for_window(12_000),
        **options,
    )
    config: Any = {"configurable": {"thread_id": thread}}
    for turn in range(1, turns + 1):
        agent.invoke({"messages": [HumanMessage(f"Turn {turn}: where is ORD-{turn:04d}?")]}, config)
    return agent


@dataclass(frozen=True)
class Session:
    calls: list[tuple[BaseMessage, ...]]
    """Every model call's messages, the parent's and the sub-agent's, in order."""
    summaries: list[str]
    """The text of every summary the parent's history held."""
    history: list[BaseMessage]
    """The parent's history as checkpointed (summaries as marked system messages)."""


@functools.cache
def run_session(placement: Placement = "system") -> Session:
    parent = ScriptedChatModel(default=parent_reply, structured_default=THOUGHT)
    child = ScriptedChatModel(default=child_reply, structured_default=THOUGHT)
    auditor = SubAgentSpec(
        name="auditor",
        kind="tool",
        description="audits an order",
        system_prompt="You audit orders.",
        tools=[audit_log],
        model=child,
    )
    bank = MemoryBank()
    bank.remember(("ana",), MEMORY, level="principle")
    agent = create_context_agent(
        parent,
        [get_order, SubAgents([auditor]).tool()],
        always_include=["get_order", "delegate"],
        system_prompt=SYSTEM,
        budget=Budget.for_window(12_000),
        memory=bank,
        placement=placement,
    )
    config: Any = {"configurable": {"thread_id": "matrix", "user_id": "ana"}}
    for turn in range(1, TURNS + 1):
        question = f"Turn {turn}: where is order ORD-{turn:04d}, and which carrier do I use?"
        agent.invoke({"messages": [HumanMessage(question)]}, config)
    history = agent.get_state(config).values["messages"]
    from langgraph_ctx.markers import is_summary, summary_body

    summaries = [summary_body(m) for m in history if is_summary(m)]
    calls = [c.messages for c in parent.calls] + [c.messages for c in child.calls]
    return Session(calls, summaries, list(history))


@functools.cache
def run_arc_session() -> tuple[list[tuple[BaseMessage, ...]], list[str]]:
    """``strategy="arc"`` over a few turns with tools: the model calls' messages up to
    the one whose memory had the most entries, and those entries as that call (the
    last returned) sent them (one content block each)."""
    parent = ScriptedChatModel(default=parent_reply, structured_default=THOUGHT)
    order_desk(parent, 8, "matrix-arc", strategy="arc", think=False)
    # The call whose memory had the most entries, and the calls up to it: a
    # reflection (no progress every few folds; each turn folds its question on
    # its own since 7a375dc) starts the memory over at one block, so the last
    # call's memory may hold only one or two entries.
    calls = [c.messages for c in parent.calls]
    memories = [next(m for m in c if isinstance(m.content, list)) for c in calls]
    widest = max(range(len(calls)), key=lambda i: (len(memories[i].content), i))
    blocks = memories[widest].content
    return calls[: widest + 1], [b["text"] for b in blocks if isinstance(b, dict)]
