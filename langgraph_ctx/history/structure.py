"""Which messages may be compressed: the three tiers of the paper (section 5.1).

- Pinned (tier 3, never compressed): the leading system messages (the system
  prompt), messages marked with :func:`~langgraph_ctx.markers.pin`, and by
  default the session's first user message, the task. A pinned message keeps
  its tool-call partners with it: they stay in the history (a call is never
  split from its result), but only what is pinned itself stays verbatim; a
  partner kept for the pair's sake (:attr:`Tiers.dragged`), such as the 20K
  sibling result of a pinned small one in a parallel exchange, may be
  compacted or cut in place, as it would be unpinned. A system message later
  in the history belongs to its turn: it is compressed with it, unless pinned.
- Protected (tier 1): the last N turns verbatim. A turn is a user message and
  everything up to the next one. N is at least ``min_turns``, extends back
  while the conversation stays on the current topic, and is capped by a token
  budget; the cap wins over the floor, down to the current turn.
- Compressible (tier 2): the rest, oldest first, cut only where no assistant
  message with tool calls is separated from its tool results.

Everything here is pure: it reads messages and returns a :class:`Plan`; the
compression middleware does the summarizing, archiving and state update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_ctx.markers import is_pinned, is_summary, summary_info
from langgraph_ctx.retrieval.text import content_words


@dataclass(frozen=True)
class Tiers:
    """A message list split by tier, each part in its original order."""

    pinned: list[BaseMessage]
    summaries: list[BaseMessage]
    rest: list[BaseMessage]
    """Neither pinned nor a summary: the protected window and the compressible span."""
    dragged: list[BaseMessage] = field(default_factory=list)
    """The part of ``pinned`` pinned only as a pinned message's tool-call partner:
    kept in the history, but its content may be reduced in place (same id, same
    tool call), so that a pin never forces a large unpinned sibling to stay whole."""


def split_tiers(
    messages: Sequence[BaseMessage],
    *,
    pin_task: bool = True,
    every_system: bool = False,
    units: list[list[BaseMessage]] | None = None,
) -> Tiers:
    """Split ``messages`` into pinned, summaries (by sequence number) and the rest.

    ``every_system``: pin every system message, not only the leading ones (the
    edit manager's rule: it must not rewrite a system instruction anywhere).
    ``units``: :func:`tool_units` of ``messages``, if the caller has them.
    """
    summary_ids = {id(m) for m in messages if is_summary(m)}
    summaries = [m for m in messages if id(m) in summary_ids]
    summaries.sort(key=lambda m: (summary_info(m) or {}).get("seq", 0))
    task = next((m for m in messages if m.type == "human"), None) if pin_task else None
    lead = (
        len(messages)
        if every_system
        else next((i for i, m in enumerate(messages) if m.type != "system"), len(messages))
    )
    pinned_ids = {
        id(m)
        for i, m in enumerate(messages)
        if id(m) not in summary_ids
        and ((i < lead and m.type == "system") or is_pinned(m) or m is task)
    }
    # A pinned half of a tool exchange drags its other half along, or the
    # compressed history would hold an orphan call or an orphan result.
    own = set(pinned_ids)
    for unit in tool_units(messages) if units is None else units:
        if any(id(m) in own for m in unit):
            pinned_ids.update(id(m) for m in unit)
    pinned = [m for m in messages if id(m) in pinned_ids]
    rest = [m for m in messages if id(m) not in pinned_ids and id(m) not in summary_ids]
    dragged = [m for m in pinned if id(m) not in own]
    return Tiers(pinned=pinned, summaries=summaries, rest=rest, dragged=dragged)


def tool_units(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Each assistant message with tool calls, together with the results answering it.

    Pairs by position, not by id string alone (see :func:`pair_results`): some
    servers reuse one call id (``call_0``) every turn.
    """
    pairing = pair_results(messages)
    units: dict[int, list[BaseMessage]] = {}
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage) and m.tool_calls:
            units[i] = [m]
    for result, owner in sorted(pairing.owner.items()):
        units[owner].append(messages[result])
    return list(units.values())


@dataclass(frozen=True)
class Pairing:
    """Which call each tool result answers, by index in the message list."""

    owner: dict[int, int]
    """Index of each matched tool result -> index of the assistant message that made the call."""
    orphans: list[int]
    """Indexes of tool results that answer no call in their turn."""
    missing: list[tuple[int, int]]
    """``(assistant index, call position)`` of every call left without a result."""


def pair_results(messages: Sequence[BaseMessage]) -> Pairing:
    """Match each tool result to the nearest preceding unanswered call with its id
    in the same turn (a turn ends at the next user message).

    Ids are not unique in the wild: OpenAI-compatible servers and local runtimes
    may emit ``call_0`` every turn, so a dict keyed by id alone would hand every
    result to the latest call and split the earlier pairs. A result that comes
    before its call in the same turn (out of order) is matched to the first
    such call that follows it.
    """
    owner: dict[int, int] = {}
    orphans: list[int] = []
    missing: list[tuple[int, int]] = []
    pending: dict[str, list[tuple[int, int]]] = {}  # id -> unanswered (ai index, call pos)
    early: dict[str, list[int]] = {}  # id -> results seen before any call with that id

    def close_turn() -> None:
        for waiting in early.values():
            orphans.extend(waiting)
        for calls in pending.values():
            missing.extend(calls)
        early.clear()
        pending.clear()

    for i, m in enumerate(messages):
        if m.type == "human":
            close_turn()
        elif isinstance(m, AIMessage) and m.tool_calls:
            for pos, call in enumerate(m.tool_calls):
                key = str(call.get("id") or "")
                if early.get(key):
                    owner[early[key].pop(0)] = i
                else:
                    pending.setdefault(key, []).append((i, pos))
        elif isinstance(m, ToolMessage):
            calls = pending.get(m.tool_call_id)
            if calls:
                owner[i] = calls.pop()[0]  # the nearest preceding call
            else:
                early.setdefault(m.tool_call_id, []).append(i)
    close_turn()
    orphans.sort()
    missing.sort()
    return Pairing(owner=owner, orphans=orphans, missing=missing)


LOST_RESULT = "[no result was recorded for this call: it was lost, or never ran]"
"""Content of the placeholder result :func:`repair_pairs` gives a call without one."""


@dataclass(frozen=True)
class Repair:
    """What :func:`repair_pairs` changed; empty when the history was already whole."""

    moved: list[str]
    """Ids of results moved to follow their call."""
    orphans: list[str]
    """Ids of results with no call, turned into assistant notes keeping their content."""
    placeholders: list[str]
    """Call ids given a placeholder result."""

    def __bool__(self) -> bool:
        return bool(self.moved or self.orphans or self.placeholders)

    def as_dict(self) -> dict[str, list[str]]:
        return {"moved": self.moved, "orphans": self.orphans, "placeholders": self.placeholders}


def repair_pairs(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], Repair]:
    """The history as a provider accepts it: every call immediately followed by
    exactly one result per call id, and no result without a call.

    A result is moved right after the call it answers (:func:`pair_results`); a
    call without a result gets a placeholder saying so (an error-status tool
    message); a result without a call becomes an assistant note with the same
    id and its content, so nothing it said is dropped. Messages already in that
    shape come back as the same objects, in the same order.
    """
    pairing = pair_results(messages)
    by_owner: dict[int, list[int]] = {}
    for result, ai in sorted(pairing.owner.items()):
        by_owner.setdefault(ai, []).append(result)
    missing: dict[int, list[int]] = {}
    for ai, pos in pairing.missing:
        missing.setdefault(ai, []).append(pos)
    orphans = set(pairing.orphans)
    out: list[BaseMessage] = []
    moved: list[str] = []
    orphaned: list[str] = []
    placeholders: list[str] = []
    for i, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            if i in orphans:
                orphaned.append(str(m.id))
                out.append(_orphan_note(m))
            continue  # a matched result is placed with its call
        out.append(m)
        if not (isinstance(m, AIMessage) and m.tool_calls):
            continue
        results = by_owner.get(i, [])
        for k, r in enumerate(results):
            if r != i + 1 + k:
                moved.append(str(messages[r].id))
            out.append(messages[r])
        for pos in missing.get(i, []):
            call = m.tool_calls[pos]
            call_id = str(call.get("id") or "")
            placeholders.append(call_id)
            out.append(
                ToolMessage(
                    LOST_RESULT,
                    tool_call_id=call_id,
                    name=call.get("name"),
                    status="error",
                    id=f"lgctx-lost-{m.id}-{pos}",
                )
            )
    return out, Repair(moved=moved, orphans=orphaned, placeholders=placeholders)


def _orphan_note(message: ToolMessage) -> AIMessage:
    # An assistant note, not a user message: a user message would start a turn
    # (and, first in the history, be taken for the task).
    head = (
        f"[Result of tool {message.name or 'unknown'} for call {message.tool_call_id}, "
        "whose call is missing from the history]"
    )
    content: str | list[str | dict[Any, Any]]
    if isinstance(message.content, str):
        content = f"{head}\n{message.content}"
    else:
        content = [{"type": "text", "text": head}, *message.content]
    return AIMessage(content=content, id=message.id)


def safe_cuts(messages: Sequence[BaseMessage]) -> list[bool]:
    """``cuts[i]`` says whether splitting before index ``i`` keeps every tool pair whole.

    A cut is unsafe while a call made before it is answered after it, or a
    result after it answers a call before it: positions are compared by the
    first and last index of each unit, so results in any order, parallel calls
    and runs of tool-calling messages are all covered. ``cuts`` has
    ``len(messages) + 1`` entries; both ends are always safe.
    """
    index = {id(m): i for i, m in enumerate(messages)}
    blocked = [0] * (len(messages) + 1)
    for unit in tool_units(messages):
        where = [index[id(m)] for m in unit]
        lo, hi = min(where), max(where)
        if hi > lo:
            blocked[lo + 1] += 1  # cuts lo+1 .. hi are inside the unit
            blocked[hi + 1] -= 1
    cuts, open_units = [], 0
    for i in range(len(messages) + 1):
        open_units += blocked[i]
        cuts.append(open_units == 0)
    return cuts


def turn_starts(messages: Sequence[BaseMessage]) -> list[int]:
    """Indexes where a turn begins: every user message (and 0)."""
    starts = [i for i, m in enumerate(messages) if m.type == "human"]
    return starts if starts and starts[0] == 0 else [0, *starts]


def on_topic(a: BaseMessage, b: BaseMessage, threshold: float) -> bool:
    """Whether two user messages share enough content words to be one thread.

    A cheap lexical test (Jaccard overlap of content words): a real topic
    change rarely shares vocabulary, and a false "same topic" only protects a
    little more history, which is the safe side.
    """
    wa, wb = set(content_words(a.text)), set(content_words(b.text))
    if not wa or not wb:
        return True
    return len(wa & wb) / len(wa | wb) >= threshold


def protected_start(
    rest: Sequence[BaseMessage],
    count: Callable[[BaseMessage], int],
    *,
    min_turns: int = 3,
    max_turns: int = 12,
    max_tokens: int,
    topic_threshold: float = 0.12,
) -> int:
    """Index in ``rest`` where the protected window begins.

    At least ``min_turns`` turns, unless they take more than ``max_tokens``:
    then as many of the latest as fit, but always the current one. Then whole
    turns further back while they stay on the latest turn's topic, up to
    ``max_turns`` and ``max_tokens``.
    """
    starts = turn_starts(rest)
    n = min(min_turns, len(starts))
    start = 0 if n == len(starts) else starts[-n]
    tokens = sum(count(m) for m in rest[start:])
    # The floor yields to the cap, down to the current turn: a few tool-heavy
    # turns can outgrow the whole budget. Past that, the compression middleware
    # compacts tool results instead of overflowing.
    while n > 1 and tokens > max_tokens:
        n -= 1
        start = starts[-n]
        tokens = sum(count(m) for m in rest[start:])
    if n < min_turns or len(starts) <= min_turns:
        return _safe_at_or_before(rest, start)
    latest = rest[starts[-1]]
    for k in range(min_turns + 1, min(max_turns, len(starts)) + 1):
        candidate = starts[-k]
        head = rest[candidate]
        extra = sum(count(m) for m in rest[candidate:start])
        if head.type != "human" or not on_topic(head, latest, topic_threshold):
            break
        if tokens + extra > max_tokens:
            break
        start, tokens = candidate, tokens + extra
    return _safe_at_or_before(rest, start)


def _safe_at_or_before(messages: Sequence[BaseMessage], index: int) -> int:
    cuts = safe_cuts(messages)
    while index > 0 and not cuts[index]:
        index -= 1
    return index


@dataclass(frozen=True)
class Plan:
    """What one compression run will do."""

    tiers: Tiers
    compress: list[BaseMessage]
    """Oldest compressible messages to summarize now (a prefix of ``tiers.rest``)."""
    keep: list[BaseMessage]
    """The rest of ``tiers.rest``, verbatim, in order."""
    protected: int
    """How many of ``keep`` are the protected window."""

    def messages(self, summaries: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The new active history: pinned, then summaries, then what was kept."""
        return [*self.tiers.pinned, *summaries, *self.keep]


def plan_compression(
    messages: Sequence[BaseMessage],
    count: Callable[[BaseMessage], int],
    *,
    free_tokens: int,
    expected_ratio: float,
    min_turns: int = 3,
    max_protected_tokens: int,
    pin_task: bool = True,
    topic_threshold: float = 0.12,
    summary_cap: int | None = None,
    tiers: Tiers | None = None,
) -> Plan:
    """Choose the shortest safe prefix of the compressible span that frees ``free_tokens``.

    A prefix of ``span`` tokens is expected to free ``span`` minus what the
    summaries grow by: ``span / expected_ratio``, but with ``summary_cap`` at
    most up to that cap (past it the summaries are consolidated into one of at
    most the cap, so they may even shrink). If no prefix is enough, the whole
    span is chosen: the caller checks the result.
    """
    tiers = tiers or split_tiers(messages, pin_task=pin_task)
    rest = tiers.rest
    limit = protected_start(
        rest,
        count,
        min_turns=min_turns,
        max_tokens=max_protected_tokens,
        topic_threshold=topic_threshold,
    )
    cuts = safe_cuts(rest)
    ratio = max(expected_ratio, 1.0)
    headroom = None
    if summary_cap is not None:
        headroom = summary_cap - sum(count(m) for m in tiers.summaries)
    chosen, span = 0, 0
    for i in range(limit):
        span += count(rest[i])
        if cuts[i + 1]:
            chosen = i + 1
            growth = span / ratio if headroom is None else min(span / ratio, headroom)
            if span - growth >= free_tokens:
                break
    return Plan(
        tiers=tiers, compress=rest[:chosen], keep=rest[chosen:], protected=len(rest) - limit
    )
