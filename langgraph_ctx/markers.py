"""Marks that langgraph-ctx puts on messages, kept in ``additional_kwargs``.

LangChain's own middleware marks messages the same way (``lc_source``), and
provider adapters do not forward unknown ``additional_kwargs`` keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from operator import attrgetter
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

from langgraph_ctx.errors import ConfigurationError

KEY = "lgctx"
SUMMARY_PREFIX = "[Conversation Summary]"
SUMMARY_ID = "lgctx-summary-"
"""A summary's message id is this and its sequence number (``glimpse`` reads
summary #n's originals through it)."""
RECALL_PREFIX = "[Recalled Memory]"
COMPACTED_PREFIX = "[Compacted tool result]"
PER_CALL = "per_call"
"""Mark placement puts on the (per-call) copy of the user message that carries this
call's per-call context: the prompt is the same as the next call's up to the
message before it."""
PER_CALL_TAIL = "per_call_tail"
"""Mark a layer puts on a message whose last content block is for this call only
(BACM's budget line): the next call sends the message without that block, so a
prompt cache that keys on block boundaries (Anthropic's) must find an entry at
the end of the block before it."""
PER_CALL_HEAD = "per_call_head"
"""Mark a layer puts on a message whose first content block is for this call only
(BACM's budget line under ``budget_line="before"``): what reads the message's own
words (recall's query) leaves that block out."""
PARTS = "parts"
"""Mark of a message that grows by appending: where each appended part starts, an
empty list while it is one part (:func:`appended_parts`)."""

M = TypeVar("M", bound=BaseMessage)


GLIMPSE = "glimpse"
"""The name of recall's tool for whole originals (:class:`~langgraph_ctx.middleware.Glimpse`)."""


def _marks(message: BaseMessage) -> dict[str, Any]:
    value = message.additional_kwargs.get(KEY)
    return value if isinstance(value, dict) else {}


def pin(message: M) -> M:
    """Mark ``message`` so that compression never touches it. Returns it."""
    if not isinstance(message, BaseMessage):
        raise ConfigurationError("pin", f"expected a LangChain message, got {message!r:.80}")
    message.additional_kwargs[KEY] = {**_marks(message), "pinned": True}
    return message


def is_pinned(message: BaseMessage) -> bool:
    return bool(_marks(message).get("pinned"))


def is_summary(message: BaseMessage) -> bool:
    """Whether ``message`` is a compression summary."""
    return "summary" in _marks(message)


def summary_indexes(messages: Sequence[BaseMessage]) -> list[int]:
    """The indexes of the compression summaries in ``messages``, in order.

    Summaries are system messages: the roles are read in one C-level pass and
    only system messages are looked at one by one, so a long history costs a
    fraction of calling :func:`is_summary` on each message.
    """
    roles = list(map(_ROLE, messages))
    found: list[int] = []
    i = -1
    while True:
        try:
            i = roles.index("system", i + 1)
        except ValueError:
            return found
        if is_summary(messages[i]):
            found.append(i)


def last_summary_index(messages: Sequence[BaseMessage]) -> int:
    """The index of the last compression summary in ``messages``, -1 if none."""
    found = summary_indexes(messages)
    return found[-1] if found else -1


_ROLE = attrgetter("type")


def summary_info(message: BaseMessage) -> dict[str, Any] | None:
    """``{"seq": int, "through": last message id covered, ...}`` for a summary."""
    info = _marks(message).get("summary")
    return info if isinstance(info, dict) else None


def summary_body(summary: BaseMessage) -> str:
    """A summary's text without its ``[Conversation Summary] #n (...)`` header line."""
    return summary.text.partition("\n")[2] or summary.text


def is_ephemeral(message: BaseMessage) -> bool:
    """Whether ``message`` was injected for one call only (recall, thought)."""
    return bool(_marks(message).get("ephemeral"))


VIEW_ONLY = "view_only"
"""Mark of a message a strategy assembled for one call's prompt in place of state
messages (PACE's condensed steps): it is in no state, so there is nothing to
remove or edit, and it is not the user's turn."""


def is_view_only(message: BaseMessage) -> bool:
    """Whether ``message`` was assembled for one call's prompt and is in no state."""
    return bool(_marks(message).get(VIEW_ONLY))


def is_recall_block(message: BaseMessage) -> bool:
    """Whether ``message`` is recall's block for one call, standing on its own (its
    tokens are reported as the auxiliary component, not as messages)."""
    return is_ephemeral(message) and "recall" in _marks(message)


def is_compacted(message: BaseMessage) -> bool:
    """Whether ``message`` is a tool result shrunk in place (its original is archived)."""
    return "compacted" in _marks(message)


def compacted_header(message: BaseMessage, tokens: int) -> str:
    """The first line of a compacted tool result: what it was, and where the original is."""
    return f"{COMPACTED_PREFIX} ({tokens} tokens; original archived as {message.id})"


def compacted(message: M, text: str, tokens: int) -> M:
    """A copy of ``message`` with ``text`` as its content, marked as compacted from
    ``tokens`` tokens. Same id, same tool call: the pair stays whole."""
    marks = {**_marks(message), "compacted": {"tokens": tokens}}
    return message.model_copy(
        update={
            "content": f"{compacted_header(message, tokens)}\n{text}",
            "additional_kwargs": {**message.additional_kwargs, KEY: marks},
        }
    )


def appended_parts(message: BaseMessage) -> list[str] | None:
    """The text of a message that grows by appending (ARC's interaction memory), cut
    where each appended part starts, so that the parts joined are the text; ``None``
    for any other message, or one whose parts do not fit its text.

    Placement sends the parts as content blocks: a prompt cache that keys on block
    boundaries (Anthropic's) then finds the message as the previous call sent it,
    whole, at the boundary before the newest part."""
    offsets = _marks(message).get(PARTS)
    if not isinstance(offsets, list) or not isinstance(message.content, str):
        return None
    text = message.content
    cuts = [0, *offsets, len(text)]
    if any(not isinstance(c, int) or not (a < c) for a, c in pairwise(cuts)):
        return None  # not ours, or edited since: send it as one block
    return [text[a:c] for a, c in pairwise(cuts)]


def part_count(message: BaseMessage) -> int:
    """How many parts a message that grows by appending has (its content as text or
    as the blocks placement made of it); 0 for any other message."""
    offsets = _marks(message).get(PARTS)
    return len(offsets) + 1 if isinstance(offsets, list) else 0


def grown_parts(message: BaseMessage, start: int) -> list[int]:
    """The :data:`PARTS` mark for ``message`` grown by a part that starts at ``start``
    of the new text: its own parts (if they still fit its text) and the new one."""
    offsets = _marks(message).get(PARTS)
    text = message.content
    # Ours since the text last changed (an edit drops the mark): the last offset is
    # checked, not every part cut (a fold's work stays the entry's, not the memory's).
    if not isinstance(offsets, list) or not isinstance(text, str):
        return [start]
    return [*offsets, start] if not offsets or offsets[-1] < len(text) else [start]
