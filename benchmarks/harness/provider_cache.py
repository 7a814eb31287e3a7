"""What two providers' prompt caches would serve of a prompt, built by their own clients.

The message-level meter in ``prompt_cache.py`` counts any exact token prefix of the
previous prompt: an upper bound. These two meters take the request payload the real
client builds (``_get_request_payload``, offline, a dummy key) and apply each
provider's published rules:

- **OpenAI** (``ChatOpenAI``, chat completions): the longest prefix shared with the
  previous request, cached from 1,024 tokens in 128-token steps
  (openai.com/index/api-prompt-caching).
- **Anthropic** (``ChatAnthropic``): a cache entry is written at each breakpoint
  (here those a caching client sets: the last tool and the last system block, as
  ``AnthropicPromptCachingMiddleware`` tags them, the last block of the last
  message, its request-level ``cache_control``, and every block the prompt marks
  with ``cache_control``: the prompt goes through ``mark_breakpoints`` first, as
  ``call_llm`` sends it to an Anthropic model) once the prefix there is 1,024
  tokens or more. A read hits the longest written prefix ending at a block
  boundary within 20 blocks before a breakpoint; ``cache_control`` itself is not
  part of the key. So a change inside a block loses the whole block, and a change
  more than 20 blocks before the end loses everything after the system block. Tools
  come first (tools, system, messages), so a change to the tools bound loses it all.

Tokens are cl100k_base counts of each payload piece (the providers' own tokenizers
differ; the comparison between strategies is what counts). No cache expiry: a
replay has no wall-clock gaps (a user who pauses past 5 minutes loses the cache
whatever manages the context).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langgraph_ctx.history.breakpoints import mark_breakpoints

MINIMUM = 1_024
"""Fewest prompt tokens either provider caches (Sonnet 4.5; OpenAI)."""
STEP = 128
"""OpenAI caches prefixes in steps of this many tokens past the minimum."""
LOOKBACK = 20
"""Block boundaries Anthropic checks before each breakpoint for a written entry."""


class ProviderMeters:
    """Both meters over one session's calls: ``measure`` each prompt in order."""

    def __init__(self, tokens: Callable[[str], list[int]], *, marks: bool = True) -> None:
        """``marks``: send each prompt through ``mark_breakpoints`` first (what
        ``call_llm`` sends an Anthropic model); ``False``: only the breakpoints
        ``AnthropicPromptCachingMiddleware`` sets (the last tool, the end of the
        system block, the end of the prompt)."""
        from langchain_anthropic import ChatAnthropic
        from langchain_openai import ChatOpenAI

        self.tokens, self.marks = tokens, marks
        self.anthropic = ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-offline")  # type: ignore[call-arg]
        self.openai = ChatOpenAI(model="gpt-5", api_key="sk-offline")  # type: ignore[arg-type]
        self.previous: list[str] = []
        self.written: set[int] = set()
        self.refused: dict[str, int] = {"anthropic": 0, "openai": 0}

    def measure(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] = ()
    ) -> tuple[int, int, int, int]:
        """``(openai cached, openai total, anthropic cached, anthropic total)`` of a call
        with ``tools`` bound (OpenAI function format, as the scripted model records
        them); a call a client refuses counts as nothing cached (and in :attr:`refused`).
        """
        from langchain_anthropic.chat_models import convert_to_anthropic_tool

        try:
            bound = {"tools": list(tools)} if tools else {}
            payload = self.openai._get_request_payload(list(messages), **bound)
            pieces = [*payload.get("tools", ()), *payload["messages"]]
            openai = self._openai([_dump(p) for p in pieces])
        except ValueError:
            self.refused["openai"] += 1
            openai = (0, 0)
        try:
            bound = {"tools": [convert_to_anthropic_tool(t) for t in tools]} if tools else {}
            # As call_llm sends it to ChatAnthropic.
            marked = mark_breakpoints(messages) if self.marks else list(messages)
            payload = self.anthropic._get_request_payload(marked, **bound)
            anthropic = self._anthropic(list(_blocks(payload)))
        except ValueError:
            self.refused["anthropic"] += 1
            anthropic = (0, 0)
        return (*openai, *anthropic)

    def _openai(self, rendered: list[str]) -> tuple[int, int]:
        total = sum(len(self.tokens(r)) for r in rendered)
        shared = shared_prefix(rendered, self.previous, self.tokens)
        self.previous = rendered
        cached = 0 if shared < MINIMUM else MINIMUM + (shared - MINIMUM) // STEP * STEP
        return cached, total

    def _anthropic(self, blocks: list[tuple[str, str, bool]]) -> tuple[int, int]:
        keys, ends = [], []
        key, total = 0, 0
        for _, block, _ in blocks:
            key = hash((key, block))
            total += len(self.tokens(block))
            keys.append(key)
            ends.append(total)
        # The last tool and the last system block (as AnthropicPromptCachingMiddleware
        # tags them), the last block (its request-level cache_control), and the
        # blocks the prompt marks itself.
        last = {kind: i for i, (kind, _, _) in enumerate(blocks)}
        marked = {i for i, (_, _, mark) in enumerate(blocks) if mark}
        defaults = {last.get("tools", -1), last.get("system", -1), len(blocks) - 1}
        breakpoints = sorted((defaults | marked) - {-1})
        cached = 0
        for point in breakpoints:
            for j in range(point, max(-1, point - LOOKBACK), -1):
                if keys[j] in self.written:
                    cached = max(cached, ends[j])
                    break
        self.written.update(keys[p] for p in breakpoints if ends[p] >= MINIMUM)
        return cached, total


def shared_prefix(
    rendered: Sequence[str], previous: Sequence[str], tokens: Callable[[str], list[int]]
) -> int:
    """Tokens of ``rendered`` (pieces in order) that are an exact prefix of ``previous``."""
    shared = 0
    for now, before in zip(rendered, previous, strict=False):  # any lengths
        if now == before:
            shared += len(tokens(now))
            continue
        a, b = tokens(now), tokens(before)
        same = 0
        while same < min(len(a), len(b)) and a[same] == b[same]:
            same += 1
        return shared + same
    return shared


def _dump(piece: Any) -> str:
    return json.dumps(piece, sort_keys=True, default=str)


def _blocks(payload: dict[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """The payload's pieces in cache order (tools, system, then the messages' content
    blocks), each rendered with its role and without ``cache_control``, with its kind
    (``"tools"``, ``"system"`` or ``"messages"``) and whether it carries
    ``cache_control`` (a breakpoint)."""
    for tool in payload.get("tools") or ():
        yield "tools", _dump({k: v for k, v in tool.items() if k != "cache_control"}), False
    system = payload.get("system")
    for block, mark in _content(system) if system else []:
        yield "system", _dump({"role": "system", **block}), mark
    for message in payload["messages"]:
        for block, mark in _content(message["content"]):
            yield "messages", _dump({"role": message["role"], **block}), mark


def _content(content: str | list[Any]) -> list[tuple[dict[str, Any], bool]]:
    if isinstance(content, str):  # a string is one text block
        return [({"type": "text", "text": content}, False)]
    blocks = [b if isinstance(b, dict) else {"text": str(b)} for b in content]
    return [
        ({k: v for k, v in b.items() if k != "cache_control"}, "cache_control" in b) for b in blocks
    ]
