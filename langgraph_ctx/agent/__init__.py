"""A prebuilt agent on the pipeline, sub-agents, and the nodes both are made of."""

from langgraph_ctx.agent.nodes import (
    SuggestedAction,
    ThinkSettings,
    Thought,
    call_llm_node,
    fetch_tools_node,
    reasoning_overhead,
    route_after_think,
    think_node,
    update_confidence,
)
from langgraph_ctx.agent.prebuilt import AgentOptions, build_context_agent, create_context_agent
from langgraph_ctx.agent.subagents import (
    ArtifactStore,
    SubAgentResult,
    SubAgents,
    SubAgentSpec,
)
from langgraph_ctx.strategies.registry import STRATEGIES, strategy_middleware

__all__ = [
    "STRATEGIES",
    "AgentOptions",
    "ArtifactStore",
    "SubAgentResult",
    "SubAgentSpec",
    "SubAgents",
    "SuggestedAction",
    "ThinkSettings",
    "Thought",
    "build_context_agent",
    "call_llm_node",
    "create_context_agent",
    "fetch_tools_node",
    "reasoning_overhead",
    "route_after_think",
    "strategy_middleware",
    "think_node",
    "update_confidence",
]
