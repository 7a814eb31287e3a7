"""Message content as placement reshapes it: its text, contents joined, stable system messages."""

from __future__ import annotations

import zlib
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
    """What changes when a compression rewrites the stable prefix (summaries): a
    CRC-32 of their ids and texts, the same in every process (``hash`` of a string is
    not: it is salted per process), since what is kept per signature is checkpointed
    and read back by whichever process serves the thread's next run."""
    crc = 0
    for m in messages:
        if is_stable_system(m):
            crc = zlib.crc32(f"{m.id}\0{text_of(m)}\0".encode("utf-8", "surrogatepass"), crc)
    return crc
