"""The ``call_llm`` node: build the prompt from the middleware's view and call the model.

The view already holds what the middleware decided for this call: pinned
messages, summaries, an ephemeral recall block, the history. The node adds
the system prompt and the current thought (ephemeral, this call only), binds
the tools the pipeline left bound (after eviction), and returns the model's
reply. The final prompt is placed for the provider
(:func:`~langgraph_ctx.middleware.placement.place_messages`) as the pipeline's
:class:`~langgraph_ctx.middleware.ProviderPlacement` chose, or as ``placement``
says without one (the prebuilt agent runs one: the system prompt and summaries
in one leading system message, the thought in the last user message). With an
Anthropic model, the prompt carries cache breakpoints where it stops being the
previous call's (:mod:`~langgraph_ctx.history.breakpoints`): Anthropic
caches nothing unmarked, the other providers need no marks. With a Mistral
model, the text of an assistant message that calls tools goes to its first
result (:func:`~langgraph_ctx.middleware.placement.text_off_calls`): the client
sends such a message empty. With a
thought, a compact note of the plan enters the history next to the reply.
Provider-reported usage on the reply is what pre-flight calibrates against;
reply tokens are tallied as actionable tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from langgraph_ctx._checks import check_bool
from langgraph_ctx.agent.nodes.think import current_thought, graph_state, note
from langgraph_ctx.history.breakpoints import TAIL, is_anthropic, mark_breakpoints
from langgraph_ctx.middleware.placement import (
    Placement,
    check_placement,
    drops_text_beside_calls,
    final_placement,
    place_messages,
    text_off_calls,
)
from langgraph_ctx.middleware.thought import thought_message
from langgraph_ctx.pipeline.context import current_context
from langgraph_ctx.tokens import TokenCounter


def call_llm_node(
    model: BaseChatModel,
    *,
    tools: Sequence[Any] = (),
    system_prompt: str | None = None,
    placement: Placement | None = None,
    cache_breakpoints: bool = True,
) -> Runnable[Any, dict[str, Any]]:
    """A graph node (sync and async) that calls ``model`` on the current view.

    ``tools`` are bound when the node runs outside a pipeline; inside one, the
    pipeline's bound tools (``ctx.tools``, after any eviction) are used.
    ``placement``: where summaries and per-call context go when no
    :class:`~langgraph_ctx.middleware.ProviderPlacement` runs on the node
    (``"system"``, ``"pair"``, or ``None``/``"none"`` for the prompt as built).
    ``cache_breakpoints``: with an Anthropic model (``langchain_anthropic``), mark
    the prompt cache's breakpoints (:func:`~langgraph_ctx.history.breakpoints.mark_breakpoints`
    and the request's own); ignored for other models.
    """
    counter = TokenCounter()
    if placement is not None:
        check_placement(placement, "call_llm_node.placement")
    check_bool("call_llm_node.cache_breakpoints", cache_breakpoints)
    marked = cache_breakpoints and is_anthropic(model)
    extra: dict[str, Any] = dict(TAIL) if marked else {}
    # Mistral's client empties an assistant message that calls tools: the [plan]
    # note and BACM's step tags folded into it would never reach the model.
    calls_bare = drops_text_beside_calls(model)

    def prepare(state: Mapping[str, Any]) -> tuple[Runnable[Any, BaseMessage], list[BaseMessage]]:
        ctx = current_context()
        bound = ctx.tools if ctx is not None else list(tools)
        runnable: Runnable[Any, BaseMessage] = model.bind_tools(bound) if bound else model
        messages: list[BaseMessage] = list(state.get("messages") or ())
        if system_prompt:
            messages.insert(0, SystemMessage(system_prompt))
        # The message pre-flight counted as this call's auxiliary text, built by the
        # same function from the same (graph) state: what is measured is what is sent.
        shown = thought_message(graph_state(state))
        if shown is not None:
            messages.append(shown)
        mode = final_placement(placement)
        placed = place_messages(messages, mode) if mode is not None else messages
        placed = text_off_calls(placed) if calls_bare else placed
        return runnable, mark_breakpoints(placed) if marked else placed

    def finish(state: Mapping[str, Any], reply: BaseMessage) -> dict[str, Any]:
        thought = current_thought(graph_state(state))
        tallied = int((state.get("session") or {}).get("actionable_tokens", 0))
        return {
            "messages": [_noted(note(thought), reply), reply] if thought is not None else [reply],
            "session": {"actionable_tokens": tallied + counter.count_message(reply)},
        }

    def run(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        runnable, messages = prepare(state)
        return finish(state, runnable.invoke(messages, config, **extra))

    async def arun(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        runnable, messages = prepare(state)
        return finish(state, await runnable.ainvoke(messages, config, **extra))

    return RunnableLambda(run, afunc=arun, name="call_llm")


def _noted(trace: BaseMessage, reply: BaseMessage) -> BaseMessage:
    """The thought's trace, with an id that follows its reply's (unique as the reply's
    is). Left to the reducer, it got a random one, and BACM's step tags and fold
    digests, named after ids, changed the prompt's tokens from run to run: the same
    dialogue, the same model, folded differently."""
    if reply.id is None:
        return trace
    return trace.model_copy(update={"id": f"{reply.id}-plan"})
