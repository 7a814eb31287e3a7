"""What you need to test your own agents: a scripted chat model and workloads."""

from langgraph_ctx.testing.scripted import ScriptedChatModel, thought_about_the_question

__all__ = [
    "ScriptedChatModel",
    "thought_about_the_question",
]
