"""Agents the tests build the same way: ``create_context_agent`` with one tool."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent


def one_tool_agent(
    model: Any, tool: BaseTool, strategy: str, window: int | None = None, **options: Any
) -> Any:
    """The agent with ``tool`` always bound, under ``strategy``, at ``window`` tokens
    (``None``: the default budget); ``options`` go to ``create_context_agent``."""
    if window is not None:
        options["budget"] = Budget.for_window(window)
    return create_context_agent(
        model, [tool], strategy=strategy, always_include=[tool.name], **options
    )
