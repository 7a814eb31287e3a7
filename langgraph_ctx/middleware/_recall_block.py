"""The recall block: its items ranked, chosen within the budget, rendered and placed.

:class:`~langgraph_ctx.middleware.recall.MemoryRecall` searches; this module decides
what of the found the model is shown and how. Archived originals are re-ranked by
their best passage among the candidates (:func:`archive_order`), except where a
hybrid store's vector side found them: there the store's fused rank stands, since a
question may share no word with what answers it. Memories join by score, and each
line is added, best first, while the block still fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx.compression import entities
from langgraph_ctx.markers import RECALL_PREFIX, is_ephemeral, last_summary_index
from langgraph_ctx.middleware._snippets import archived_line, one_line
from langgraph_ctx.pipeline import CallContext
from langgraph_ctx.retrieval.memory import Memory, SessionSummary
from langgraph_ctx.retrieval.passages import PassageRanking
from langgraph_ctx.storage.archive import ArchiveHit

RECALL_END = "[End of Recalled Memory]"
_HEADER = (
    f"{RECALL_PREFIX} From long-term memory and from earlier in this conversation "
    "(archived: glimpse an id for the whole message); use what is relevant."
)
_NAMES = 4
"""Names of a query searched for on their own, at most."""

Item = Memory | ArchiveHit

Line = Callable[[int], str]
"""An item's line in the block, given the most tokens it may take."""


def _ranked(
    memories: Sequence[Memory],
    hits: Sequence[ArchiveHit],
    query: str,
    archive_hits: int,
    snippet_tokens: int,
    ctx: CallContext,
) -> list[tuple[Line, Item]]:
    """Both kinds, best score first: the ``archive_hits`` originals first in
    :func:`archive_order`, and the memories (each kind scores its best 1.0; an archived
    original wins a tie: it is what this conversation said). An original's line is
    its best passages within ``snippet_tokens`` or the room left, whichever is less."""
    ranking = PassageRanking(query, [h.text for h in hits], names_in(query))
    order = archive_order(ranking, hits)[:archive_hits]
    top = max([ranking.best(i) for i in order], default=0.0) or 1.0

    def archived(i: int, room: int) -> str:
        cap = max(20, min(snippet_tokens, room))
        return archived_line(hits[i], ranking, i, cap, ctx.counter)

    def remembered(memory: Memory, room: int) -> str:
        return f"- [{memory.level}] {one_line(memory.text)}"

    scored: list[tuple[float, int, Line, Item]] = []
    floor = 1.0
    for i in order:
        # A hit found by meaning scores as the store fused it (its best is 1.0 too).
        # Never above the one before: the sort below must keep the archive's order.
        floor = min(floor, hits[i].score if hits[i].by_meaning else ranking.best(i) / top)
        scored.append((floor, 0, partial(archived, i), hits[i]))
    scored += [(m.score, 1, partial(remembered, m), m) for m in memories]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [(line, item) for _, _, line, item in scored]


def archive_order(ranking: PassageRanking, hits: Sequence[ArchiveHit]) -> list[int]:
    """The indexes of ``hits`` (in the store's order), best first.

    By their best passage (``ranking``), except each hit a hybrid store's vector side
    found (:attr:`~langgraph_ctx.storage.hits.ArchiveHit.by_meaning`): it keeps its
    place in the store's fused order (or an earlier one), and the others fill the
    places left, best passage first. Re-ranked by words, a fact asked about in other
    words scores 0 and fell behind every hit that shares the question's wording.
    A lexical store's hits are all ordered by passage."""
    words = [i for i in ranking.order() if not hits[i].by_meaning]
    meaning = [i for i, hit in enumerate(hits) if hit.by_meaning]
    out: list[int] = []
    while meaning or words:
        if meaning and (meaning[0] <= len(out) or not words):
            out.append(meaning.pop(0))
        else:
            out.append(words.pop(0))
    return out


def names_in(query: str) -> list[str]:
    """The first :data:`_NAMES` names in ``query`` (:func:`~langgraph_ctx.compression.entities`:
    proper names, ids, dates, amounts), in order: a pasted page names dozens, and
    each would cost a search and its candidates."""
    return sorted(entities(query), key=query.find)[:_NAMES]


def select(
    warm: SessionSummary | None,
    items: Sequence[tuple[Line, Item]],
    budget: int,
    ctx: CallContext,
) -> tuple[list[str], list[Item], int]:
    """Greedy, best first: every line that still fits ``budget`` (calibrated tokens).

    Returns the block's lines, the items chosen and the block's raw token count.
    Lines are one line each and the block joins them with newlines, a boundary
    tiktoken's pre-tokenizer never merges across, so each line is counted once
    (``line + "\\n"``) and the running total is exact; the final count checks it.
    """
    apply, count = ctx.session.calibration.apply, ctx.counter.count_text
    lines: list[str] = []
    if warm is not None and warm.text.strip():
        line = _fit(f"- [previous session] {one_line(warm.text)}", budget, ctx)
        lines += [line] if line else []
    raw = ctx.counter.count_message(_block(lines))
    chosen: list[Item] = []
    for line_of, item in items:
        # The room left, less a line's own label (about 25 tokens): what a snippet may take.
        line = line_of(budget - apply(raw) - 25)
        cost = count(line + "\n")
        if apply(raw + cost) <= budget:
            lines.append(line)
            chosen.append(item)
            raw += cost
    raw = ctx.counter.count_message(_block(lines))
    while chosen and apply(raw) > budget:  # only if the estimator (no tiktoken) is in use
        chosen.pop()
        lines.pop()
        raw = ctx.counter.count_message(_block(lines))
    return lines, chosen, raw


def insert_at(messages: Sequence[BaseMessage]) -> int:
    """After the leading system messages and after the last summary: before the conversation."""
    i = 0
    while i < len(messages) and messages[i].type == "system" and not is_ephemeral(messages[i]):
        i += 1
    return max(i, last_summary_index(messages) + 1)


def _block(lines: Sequence[str]) -> SystemMessage:
    return SystemMessage(block_text(lines), id="lgctx-recall")


def block_text(lines: Sequence[str]) -> str:
    """The recall block holding ``lines``: a header, one line per item, an end mark."""
    return "\n".join([_HEADER, *lines, RECALL_END])


def block_lines(text: str) -> list[str]:
    """The item lines of a recall block's text (each item is one line)."""
    lines = text.split("\n")
    return lines[1:-1] if len(lines) >= 2 and lines[-1] == RECALL_END else []


def _fit(line: str, budget: int, ctx: CallContext) -> str | None:
    """``line``, or its longest prefix (marked) whose block fits ``budget``; None if none does."""

    def cost(lines: Sequence[str]) -> int:
        return ctx.session.calibration.apply(ctx.counter.count_message(_block(lines)))

    if cost([line]) <= budget:
        return line
    low, high = 0, len(line)
    while low < high:
        mid = (low + high + 1) // 2
        if cost([line[:mid] + " [...]"]) <= budget:
            low = mid
        else:
            high = mid - 1
    return line[:low] + " [...]" if low > len("- [previous session] ") else None
