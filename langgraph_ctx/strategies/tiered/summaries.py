"""The summary messages tiered compression writes, and the summarizer that says why
it fell back.

A summary is a system message ``[Conversation Summary] #seq`` whose marker lists
the ids it replaced (``covers``), every one archived: what ``glimpse`` reads to
bring summary #seq's originals back.
"""

from __future__ import annotations

import copy
from functools import partial

from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx.compression.summarizers import ChatModelSummarizer, Summarizer
from langgraph_ctx.markers import KEY, SUMMARY_ID, SUMMARY_PREFIX, summary_info
from langgraph_ctx.tokens import TokenCounter


class ReportingSummarizer(ChatModelSummarizer):
    """The chat-model summarizer tiered compression wraps a model in. It is shared by
    every call (and by the background preparation), so it keeps no reasons itself:
    each compression summarizes with a copy that appends why it fell back to that
    compression's own list (:func:`reporting`), recorded with its summary."""

    def reporting_to(self, reasons: list[str]) -> ChatModelSummarizer:
        copied = copy.copy(self)
        copied.on_fallback = partial(_append_reason, reasons)
        return copied


def reporting(summarizer: Summarizer, reasons: list[str]) -> Summarizer:
    """``summarizer`` for one compression, reporting its fallbacks into ``reasons``:
    a :class:`ReportingSummarizer`; any other summarizer as it is (one given ready
    made reports through its own ``on_fallback``, or not at all)."""
    if isinstance(summarizer, ReportingSummarizer):
        return summarizer.reporting_to(reasons)
    return summarizer


def _append_reason(reasons: list[str], reason: str, exc: BaseException | None) -> None:
    reasons.append(reason if exc is None else f"{reason}: {type(exc).__name__}: {exc}")


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
