"""What you need to test your own agents: a scripted chat model and workloads."""

from langgraph_ctx.testing.scripted import (
    ModelCall,
    ScriptedChatModel,
    ScriptExhaustedError,
    thought_about_the_question,
)
from langgraph_ctx.testing.workloads import Fact, ToolStep, Turn, Workload, generate_session

__all__ = [
    "Fact",
    "ModelCall",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "ToolStep",
    "Turn",
    "Workload",
    "generate_session",
    "thought_about_the_question",
]
