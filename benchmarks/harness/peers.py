"""The baselines, through their real packages (the ``bench`` extra: langchain, langmem).

Settings, all derived from the window through ``limit``, the largest prompt that leaves
the output reserve and safety margin (see :class:`~benchmarks.harness.strategies.Setup`):

- ``trim_messages``: ``strategy="last"``, ``start_on="human"``, ``include_system=True``,
  ``max_tokens=limit``; applied to the full history before every call.
- ``SummarizationMiddleware`` on ``create_agent``: triggers when the conversation reaches
  ``limit`` (less the policy, which ``create_agent`` adds itself), keeps the most recent
  ``55% of the window - summary - policy`` tokens (so that it lands where ours compresses
  to); ``trim_tokens_to_summarize`` left at its default.
- ``ContextEditingMiddleware`` on ``create_agent``: one ``ClearToolUsesEdit`` triggered
  at ``limit`` less the policy, otherwise its defaults (keep the 3 latest results).
- langmem ``summarize_messages``: ``max_tokens=limit``, summarizing once the unsummarized
  messages reach ``limit - summary - policy``; its ``RunningSummary`` is carried by the
  runner between calls (it is not a checkpointed value).
- langmem with recall (:func:`build_langmem_recall`): the same, plus recall as langmem's
  "Hot Path Quickstart" builds it (langchain-ai.github.io/langmem/hot_path_quickstart):
  a prompt function searches the store with the last message's content and writes the
  memories found into the system message. The store is a LangGraph ``InMemoryStore``
  indexed with the bundled MiniLM embeddings; in the quickstart the agent writes its
  memories with a tool, which a replay cannot, so each message ``summarize_messages``
  takes out of the prompt becomes one memory (its text, cut to
  :data:`MEMORY_CHARS` characters): what ours recalls from, the archive of what
  compression removed. ``store.search``'s default limit (10).

Each is timed on its own work only (the hook, or the function), with the summary log
discounted, like ours.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage, trim_messages
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langmem.short_term import (  # type: ignore[import-untyped]  # no py.typed
    RunningSummary,
    summarize_messages,
)

from .strategies import Replay, Setup
from .summaries import CountingSummarizer, ExtractiveChatModel

Transform = Callable[[list[AnyMessage]], list[BaseMessage]]


def _summary_model(setup: Setup) -> ExtractiveChatModel:
    return ExtractiveChatModel(
        max_tokens=setup.summary_tokens, summarizer=CountingSummarizer(setup.log)
    )


def _policy_tokens(setup: Setup) -> int:
    return setup.tally(setup.policy)


def _node_graph(setup: Setup, transform: Transform) -> Replay:
    """A one-node graph whose node sends ``transform(history)`` to the model."""

    def call_llm(state: MessagesState) -> dict[str, Any]:
        start = time.perf_counter()
        prompt = transform(state["messages"])
        setup.clock.managed += time.perf_counter() - start
        return {"messages": [setup.model.invoke(prompt)]}

    builder = StateGraph(MessagesState)
    builder.add_node("call_llm", call_llm)
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", END)
    return Replay(builder.compile(checkpointer=setup.saver), setup, setup.policy)


def build_trim(setup: Setup) -> Replay:
    def transform(history: list[AnyMessage]) -> list[BaseMessage]:
        return trim_messages(
            history,
            max_tokens=setup.limit,
            token_counter=setup.tally,
            strategy="last",
            start_on="human",
            include_system=True,
        )

    return _node_graph(setup, transform)


def _langmem(setup: Setup) -> Callable[[list[AnyMessage]], tuple[list[BaseMessage], set[str]]]:
    """langmem's ``summarize_messages`` with its running summary carried between calls:
    the prompt, and the ids of every message summarized so far."""
    model = _summary_model(setup)
    carried: list[RunningSummary | None] = [None]
    before = setup.limit - setup.summary_tokens - _policy_tokens(setup)

    def summarize(history: list[AnyMessage]) -> tuple[list[BaseMessage], set[str]]:
        result = summarize_messages(
            history,
            running_summary=carried[0],
            model=model,
            max_tokens=setup.limit,
            max_tokens_before_summary=before,
            max_summary_tokens=setup.summary_tokens,
            token_counter=setup.tally,
        )
        carried[0] = result.running_summary
        done = result.running_summary.summarized_message_ids if result.running_summary else set()
        return list(result.messages), done

    return summarize


def build_langmem(setup: Setup) -> Replay:
    summarize = _langmem(setup)
    return _node_graph(setup, lambda history: summarize(history)[0])


MEMORY_CHARS = 600
"""A memory's text at most (about 150 tokens, the size of ours' archived snippets)."""


def build_langmem_recall(setup: Setup) -> Replay:
    from langgraph.store.memory import InMemoryStore

    from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings

    summarize = _langmem(setup)
    store = InMemoryStore(index={"dims": 384, "embed": MiniLMEmbeddings()})
    stored: set[str] = set()
    policy = {m.id for m in setup.policy}

    def transform(history: list[AnyMessage]) -> list[BaseMessage]:
        messages, summarized = summarize(history)
        if summarized - stored:
            for m in history:
                if m.id in summarized and m.id not in stored:
                    store.put(("memories",), str(m.id), {"content": m.text[:MEMORY_CHARS]})
            stored.update(summarized)
        found = store.search(("memories",), query=history[-1].text)
        memories = "\n".join(f"- {item.value['content']}" for item in found)
        # The quickstart's prompt: the system prompt with the memories in it, first.
        block = f"## Memories\n<memories>\n{memories}\n</memories>"
        if messages and messages[0].id in policy:
            first = SystemMessage(f"{messages[0].text}\n\n{block}", id=messages[0].id)
            return [first, *messages[1:]]
        return [SystemMessage(f"You are a helpful assistant.\n\n{block}"), *messages]

    return _node_graph(setup, transform)


class _TimedSummarization(SummarizationMiddleware):
    clock: Any = None

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        start = time.perf_counter()
        try:
            return super().before_model(state, runtime)
        finally:
            self.clock.managed += time.perf_counter() - start


class _TimedContextEditing(ContextEditingMiddleware):
    clock: Any = None

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Any]
    ) -> Any:
        inner = [0.0]

        def timed(req: ModelRequest[Any]) -> ModelResponse[Any]:
            start = time.perf_counter()
            try:
                response: ModelResponse[Any] = handler(req)
                return response
            finally:
                inner[0] += time.perf_counter() - start

        start = time.perf_counter()
        try:
            return super().wrap_model_call(request, timed)
        finally:
            self.clock.managed += time.perf_counter() - start - inner[0]


def _agent(setup: Setup, middleware: Sequence[Any]) -> Replay:
    graph = create_agent(
        setup.model,
        [],
        system_prompt=setup.session.system,
        middleware=middleware,
        checkpointer=setup.saver,
    )
    return Replay(graph, setup, [])


def build_summarization(setup: Setup) -> Replay:
    model, policy = _summary_model(setup), _policy_tokens(setup)
    keep = int(setup.window * 0.55) - setup.summary_tokens - policy
    middleware = _TimedSummarization(
        model,
        trigger=("tokens", setup.limit - policy),
        keep=("tokens", keep),
        token_counter=setup.tally,
        summarizer=lambda messages: model.invoke(messages).text,
    )
    middleware.clock = setup.clock
    return _agent(setup, [middleware])


def build_context_editing(setup: Setup) -> Replay:
    edit = ClearToolUsesEdit(trigger=setup.limit - _policy_tokens(setup))
    middleware = _TimedContextEditing(edits=[edit], token_counter=setup.tally)
    middleware.clock = setup.clock
    return _agent(setup, [middleware])
