"""What BACM and the think node add reaches every client's payload.

langchain-mistralai sends an assistant message that carries tool calls with empty
content: the ``[plan]`` note folded into it and BACM's ``[step ...]`` tags never
reached a Mistral model. The agent here runs on the real ``ChatMistralAI`` client
with only its network call replaced by a script, and every payload the client built
is checked."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langgraph_ctx import Budget
from langgraph_ctx.middleware.placement import drops_text_beside_calls, text_off_calls
from langgraph_ctx.testing import ScriptedChatModel

from .session import THOUGHT, get_order, order_desk, parent_reply
from .test_provider_matrix import CLIENTS, _escaped, _payloads

mistralai = pytest.importorskip("langchain_mistralai")
PAYLOADS: list[list[dict[str, Any]]] = []


class ScriptedMistral(mistralai.ChatMistralAI):  # type: ignore[misc,name-defined]
    """The real client, whose request is built and recorded, then answered by script."""

    def _generate(self, messages: list[BaseMessage], stop: Any = None, *a: Any, **kw: Any) -> Any:
        PAYLOADS.append(self._create_message_dicts(messages, stop)[0])
        return ChatResult(generations=[ChatGeneration(message=parent_reply(messages))])


@pytest.mark.slow
def test_the_plan_note_and_bacms_step_ids_reach_a_mistral_model() -> None:
    PAYLOADS.clear()
    model = ScriptedMistral(model="mistral-large-latest", api_key="test")
    thinker = ScriptedChatModel(structured_default=THOUGHT)
    order_desk(model, 4, "mistral", strategy="bacm", think_model=thinker)
    assert len(PAYLOADS) >= 8
    # Every step that called a tool was planned (think) and is a block (BACM): its
    # note and its tag are in what the client sends, with its first result.
    steps = _tool_steps(PAYLOADS)
    for m, after in steps:
        assert not m["content"]  # the client's rule, kept: Mistral takes it
        said = str(after["content"])
        assert after["role"] == "tool" and "[plan]" in said, said[:200]
        assert re.search(r"\[step c[0-9a-f]{5}", said), said[:200]
    assert len(steps) >= 6


def _tool_steps(payloads: list[list[dict[str, Any]]]) -> list[tuple[dict[str, Any], ...]]:
    """Each assistant message of the payloads that calls tools, with the message after it."""
    return [
        (m, after)
        for payload in payloads
        for m, after in pairwise(payload)
        if m["role"] == "assistant" and m.get("tool_calls")
    ]


def test_only_mistral_clients_are_told_apart() -> None:
    from langchain_core.tools import tool

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    mistral = mistralai.ChatMistralAI(model="mistral-large-latest", api_key="test")
    assert drops_text_beside_calls(mistral)
    assert drops_text_beside_calls(mistral.bind_tools([ping]))
    assert not drops_text_beside_calls(ScriptedChatModel())


def test_text_moves_to_the_first_result_and_nothing_else_changes() -> None:
    call = AIMessage(
        "[step c1a2b3]\n[plan] look it up",
        id="a",
        tool_calls=[{"name": "f", "args": {}, "id": "k1"}, {"name": "g", "args": {}, "id": "k2"}],
    )
    history: list[BaseMessage] = [
        HumanMessage("q", id="q"),
        call,
        ToolMessage("one", tool_call_id="k1", id="r1"),
        ToolMessage("two", tool_call_id="k2", id="r2"),
        AIMessage("done", id="d"),
    ]
    out = text_off_calls(history)
    assert out[1].content == "" and out[1].tool_calls == call.tool_calls
    assert out[2].content == "[step c1a2b3]\n[plan] look it up\n\none"
    assert [m.content for m in out[3:]] == ["two", "done"] and out[0] is history[0]
    assert history[1].content == call.content  # the input is never changed in place


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.slow
def test_every_client_takes_bacms_prompts_with_the_line_in_a_block_of_its_own(client: str) -> None:
    """The budget line closes the last pending message as a content block of its own
    (a tool result's content is then a list): every client's builder takes it, and
    the line is in what it sends."""
    model = ScriptedChatModel(default=parent_reply)
    order_desk(model, 3, "bacm-matrix", strategy="bacm", think=False)
    calls = [c.messages for c in model.calls]
    assert any(isinstance(m.content, list) and m.type == "tool" for c in calls for m in c)
    payloads = _payloads(CLIENTS[client](), calls)
    assert all(_escaped("[Context budget: used ") in p for p in payloads)


def test_inside_create_agent_bacms_step_ids_reach_a_mistral_model() -> None:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph_ctx import BudgetAwareFolding, PreflightCheck
    from langgraph_ctx.interop import ContextMiddleware

    PAYLOADS.clear()
    model = ScriptedMistral(model="mistral-large-latest", api_key="test")
    middleware = ContextMiddleware(
        [PreflightCheck(), BudgetAwareFolding()], budget=Budget.for_window(12_000)
    )
    agent = create_agent(model, [get_order], middleware=[middleware], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "mistral-create-agent"}}
    for turn in range(1, 4):
        agent.invoke({"messages": [HumanMessage(f"Turn {turn}: where is ORD-{turn:04d}?")]}, config)
    steps = _tool_steps(PAYLOADS)
    for _, after in steps:
        assert re.search(r"\[step c[0-9a-f]{5}", str(after["content"]))
    assert len(steps) >= 3
