"""What recall shows of an archived original: its passages that match, and where it was.

An archived message can be a 3,000-token tool result of which one line answers
the question. Recall shows that line (the passage the archive's index ranked it
by, then its passages that score best for the query, in their order, within a
token cap: see
:mod:`~langgraph_ctx.retrieval.passages`), the message id (which ``glimpse``
takes to get the whole of it back) and the summary that replaced it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Sequence

from langgraph_ctx.retrieval.passages import PassageRanking
from langgraph_ctx.storage.archive import ArchiveHit
from langgraph_ctx.tokens import TokenCounter

GAP = " [...] "
"""Stands between passages that were not next to each other."""
_SUMMARY = re.compile(r"(compressed|consolidated) into summary #(\d+)")
_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def one_line(text: str) -> str:
    return " ".join(text.split())


def where(hit: ArchiveHit) -> str:
    """Who said it and what replaced it in the history, in a few words."""
    m = hit.message
    role = _ROLES.get(m.type) or (f"tool {m.name}" if m.type == "tool" and m.name else m.type)
    found = _SUMMARY.search(hit.reason)
    if hit.kind == "tool_result":
        return f"{role}, compacted in the history"
    if found is not None:
        return f"{role}, in summary #{found.group(2)}"
    return role


def archived_line(
    hit: ArchiveHit, ranking: PassageRanking, i: int, cap: int, counter: TokenCounter
) -> str:
    """One line of the recall block for ``hit``, text ``i`` of ``ranking``, its text
    within ``cap`` tokens."""
    text = excerpt(hit.text, ranking.scored(i), ranking.weights, cap, counter, first=hit.passage)
    return f"- [archived {hit.message_id}; {where(hit)}] {text}"


def excerpt(
    text: str,
    passages: Sequence[tuple[str, float]],
    wanted: Collection[str],
    cap: int,
    counter: TokenCounter,
    *,
    first: str = "",
) -> str:
    """``text`` on one line if it fits ``cap`` tokens, else its best ``passages`` (each
    with its score), in their order, as many as fit, the passage ``first`` (the one the
    search matched) before all; if the best alone does not fit, its stretch around the
    first of the ``wanted`` terms."""
    flat = one_line(text)
    if counter.count_text(flat) <= cap:
        return flat
    parts = [one_line(s) for s, _ in passages]
    lead = one_line(first)
    rank = sorted(range(len(parts)), key=lambda i: (parts[i] != lead, -passages[i][1], i))
    chosen: list[int] = []
    used = 0
    for i in rank:
        cost = counter.count_text(parts[i]) + 3
        if used + cost <= cap:
            chosen.append(i)
            used += cost
    if not chosen:  # one long passage: the stretch around its first matching term
        best = parts[rank[0]] if parts else flat
        return _around(best, wanted, cap, counter)
    chosen.sort()
    out = parts[chosen[0]]
    for before, i in itertools.pairwise(chosen):
        out += (" " if i == before + 1 else GAP) + parts[i]
    return out


def _around(text: str, wanted: Collection[str], cap: int, counter: TokenCounter) -> str:
    lowered = text.casefold()
    at = min((lowered.find(t) for t in wanted if t in lowered), default=0)
    start = max(0, at - cap)  # about a quarter of the room before the match
    piece = text[start : start + cap * 4]
    while piece and counter.count_text(piece) > cap:
        piece = piece[: int(len(piece) * 0.9)]
    return ("..." if start else "") + piece + "..."
