"""The traps a first agent falls into name their fix in the error (issue 33).

A user's first ``create_context_agent`` thinks by default (``think=True``), which
asks the model for a structured thought; a model without one, or a scripted model
with plain replies only, failed with an error that did not say ``think=False``.
A model whose window is unknown is refused with the option that fixes it.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from langgraph_ctx import ConfigurationError
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.scripted import ScriptExhaustedError


@tool
def lookup(order_id: str) -> str:
    """The status of an order."""
    return f"{order_id}: shipped"


def test_a_scripted_model_without_thoughts_names_think_false_and_structured_default() -> None:
    agent = create_context_agent(ScriptedChatModel(default="ok"), [lookup])
    with pytest.raises(ScriptExhaustedError) as raised:
        agent.invoke({"messages": [HumanMessage("Hi")]}, {"configurable": {"thread_id": "t"}})
    message = str(raised.value)
    assert "think=False" in message
    assert "structured_default=thought_about_the_question()" in message
    # The fix it names works.
    fixed = create_context_agent(ScriptedChatModel(default="ok"), [lookup], think=False)
    out = fixed.invoke({"messages": [HumanMessage("Hi")]}, {"configurable": {"thread_id": "t"}})
    assert out["messages"][-1].text == "ok"


class ToolsOnly:
    """A chat model that binds tools but has no structured output."""

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def test_a_model_without_structured_output_is_told_about_think_false() -> None:
    with pytest.raises(ConfigurationError, match="model") as raised:
        create_context_agent(ToolsOnly(), [lookup])
    assert "think=False" in str(raised.value) and "think_model=" in str(raised.value)


def test_a_provider_name_string_is_still_told_about_init_chat_model() -> None:
    with pytest.raises(ConfigurationError, match=r"init_chat_model\('openai:gpt-4o'\)") as raised:
        create_context_agent("openai:gpt-4o")
    assert "think=False" not in str(raised.value)


def test_a_model_with_an_unknown_window_is_told_to_pass_window() -> None:
    pytest.importorskip("langchain_openai")  # the providers extra, part of dev
    from langchain_openai import ChatOpenAI

    local = ChatOpenAI(model="my-local-llama", base_url="http://127.0.0.1:1/v1", api_key="sk-test")
    with pytest.raises(ConfigurationError, match=r"window=<tokens>"):
        create_context_agent(local, [lookup])
    agent = create_context_agent(local, [lookup], window=8192, think=False)
    assert agent is not None
