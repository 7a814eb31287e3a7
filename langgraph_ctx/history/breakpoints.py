"""Anthropic prompt-cache breakpoints on the prompt a node sends.

OpenAI, Google and the others cache a repeated prompt prefix by themselves.
Anthropic caches only where a request marks a breakpoint (``cache_control`` on a
content block, at most four a request), and a later request finds an entry only
at a block boundary at most 20 blocks before one of its own breakpoints. So the
breakpoints go where the prompt stops being the same as the previous call's:

- the last block of the leading system message: the system prompt, the
  summaries and any recall block kept there, the prefix that stays byte-identical
  from one compression to the next (placement put it there);
- the last part of a message that grows by appending (ARC's interaction
  memory, which placement sends as one block per part): what follows it, the
  latest interaction, is replaced on every call, and without a breakpoint here
  no entry would ever be written where the memory ends, and none of ARC's
  prompt would be served from Anthropic's cache (see benchmarks/RESULTS.md);
- the last block of the message before the one that carries this call's
  per-call context (the current thought, the thinking instructions, recall with
  ``recall_refresh="call"``: placement marks it :data:`~langgraph_ctx.markers.PER_CALL`).
  The next turn sends that user message without it, so an entry written at the
  end of this prompt is never found again; without this breakpoint, an agent
  that thinks (the prebuilt agent's default) would lose the cache for most of
  each prompt that an agent without thinking keeps;
- the block before a trailing per-call block (BACM's budget line, the last
  block of the last message: :data:`~langgraph_ctx.markers.PER_CALL_TAIL`): the
  next call sends that message without the line, so an entry written at the end
  of the prompt is never found again (see benchmarks/RESULTS.md);
- the end of the prompt: the ``cache_control`` request argument
  (:data:`TAIL`), which ``ChatAnthropic`` turns into the right form for its
  transport (top level for the direct API, on the last eligible block for the
  others), so the next call finds everything this one sent.

Marks already in the prompt (a system prompt of your own with ``cache_control``)
count against the limit of four, and ours are added only while it holds.
They are added in this order: the system message, the memory, the message
before the per-call context. ``LangChain``'s ``AnthropicPromptCachingMiddleware``
marks the system message and the tail (and the tools) for ``create_agent``;
:class:`~langgraph_ctx.interop.ContextMiddleware` then adds the fourth, the
memory's or else the one before the per-call context.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langgraph_ctx.markers import KEY, PER_CALL, PER_CALL_TAIL, part_count

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""The ``cache_control`` of each breakpoint: Anthropic's 5-minute cache."""
LIMIT = 4
"""Breakpoints Anthropic accepts in one request."""


def is_anthropic(model: object) -> bool:
    """Whether ``model`` is a ``langchain_anthropic`` chat model (``ChatAnthropic`` or a
    subclass). Looked up where it is already imported: a model built from it has
    imported it, and the package stays optional."""
    module = sys.modules.get("langchain_anthropic")
    chat = getattr(module, "ChatAnthropic", None)
    return chat is not None and isinstance(model, chat)


def mark_breakpoints(
    messages: Sequence[BaseMessage], *, system: bool = True, reserved: int = 1
) -> list[BaseMessage]:
    """``messages`` with ``cache_control`` on the last block of the leading system
    message (``system``), on the last part of the last message that grows by
    appending and on the last block of the message before the per-call context
    (see the module docstring), as far as the limit of four allows with
    the marks already there and the ``reserved`` ones the request adds elsewhere
    (the tail's, :data:`TAIL`). Messages it marks are copies; the others are the
    same objects."""
    out = list(messages)
    room = LIMIT - sum(_marks(m) for m in out) - reserved
    targets = []
    if system and out and out[0].type == "system":
        targets.append(0)
    grown = [j for j, m in enumerate(out) if part_count(m) and isinstance(m.content, list)]
    if grown:
        targets.append(grown[-1])
    carrier = next((j for j, m in enumerate(out) if _marks_of(m).get(PER_CALL)), None)
    # The last message the next call sends as it is (a memory carrying it is marked
    # on its last part, before the per-call block, already).
    if carrier is not None and carrier not in grown and carrier - 1 not in (0, *targets):
        targets.append(carrier - 1)
    lined = next((j for j in range(len(out) - 1, -1, -1) if _trailing(out[j])), None)
    if lined is not None and lined not in targets:
        targets.append(lined)  # on its block before the trailing per-call one
    for j in targets:
        if room <= 0:
            break
        # The last part: a per-call block placed after the parts (a thought) is not.
        at = part_count(out[j]) - 1 if j in grown else -2 if j == lined else -1
        marked = _mark_block(out[j], at)
        if marked is not out[j]:
            out[j] = marked
            room -= 1
    return out


def _marks_of(m: BaseMessage) -> dict[str, Any]:
    marks = m.additional_kwargs.get(KEY)
    return marks if isinstance(marks, dict) else {}


def _trailing(m: BaseMessage) -> bool:
    """Whether ``m`` ends with a per-call block after one the next call sends."""
    return (
        bool(_marks_of(m).get(PER_CALL_TAIL)) and isinstance(m.content, list) and len(m.content) > 1
    )


def _marks(m: BaseMessage) -> int:
    if isinstance(m.content, str):
        return 0
    return sum(1 for b in m.content if isinstance(b, dict) and "cache_control" in b)


def _mark_block(m: BaseMessage, at: int) -> BaseMessage:
    """``m`` with ``cache_control`` on its block ``at`` (its text as one block if it
    is a string), if that block is a non-empty text block not marked yet."""
    content: list[Any] = (
        [{"type": "text", "text": m.content}] if isinstance(m.content, str) else list(m.content)
    )
    if not -len(content) <= at < len(content):
        return m
    block = content[at]
    if not isinstance(block, dict) or "cache_control" in block:
        return m
    if block.get("type") != "text" or not block.get("text"):
        return m  # an image or an empty block: leave the prompt as it is
    content[at] = {**block, "cache_control": dict(EPHEMERAL)}
    return m.model_copy(update={"content": content})


TAIL: dict[str, Any] = {"cache_control": EPHEMERAL}
"""The model call's keyword argument for the breakpoint at the end of the prompt."""
