"""Graph nodes that run under the pipeline."""

from langgraph_ctx.nodes.call_llm import call_llm_node

__all__ = ["call_llm_node"]
