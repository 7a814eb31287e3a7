"""The ``call_llm`` node: build the prompt from the middleware's view and call the model.

The view already holds what the middleware decided for this call: compressed
history, summaries, an ephemeral recall block. The node adds the system
prompt, binds the tools the pipeline left bound (after eviction), and returns
the model's reply as the node's update. Provider-reported usage on that reply
is what pre-flight calibrates against.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from langgraph_ctx.pipeline import current_context


def call_llm_node(
    model: BaseChatModel, *, tools: Sequence[Any] = (), system_prompt: str | None = None
) -> Runnable[Any, dict[str, Any]]:
    """A graph node (sync and async) that calls ``model`` on the current view.

    ``tools`` are bound when the node runs outside a pipeline; inside one, the
    pipeline's bound tools (``ctx.tools``, after any eviction) are used.
    """

    def prepare(state: Any) -> tuple[Runnable[Any, BaseMessage], list[BaseMessage]]:
        ctx = current_context()
        bound = ctx.tools if ctx is not None else list(tools)
        runnable: Runnable[Any, BaseMessage] = model.bind_tools(bound) if bound else model
        messages: list[BaseMessage] = list(state.get("messages") or ())
        if system_prompt:
            messages.insert(0, SystemMessage(system_prompt))
        return runnable, messages

    def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
        runnable, messages = prepare(state)
        return {"messages": [runnable.invoke(messages, config)]}

    async def arun(state: Any, config: RunnableConfig) -> dict[str, Any]:
        runnable, messages = prepare(state)
        return {"messages": [await runnable.ainvoke(messages, config)]}

    return RunnableLambda(run, afunc=arun, name="call_llm")
