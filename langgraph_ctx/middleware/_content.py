"""Message content as placement reshapes it: its text, contents joined, stable system messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langgraph_ctx.markers import is_ephemeral


def text_of(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else m.text


def join_contents(contents: Sequence[str | list[Any]]) -> str | list[Any]:
    """Contents joined by a blank line; content blocks (a ``cache_control`` mark, an
    image) are kept as blocks rather than flattened."""
    parts = [c for c in contents if c]
    if all(isinstance(c, str) for c in parts):
        return "\n\n".join(parts)  # type: ignore[arg-type]
    blocks: list[Any] = []
    for c in parts:
        blocks += [{"type": "text", "text": c}] if isinstance(c, str) else list(c)
    return blocks


def is_stable_system(m: BaseMessage) -> bool:
    """A system message that is the same from call to call (not a per-call block)."""
    return m.type == "system" and not is_ephemeral(m)


def stable_signature(messages: Sequence[BaseMessage]) -> int:
    """What changes when a compression rewrites the stable prefix (summaries)."""
    return hash(tuple((m.id, text_of(m)) for m in messages if is_stable_system(m)))
