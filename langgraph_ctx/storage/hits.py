"""An archive search's hits (:class:`ArchiveHit`) and what it indexes (:func:`searchable_text`,
cut into :func:`message_passages`).

Shared by every archive (in memory, SQLite, PostgreSQL), so that a hit reads
the same whatever the backend and the words indexed are the same.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import is_summary
from langgraph_ctx.retrieval.index import query_terms
from langgraph_ctx.retrieval.maxscore import check_limit
from langgraph_ctx.retrieval.passages import passage_texts

__all__ = [
    "ArchiveHit",
    "Found",
    "HitKind",
    "build_hits",
    "check_search",
    "message_passages",
    "searchable_text",
]

HitKind = Literal["message", "tool_result", "summary"]
"""What an archived message was: a message compression summarized away, the original
of a tool result compacted in place (its digest is still in the history), or a
summary that a meta-summary consolidated."""


@dataclass(frozen=True)
class ArchiveHit:
    """One archived message found by :meth:`MessageArchive.search`."""

    message_id: str
    text: str
    """The original's :func:`searchable_text`, word for word."""
    score: float
    """Relevance to the query, scaled so that the best hit of this search is 1.0."""
    kind: HitKind
    archived_at: float
    """When it was archived, Unix seconds."""
    position: int
    """Its place in the thread's archive order (see the module doc)."""
    reason: str
    """Why it left the active state, as given to ``put``."""
    message: BaseMessage
    """The original message, every field as archived."""
    passage: str = ""
    """Its passage that matched the query best (a sentence or line of ``text``, see
    :func:`message_passages`): what ranked it."""
    by_meaning: bool = False
    """A hybrid search's vector side found it (among the first of its ranking, words
    or not): its place is the store's fused rank, which recall keeps rather than
    re-rank it by the question's words (it may share none)."""


def searchable_text(message: BaseMessage) -> str:
    """What the archive indexes of ``message``, one part per line: its text (every text
    block), its name, the tool call id it answers, and each tool call's name, id and
    argument keys and values; so ``INV-0007`` in an argument and ``call_0`` are findable.

    Every backend indexes it cut into :func:`message_passages`, computed here, in Python.
    """
    content = message.content
    blocks = [content] if isinstance(content, str) else content
    parts = [
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in blocks
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    ]
    parts += [message.name or "", str(getattr(message, "tool_call_id", "") or "")]
    if isinstance(message, AIMessage):
        parts += [
            " ".join([c["name"], c.get("id") or "", *_words_of(c["args"])])
            for c in message.tool_calls
        ]
    return "\n".join(p for p in parts if p)


def message_passages(message: BaseMessage) -> list[str]:
    """The passages an archive indexes of ``message``, in order (a row each): its
    :func:`searchable_text` cut by :func:`~langgraph_ctx.retrieval.passages.passage_texts`."""
    return passage_texts(searchable_text(message))


def _words_of(value: Any) -> Iterator[str]:
    """Every key and scalar of a JSON value, depth first (``null`` is nothing)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _words_of(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _words_of(item)
    elif value is not None:
        yield json.dumps(value) if isinstance(value, bool) else str(value)


def hit_kind(reason: str, message: BaseMessage) -> HitKind:
    if reason == "compacted":
        return "tool_result"
    return "summary" if is_summary(message) else "message"


def check_search(thread_id: str, query: str, limit: int) -> list[str]:
    """The query's terms, after refusing a bad thread id or limit (an empty list: no search)."""
    if not isinstance(thread_id, str) or not thread_id:
        raise ConfigurationError("thread_id", "an archive search needs a non-empty thread id")
    check_limit(limit)
    if not isinstance(query, str):
        raise ConfigurationError("query", f"must be a string, got {type(query).__name__}")
    return query_terms(query)


Found = tuple[str, int, str, float, BaseMessage, float, str]
"""What a backend found: (message id, position, reason, archived at, message, score,
best passage)."""


def build_hits(found: Sequence[Found], by_meaning: Collection[str] = ()) -> list[ArchiveHit]:
    """Hits in the order found, scores divided by the best one (each backend's engine
    scores on its own scale; scaled, hits read the same way whatever the backend).
    ``by_meaning``: the message ids a hybrid search's vector side found."""
    top = max((f[5] for f in found), default=0.0)
    return [
        ArchiveHit(
            message_id=mid,
            text=searchable_text(message),
            score=score / top if top > 0 else 0.0,
            kind=hit_kind(reason, message),
            archived_at=archived_at,
            position=position,
            reason=reason,
            message=message,
            passage=passage,
            by_meaning=mid in by_meaning,
        )
        for mid, position, reason, archived_at, message, score, passage in found
    ]
