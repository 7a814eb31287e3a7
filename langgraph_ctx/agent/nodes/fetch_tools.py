"""The ``fetch_tools`` node: load the tools the current thought plans to use.

Binding itself happens on ``call_llm`` (the pipeline binds the always-include
set plus the session's cache, after eviction). This node only adds to the
cache: a tool the thought names in its top suggested actions, or, for a tool
call it describes without a known name, the best ``search_tools`` match. So a
thought that plans a tool call does not cost an extra model round trip to
discover the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda

from langgraph_ctx.agent.nodes.think import current_thought
from langgraph_ctx.tools import ToolRegistry


def fetch_tools_node(registry: ToolRegistry, *, top: int = 2) -> Runnable[Any, dict[str, Any]]:
    """A graph node that touches the planned tools in the state's ``tool_cache``."""

    def run(state: Mapping[str, Any]) -> dict[str, Any]:
        thought = current_thought(state)
        wanted: list[str] = []
        for action in thought.actions[:top] if thought else []:
            if action.kind != "tool_call":
                continue
            named = [n for n in registry.names if n in action.detail]
            wanted += named or registry.search(action.detail, k=1)
        return {"tool_cache": list(dict.fromkeys(wanted))} if wanted else {}

    return RunnableLambda(run, name="fetch_tools")
