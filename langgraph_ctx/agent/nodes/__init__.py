"""Graph nodes that run under the pipeline."""

from langgraph_ctx.agent.nodes.call_llm import call_llm_node
from langgraph_ctx.agent.nodes.fetch_tools import fetch_tools_node
from langgraph_ctx.agent.nodes.think import (
    SuggestedAction,
    ThinkSettings,
    Thought,
    reasoning_overhead,
    route_after_think,
    think_node,
    update_confidence,
)

__all__ = [
    "SuggestedAction",
    "ThinkSettings",
    "Thought",
    "call_llm_node",
    "fetch_tools_node",
    "reasoning_overhead",
    "route_after_think",
    "think_node",
    "update_confidence",
]
