"""Anthropic prompt caching through create_agent: the breakpoint closes the stable prefix.

LangChain's ``AnthropicPromptCachingMiddleware``, inside our adapter, tags the last
block of the request's system message. With placement ``"system"`` that block ends
with our summaries, so the cache breakpoint covers system prompt + summaries, and
the recall block (which changes every call) comes after it, in the last user turn.
The payload is built offline by ``ChatAnthropic``'s own builder (a dummy key); the
innermost middleware hands back a canned answer instead of calling the API.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_anthropic import ChatAnthropic
from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import Budget, MemoryBank, MemoryRecall, PreflightCheck, TieredCompression
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.markers import RECALL_PREFIX, SUMMARY_PREFIX
from langgraph_ctx.strategies import ReflectiveContextManager

PROMPT = "You are a stock assistant."
MEMORY = "Rotterdam stock is counted every Monday."


class OfflineAnthropic(AgentMiddleware):
    """Innermost: builds the Anthropic request payload, answers without the network."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        model = request.model
        assert isinstance(model, ChatAnthropic)
        head = [request.system_message] if request.system_message is not None else []
        messages = [*head, *request.messages]
        # The tools as ChatAnthropic binds them (their cache_control included).
        bound = model.bind_tools(request.tools).kwargs if request.tools else {}  # type: ignore[attr-defined]
        settings = {**bound, **request.model_settings}
        self.payloads.append(model._get_request_payload(messages, **settings))
        return ModelResponse(result=[AIMessage("Counted: " + "units in stock " * 30)])


def text_of(block: Any) -> str:
    return block["text"] if isinstance(block, dict) else str(block)


@pytest.mark.slow
def test_the_cache_breakpoint_lands_after_the_summaries_and_before_recall() -> None:
    bank = MemoryBank()
    bank.remember(("ana",), MEMORY, level="principle")
    layers = [PreflightCheck(), TieredCompression(), MemoryRecall(bank)]
    offline = OfflineAnthropic()
    agent = create_agent(
        ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-test"),  # type: ignore[call-arg]
        [],
        system_prompt=PROMPT,
        middleware=[
            ContextMiddleware(layers, budget=Budget.for_window(4_000)),
            AnthropicPromptCachingMiddleware(),
            offline,
        ],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "cache", "user_id": "ana"}}
    for turn in range(60):
        question = f"Turn {turn}: how much Rotterdam stock is counted for SKU-{turn:03d}?"
        agent.invoke({"messages": [HumanMessage(question)]}, config)

    last = offline.payloads[-1]
    system = last["system"]
    assert isinstance(system, list) and system[-1]["cache_control"]["type"] == "ephemeral"
    cached = "\n".join(text_of(b) for b in system)
    assert cached.startswith(PROMPT) and SUMMARY_PREFIX in cached  # the stable prefix
    assert RECALL_PREFIX not in cached  # per-call context is never inside it
    # Recall (recall_refresh="delta"): in the user message of the turn that first
    # showed each line, after the breakpoint.
    users = [json.dumps(m["content"]) for m in last["messages"] if m["role"] == "user"]
    assert any(RECALL_PREFIX in u and MEMORY in u for u in users)
    # Between two compressions the cached prefix is byte-identical: the system
    # block changes only when the summaries do.
    systems = [json.dumps(p["system"]) for p in offline.payloads]
    headers = [[line for line in s.split("\\n") if SUMMARY_PREFIX in line] for s in systems]
    for i in range(1, len(systems)):
        assert (systems[i] == systems[i - 1]) == (headers[i] == headers[i - 1])
    runs = [len(list(g)) for _, g in itertools.groupby(systems)]
    assert len(runs) >= 3 and max(runs[1:]) >= 5  # compressions, each prefix served again


def test_inside_create_agent_arc_memory_gets_the_fourth_breakpoint() -> None:
    # AnthropicPromptCachingMiddleware marks the tools, the system message and the
    # tail; ContextMiddleware marks where ARC's memory ends (the one place the
    # previous call's prompt survives), and never a fifth.
    offline = OfflineAnthropic()

    @tool
    def lookup(vendor: str) -> str:
        """The vendor's open invoices."""
        return f"{vendor}: 3 open invoices"

    agent = create_agent(
        ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-test"),  # type: ignore[call-arg]
        [lookup],
        system_prompt=PROMPT,
        middleware=[
            ContextMiddleware(
                [PreflightCheck(), ReflectiveContextManager(in_background=False)],
                budget=Budget.for_window(32_000),
            ),
            AnthropicPromptCachingMiddleware(),
            offline,
        ],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "arc"}}
    for turn in range(8):
        agent.invoke({"messages": [HumanMessage(f"Turn {turn}: check Vendor {turn}.")]}, config)

    for before, after in itertools.pairwise(offline.payloads[3:]):
        assert json.dumps(after).count('"cache_control"') == 4  # tools, system, memory, tail
        [marked] = [
            b
            for m in before["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if isinstance(b, dict) and "cache_control" in b
        ]
        assert marked["text"].startswith("\n> (t")  # the memory's newest entry
        kept = {k: v for k, v in marked.items() if k != "cache_control"}
        assert kept in after["messages"][0]["content"]  # still a block of its own
