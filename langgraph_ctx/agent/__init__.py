"""A prebuilt agent on the pipeline, sub-agents, and the nodes both are made of."""

from langgraph_ctx.agent.nodes import ThinkSettings, Thought
from langgraph_ctx.agent.prebuilt import AgentOptions, build_context_agent, create_context_agent
from langgraph_ctx.agent.subagents import SubAgentResult, SubAgents, SubAgentSpec

__all__ = [
    "AgentOptions",
    "SubAgentResult",
    "SubAgentSpec",
    "SubAgents",
    "ThinkSettings",
    "Thought",
    "build_context_agent",
    "create_context_agent",
]
