"""A scripted chat model: the only stand-in for an LLM, shared by tests and the demo.

It replies from a script (messages, strings, or functions of what it was
sent), supports ``bind_tools`` and ``with_structured_output``, reports
``usage_metadata`` counted with a real tokenizer, and records every call so a
test can assert exactly what the model received::

    model = ScriptedChatModel(responses=["hello", AIMessage("", tool_calls=[...])])
    graph.invoke(...)
    assert "secret" not in model.calls[0].text
"""

from __future__ import annotations

import inspect
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput, ModelProfile
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from langgraph_ctx.errors import ContextRunError
from langgraph_ctx.tokens import TokenCounter

Reply = AIMessage | str | Callable[..., AIMessage | str]
"""A reply, or a function of the messages (and, if it takes two arguments, the
bound tool schemas) that returns one."""
StructuredReply = Any  # a dict, a pydantic instance, or a function of the messages


SCRIPTED_WINDOW = 128_000
"""The scripted model's window by default: a common provider window (GPT-4o's), so
an agent built on it with no budget gets ``Budget.for_window(128_000)``."""


class ScriptExhaustedError(ContextRunError):
    """The scripted model was called more times than it has replies."""


@dataclass(frozen=True)
class ModelCall:
    """One call the model received."""

    messages: tuple[BaseMessage, ...]
    tools: tuple[dict[str, Any], ...] = ()
    """Bound tool schemas, in OpenAI function format."""
    structured: str | None = None
    """The schema name, for ``with_structured_output`` calls."""
    text: str = field(default="", compare=False)
    """Every message's content joined: handy for ``in`` assertions."""

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from a script and records what it was sent.

    ``responses`` are used in order; once they run out, ``default`` (if set) is
    used for every further call, else :class:`ScriptExhaustedError` is raised.
    ``usage_scale`` multiplies the reported input tokens, to play a provider
    that counts differently from us (calibration tests).
    ``keep_calls`` bounds what :attr:`calls` keeps to the latest that many (``0``:
    none). Each call record holds its whole prompt, so keeping all of them grows
    memory by a prompt a call (4.3 GB by turn 1,200 of the demo's workload; see
    ``benchmarks/session_memory.py``): set it for long runs. The default, ``None``,
    keeps every call, for tests that read ``calls[0]``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: list[Any] = Field(default_factory=list)
    structured_responses: list[Any] = Field(default_factory=list)
    default: Any = None
    structured_default: Any = None
    usage_scale: float = 1.0
    report_usage: bool = True
    keep_calls: int | None = Field(default=None, ge=0)
    model_name: str = "scripted"
    window: int | None = Field(default=SCRIPTED_WINDOW, gt=0)
    """The context window its profile gives (``profile["max_input_tokens"]``), as
    a provider's model declares it; ``None``: a model whose window is unknown (a
    local one), which ``create_context_agent`` refuses without ``window=``."""

    _calls: deque[ModelCall] = PrivateAttr(default_factory=deque)
    _cursors: dict[bool, int] = PrivateAttr(default_factory=lambda: {False: 0, True: 0})
    """Replies used so far, by script: ``True`` for the structured one."""
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _counter: TokenCounter = PrivateAttr(default_factory=TokenCounter)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _resolve_model_profile(self) -> ModelProfile | None:
        return None if self.window is None else {"max_input_tokens": self.window}

    @property
    def calls(self) -> list[ModelCall]:
        """Every call so far (the latest ``keep_calls`` if set), in order, including
        structured-output calls."""
        return list(self._calls)

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        schemas = [t if _is_openai_tool(t) else convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=schemas, **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        name = getattr(schema, "__name__", None) or str(schema.get("title", "schema"))

        def answer(value: LanguageModelInput) -> Any:
            messages = self._convert_input(value).to_messages()
            self._record(messages, (_schema_tool(schema, name),), structured=name)
            reply = self._next_reply(name)
            if callable(reply) and not isinstance(reply, type):
                reply = reply(messages)
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                return reply if isinstance(reply, schema) else schema.model_validate(reply)
            return reply

        return RunnableLambda(answer, name=f"scripted_structured_{name}")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = tuple(kwargs.get("tools") or ())
        self._record(messages, tools)
        reply = self._next_reply(None)
        if callable(reply) and not isinstance(reply, AIMessage):
            reply = reply(messages, list(tools)) if _arity(reply) >= 2 else reply(messages)
        message = AIMessage(reply) if isinstance(reply, str) else reply.model_copy(deep=True)
        if self.report_usage:
            message.usage_metadata = self._usage(messages, tools, message)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _next_reply(self, structured: str | None) -> Any:
        """The next reply of one script, else its default. ``structured``: the schema
        name of a ``with_structured_output`` call (its own script), or ``None``."""
        replies = self.responses if structured is None else self.structured_responses
        default = self.default if structured is None else self.structured_default
        with self._lock:
            n = self._cursors[structured is not None]
            if n < len(replies):
                self._cursors[structured is not None] = n + 1
                return replies[n]
        if default is not None:
            return default
        if structured is None:
            raise ScriptExhaustedError(
                f"scripted model has no reply left for call {n + 1}; "
                "give it more responses or a default"
            )
        # The usual way here is create_context_agent's think node (think=True by
        # default) on a model scripted with plain replies only: name both fixes.
        raise ScriptExhaustedError(
            f"scripted model has no structured reply left for call {n + 1} ({structured}); "
            "give it structured_responses or a structured_default (for the agent's "
            "think node: structured_default=thought_about_the_question()), or build "
            "the agent with think=False"
        )

    def _record(
        self,
        messages: Sequence[BaseMessage],
        tools: Sequence[dict[str, Any]],
        structured: str | None = None,
    ) -> None:
        if self.keep_calls == 0:
            return
        text = "\n".join(m.text for m in messages)
        call = ModelCall(
            messages=tuple(messages), tools=tuple(tools), structured=structured, text=text
        )
        with self._lock:
            self._calls.append(call)
            while self.keep_calls is not None and len(self._calls) > self.keep_calls:
                self._calls.popleft()

    def _usage(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]], reply: AIMessage
    ) -> Any:
        prompt = self._counter.count_messages(messages) + sum(
            self._counter.count_tool(t) for t in tools
        )
        input_tokens = round(prompt * self.usage_scale)
        output_tokens = self._counter.count_message(reply)
        return {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }


def _arity(fn: Callable[..., Any]) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 1


def _schema_tool(schema: Any, name: str) -> dict[str, Any]:
    # What a provider would be sent for structured output: the schema as a tool.
    try:
        return convert_to_openai_tool(schema)
    except Exception:
        return {"type": "function", "function": {"name": name, "parameters": schema}}


def _is_openai_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") == "function" and "function" in tool


def thought_about_the_question(
    kind: str = "respond", detail: str | None = None
) -> Callable[[Sequence[BaseMessage]], dict[str, Any]]:
    """A ``structured_default`` for a scripted ``think`` model: a confident thought
    (0.9, nothing missing) whose hypothesis quotes the latest user message, so each
    turn's thought differs, as a real model's would, and suggests one action
    (``kind``: ``"tool_call"``, ``"clarify"`` or ``"respond"``; ``detail``, else the
    question's start)."""

    def thought(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        asked = next((m.text for m in reversed(messages) if m.type == "human"), "")
        action = {"kind": kind, "detail": detail or asked[:40], "expected_utility": 0.8}
        return {
            "hypothesis": f"The user asks: {asked[-60:]}",
            "confidence": 0.9,
            "gaps": [],
            "next_thought_needed": False,
            "actions": [action],
        }

    return thought
