"""Real provider clients, run offline: a documentation block that builds an agent on
``ChatOpenAI`` or ``ChatAnthropic`` runs as written, with the network call replaced.

Each call builds the request with the client's own payload builder
(``_get_request_payload``, as tests/providers/ does), so a message list the provider
would refuse (two system messages for Anthropic, a tool result without its call)
still fails the block. Only the answer is made up: the forced tool or JSON schema a
structured-output call asks for gets a confident ``Thought``, any other call a short
text. Each payload's top-level keys are appended to ``$DOCS_PAYLOAD_LOG`` so the test
can check that the block really went through a provider client.
"""

from __future__ import annotations

import json
import os
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

THOUGHT = {
    "hypothesis": "The user wants the order's status",
    "confidence": 0.9,
    "gaps": [],
    "next_thought_needed": False,
    "actions": [],
}


def _forced_tool(payload: dict[str, Any]) -> str | None:
    choice = payload.get("tool_choice")
    if isinstance(choice, dict):  # OpenAI {"function": {"name"}}; Anthropic {"name"}
        return choice.get("name") or (choice.get("function") or {}).get("name")
    return None


def _answer(payload: dict[str, Any]) -> AIMessage:
    if (name := _forced_tool(payload)) is not None:
        return AIMessage("", tool_calls=[{"name": name, "args": THOUGHT, "id": "offline-1"}])
    if "response_format" in payload or "output_config" in payload:
        # OpenAI's client puts the SDK's parsed object here; its parser reads it.
        return AIMessage(json.dumps(THOUGHT), additional_kwargs={"parsed": THOUGHT})
    return AIMessage("Order A-7 ships from Rotterdam and arrives Friday. (offline reply)")


def _offline(cls: type) -> None:
    def generate(
        self: Any, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        payload = self._get_request_payload(messages, stop=stop, **kw)
        log = os.environ.get("DOCS_PAYLOAD_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{cls.__name__} {sorted(payload)}\n")
        return ChatResult(generations=[ChatGeneration(message=_answer(payload))])

    async def agenerate(self: Any, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> Any:
        return generate(self, messages, stop, **kw)

    cls._generate = generate  # type: ignore[attr-defined]
    cls._agenerate = agenerate  # type: ignore[attr-defined]


def install() -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_openai import ChatOpenAI

    _offline(ChatOpenAI)
    _offline(ChatAnthropic)
