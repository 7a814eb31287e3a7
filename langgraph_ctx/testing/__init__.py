"""What you need to test your own agents: a scripted chat model and workloads."""

from langgraph_ctx.testing.scripted import ModelCall, ScriptedChatModel, ScriptExhaustedError

__all__ = ["ModelCall", "ScriptExhaustedError", "ScriptedChatModel"]
