"""The summary messages tiered compression writes, and why its summarizer fell back.

A summary is a system message ``[Conversation Summary] #seq`` whose marker lists
the ids it replaced (``covers``), every one archived: what ``glimpse`` reads to
bring summary #seq's originals back.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx.markers import KEY, SUMMARY_ID, SUMMARY_PREFIX, summary_info
from langgraph_ctx.tokens import TokenCounter

_fallbacks: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "lgctx_summarizer_fallbacks", default=None
)


@contextlib.contextmanager
def collecting_fallbacks() -> Iterator[list[str]]:
    """Collect, for this call only, why the (shared) summarizer fell back."""
    reasons: list[str] = []
    token = _fallbacks.set(reasons)
    try:
        yield reasons
    finally:
        _fallbacks.reset(token)


def note_fallback(reason: str, exc: BaseException | None) -> None:
    """The chat-model summarizer's ``on_fallback``: the reason, for the call collecting."""
    sink = _fallbacks.get()
    if sink is not None:
        sink.append(reason if exc is None else f"{reason}: {type(exc).__name__}: {exc}")


def next_seq(summaries: list[BaseMessage]) -> int:
    """The sequence number of the next summary after ``summaries``."""
    return 1 + max((int((summary_info(m) or {}).get("seq", 0)) for m in summaries), default=0)


def summary_message(
    text: str, seq: int, through: str, *, covers: list[str], meta: bool = False
) -> SystemMessage:
    """Summary #``seq`` of the messages ``covers`` (through ``through``)."""
    label = "meta-summary" if meta else "summary"
    # ``covers``: the ids it replaced (for a meta-summary, the summaries among them),
    # every one archived: what ``glimpse`` reads to bring summary #seq's originals back.
    info = {"seq": seq, "through": through, "meta": meta, "covers": covers}
    return SystemMessage(
        f"{SUMMARY_PREFIX} #{seq} ({label} of {len(covers)} messages, through {through})\n{text}",
        id=f"{SUMMARY_ID}{seq}",
        additional_kwargs={KEY: {"summary": info}},
    )


def fit_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` within ``max_tokens`` by ``counter``: whole lines dropped from the end,
    then the last line cut. A summarizer may count differently, or overrun."""
    if counter.count_text(text) <= max_tokens:
        return text
    lines = text.splitlines()
    while len(lines) > 1 and counter.count_text("\n".join(lines)) > max_tokens:
        lines.pop()
    kept = "\n".join(lines)
    while kept and counter.count_text(kept) > max_tokens:
        kept = kept[: int(len(kept) * 0.9)]
    return kept
