"""Summarizers for tiered compression.

A summary replaces messages in the active state, so what it drops the agent
forgets (the originals stay only in the archive). Identifiers, amounts, dates
and names are what later turns most often need verbatim, so both summarizers
are built, and measured, around keeping them:

- :class:`ChatModelSummarizer` asks a (usually small) chat model, and falls
  back when the model fails, times out or returns nothing usable.
- :class:`ExtractiveSummarizer` (:mod:`langgraph_ctx.compression._extractive`) selects and
  compacts sentences without a model: deterministic, offline, the default and
  the fallback.

The entity measure that judges them lives in :mod:`langgraph_ctx.compression._entities`.
The public names are listed once, in :mod:`langgraph_ctx.compression`: import them
from there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_ctx._checks import check_has, check_instance, check_str, check_timeout
from langgraph_ctx._workers import acall_with_timeout, call_with_timeout, native_async

# Re-exported (``as``) for the modules that import them from here.
from langgraph_ctx.compression._entities import entities as entities
from langgraph_ctx.compression._entities import entity_retention as entity_retention
from langgraph_ctx.compression._entities import message_entities, retention
from langgraph_ctx.compression._extractive import ExtractiveSummarizer as ExtractiveSummarizer
from langgraph_ctx.compression._prose import role_head
from langgraph_ctx.errors import ConfigurationError

SUMMARY_PROMPT = """\
You condense the older part of a conversation between a user, an AI assistant \
and its tools, so that the assistant can carry on without the original messages.

Keep:
- decisions, commitments and conclusions;
- data values, identifiers, amounts, dates and proper nouns, copied exactly;
- the user's preferences and constraints;
- tool results that still matter: which tool, and the values it returned.

Drop pleasantries, small talk and restatements. Never invent anything. Write \
terse plain-text lines, and stay under {max_tokens} tokens."""
"""The default prompt; ``{max_tokens}`` is replaced by the summary's budget."""


class Summarizer(Protocol):
    """Turns a block of messages into a summary of at most ``max_tokens`` tokens."""

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        """Summarize ``messages``. ``previous`` is the last summary, for context only:
        the caller keeps it as its own message, so it is not repeated."""
        ...

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str: ...


# --- chat model ---------------------------------------------------------------

FallbackHook = Callable[[str, BaseException | None], None]
"""Told why a summary fell back: ``"error"``, ``"timeout"``, ``"empty"`` or ``"useless"``."""


def transcript(messages: Sequence[BaseMessage]) -> str:
    """Messages as a role-labelled transcript; tool calls as name and JSON arguments."""
    tool_names: dict[str, str] = {}
    lines: list[str] = []
    for message in messages:
        head, text = role_head(message, tool_names), str(message.text)
        if text or not isinstance(message, AIMessage):
            lines.append(head + text)
        for call in getattr(message, "tool_calls", None) or ():
            tool_names[call.get("id") or ""] = call["name"]
            args = json.dumps(call["args"], ensure_ascii=False, default=str)
            lines.append(f"Assistant called {call['name']}({args})")
    return "\n".join(lines)


class ChatModelSummarizer:
    """Summarizes with any LangChain chat model, within a timeout, with a fallback.

    The model gets :data:`SUMMARY_PROMPT` as a system message and the transcript
    as one human message. When it raises, times out, returns nothing, or returns
    something useless (no entity of the originals, when they had three or more;
    or longer than the transcript), ``on_fallback(reason, exc)`` is called and
    the fallback's summary (extractive by default) is returned instead.

    An async model call is cancelled at its timeout. A sync call (and, under
    ``ainvoke``, a model with no async implementation of its own) runs in the
    package's small pool of daemon threads so the timeout can be enforced; on
    timeout the thread is abandoned, not killed (Python cannot), its result
    discarded, and at most the pool's few threads are ever held. The caller's
    context variables (callbacks, tracing) are carried into it.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        prompt: str = SUMMARY_PROMPT,
        timeout: float | None = 30.0,
        fallback: Summarizer | None = None,
        on_fallback: FallbackHook | None = None,
    ) -> None:
        check_instance("model", model, BaseChatModel, "a LangChain chat model")
        check_str("prompt", prompt)
        check_timeout("timeout", timeout)
        if fallback is not None:
            check_has("fallback", fallback, ("summarize", "asummarize"), "a Summarizer")
        if on_fallback is not None and not callable(on_fallback):
            raise ConfigurationError("on_fallback", f"expected a callable, got {on_fallback!r}")
        self.model = model
        self.prompt = prompt
        self.timeout = timeout
        self.fallback: Summarizer = fallback or ExtractiveSummarizer()
        self.on_fallback = on_fallback

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        _check_budget(max_tokens)
        request, body = self._request(messages, previous, max_tokens)
        try:
            reply = self._invoke(request)
        except Exception as exc:
            self._fell_back(_reason(exc), exc)
        else:
            verdict = _judge(reply, messages, body)
            if verdict is None:
                return reply
            self._fell_back(verdict, None)
        return self.fallback.summarize(messages, previous=previous, max_tokens=max_tokens)

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        _check_budget(max_tokens)
        request, body = self._request(messages, previous, max_tokens)
        try:
            result = await self._ainvoke(request)
        except Exception as exc:
            self._fell_back(_reason(exc), exc)
        else:
            reply = str(result.text).strip()
            verdict = _judge(reply, messages, body)
            if verdict is None:
                return reply
            self._fell_back(verdict, None)
        return await self.fallback.asummarize(messages, previous=previous, max_tokens=max_tokens)

    def _request(
        self, messages: Sequence[BaseMessage], previous: str | None, max_tokens: int
    ) -> tuple[list[BaseMessage], str]:
        body = transcript(messages)
        text = f"Conversation to summarize:\n\n{body}"
        if previous:
            text = f"Earlier summary, for context only; do not repeat it:\n{previous}\n\n{text}"
        system = SystemMessage(self.prompt.replace("{max_tokens}", str(max_tokens)))
        return [system, HumanMessage(text)], body

    def _invoke(self, request: list[BaseMessage]) -> str:
        if self.timeout is None:
            return str(self.model.invoke(request).text).strip()
        return str(
            call_with_timeout(partial(self.model.invoke, request), self.timeout).text
        ).strip()

    async def _ainvoke(self, request: list[BaseMessage]) -> BaseMessage:
        if native_async(self.model):
            # A coroutine: the timeout cancels it, and the request with it.
            return await asyncio.wait_for(self.model.ainvoke(request), self.timeout)
        # A sync-only model's ainvoke runs it in the event loop's default executor,
        # where a hung call outlives the timeout and piles up threads (and
        # asyncio.run waits for them at exit): run it in the package's pool.
        return await acall_with_timeout(partial(self.model.invoke, request), self.timeout)

    def _fell_back(self, reason: str, exc: BaseException | None) -> None:
        if self.on_fallback is not None:
            self.on_fallback(reason, exc)


def _check_budget(max_tokens: int) -> None:
    if max_tokens <= 0:
        raise ConfigurationError(
            "max_tokens", f"a summary needs a positive budget, got {max_tokens}"
        )


def _reason(exc: BaseException) -> str:
    timeouts = (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError)
    return "timeout" if isinstance(exc, timeouts) else "error"


def _judge(reply: str, messages: Sequence[BaseMessage], body: str) -> str | None:
    """Why ``reply`` is unusable, or ``None`` if it will do."""
    if not reply:
        return "empty"
    if len(reply) > len(body):
        return "useless"  # a "summary" longer than what it summarizes
    wanted = message_entities(messages)
    return "useless" if len(wanted) >= 3 and retention(wanted, reply) == 0 else None
