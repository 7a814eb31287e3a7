"""Where the recall block goes from call to call: :class:`ProviderPlacement`'s ``recall_refresh``.

Recall makes a block for each call. A provider's prompt cache serves only an
exact prefix of the previous prompt, so where the block goes decides what every
later call pays:

- ``"delta"`` (the default): each turn's user message carries the lines of its
  recall block not already shown since the last compression, and keeps them,
  byte-identical, on every later call. A turn pays for its new lines only;
  earlier turns, their blocks included, stay a cached prefix. A turn adds every
  new line of its call's block: recall sized that block to the room the prompt
  leaves under the red line, so a new question is shown what recall finds for
  it, scaled to the room actually free. (``per_turn``, a share of recall's
  limit, caps it instead: its best new lines that fit, the best one alone if
  none does, and within what the other turns' blocks leave of the limit; a
  small share is less than one line at a small window, and a new
  question got one snippet, often not the one it needed.) The model sees the
  lines of this call's block and every line shown since the last compression.
  The blocks kept are counted with the messages, so pre-flight's red line, and
  the compression it triggers, bound them; a compression gives them up (it
  rewrites everything after the summaries anyway), and so does a call whose
  prompt they would push past the red line (recall sizes its block as if they
  were given up, :meth:`~langgraph_ctx.middleware._room.RoomFiller.room`): a
  new question's lines come before lines other questions asked for. Otherwise
  earlier turns' blocks are never given up between compressions: giving up the
  latest turns' blocks, turn after turn, changed the prompt a few turns back on
  every call, and on Anthropic's cache, whose entries are only where earlier
  prompts ended, each such call missed the whole prompt. After a compression
  this call's block starts over, whole.
- ``"compression"``: one block kept, byte-identical, as stable context right
  after the summaries, until the stable prefix changes (a compression); then
  this call's block replaces it. The fewest recall tokens sent, but recall
  stops following the conversation until the next compression. A kept block
  that no longer fits the room pre-flight left is replaced at once.
- ``"call"``: nothing kept: the block is per-call context, in the last user
  message (:func:`~langgraph_ctx.middleware.placement.place_messages`); each turn
  pays for it and for the turn before, which no longer carries it.

What is kept is checkpointed (``state["session"]["recall_shown"]``: the lines
of each turn's block, and ``["recall_kept"]``: ``"compression"``'s block; each
with the stable prefix it belongs to) when the graph's state has a ``session``
key, as ``ContextState`` does. A state with a ``recall_shown`` channel
(``DeltaContextState``) keeps the lines there instead, each call storing only
the lines it added (:func:`~langgraph_ctx.state.recall_shown_changes`): in the
session they were rewritten, whole, into every checkpoint and every session
write until the next compression, the one part of such a checkpoint still
growing with the turns. Each run of a thread may be served by another
process (LangGraph Server's replicas) or a restarted one, and a process that
rebuilt the blocks from its own memory would send other bytes a few turns back
(with two processes taking a thread's runs at random, a large part of each
prompt would stop being cacheable: see benchmarks/RESULTS.md) and show the model recalled lines
that come and go. The process's memory keeps the same blocks with their token
counts, used while they match the checkpoint. Without a ``session`` key, what is
kept lives in the process's memory only (a restarted process starts over).

Their tokens are reserved (``ctx.session.reserved``, checkpointed as
``session["reserved"]`` and restored by the pipeline before pre-flight counts):
pre-flight counts them as system content, so that compression makes room for
them, and what recall counted for this call's block is taken back out of the
usage report as far as it is not sent. What another setting of
``recall_refresh`` kept is given up (:func:`release`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx import ledger
from langgraph_ctx.markers import KEY, is_recall_block, part_count
from langgraph_ctx.middleware._content import (
    is_stable_system,
    join_contents,
    stable_signature,
    text_of,
)
from langgraph_ctx.middleware.recall import block_lines, block_text
from langgraph_ctx.pipeline import CallContext

_KEPT = "placement.recall"
"""``"compression"``: ``ctx.session.scratch`` and ``reserved`` key of the kept block."""
_SHOWN = "placement.recall_shown"
"""``"delta"``: ``ctx.session.scratch`` and ``reserved`` key of the blocks kept per turn."""
_SESSION, _SAVED, _SAVED_BLOCK = "session", "recall_shown", "recall_kept"
"""Where the checkpoint keeps what is kept: ``state["session"]["recall_shown"]``
(``"delta"``'s blocks) and ``["recall_kept"]`` (``"compression"``'s block)."""
_CHANNEL = "recall_shown"
"""``"delta"``'s blocks in a channel of their own, where the state has it."""


@dataclass
class _Shown:
    """The recall blocks kept in the prompt since the stable prefix last changed."""

    signature: int
    lines: dict[str, list[str]] = field(default_factory=dict)
    """The lines each turn's block holds, by its user message's id, oldest turn first."""
    text: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    """Raw tokens each block adds to its user message."""
    fresh: tuple[str, int] = ("", 0)
    """The last block recall made and its raw tokens (a turn's calls share it)."""

    def drop(self, anchor: str) -> None:
        del self.lines[anchor], self.text[anchor], self.tokens[anchor]

    def seen(self) -> set[str]:
        return {line for lines in self.lines.values() for line in lines}

    def saved(self) -> dict[str, Any]:
        """What the checkpoint keeps: the signature and each turn's lines."""
        return {"signature": self.signature, "lines": {a: list(v) for a, v in self.lines.items()}}

    @classmethod
    def load(cls, saved: Mapping[str, Any], ctx: CallContext) -> _Shown:
        """The blocks as a checkpoint kept them (another process, or before a restart)."""
        shown = cls(int(saved.get("signature", 0)))
        for anchor, lines in (saved.get("lines") or {}).items():
            text = block_text(lines)
            shown.lines[anchor], shown.text[anchor] = list(lines), text
            shown.tokens[anchor] = ctx.counter.count_text(text + "\n\n")
        return shown


DEFAULT_PER_TURN: float | None = None
"""``per_turn`` by default: no share; a turn adds its call's block whole (the lines
not shown yet), which recall sized to the room the prompt leaves. A fixed share
of recall's limit, if small, is less than one line at a small
window: a new question then got one snippet, often not the one it needed."""


def delta_recall(
    messages: Sequence[BaseMessage], ctx: CallContext, per_turn: float | None = DEFAULT_PER_TURN
) -> list[BaseMessage]:
    """``messages`` with the kept recall blocks in their turns' user messages and this
    call's best new lines in the last one's, instead of this call's block (see the
    module docstring: ``"delta"``)."""
    release(ctx, keep=_SHOWN)
    out = list(messages)
    at = next((j for j, m in enumerate(out) if is_recall_block(m)), None)
    fresh = out.pop(at) if at is not None else None
    human = next((m for m in reversed(out) if m.type == "human"), None)
    if human is None or not human.id or part_count(human):
        # Nothing to anchor a block to, or only a message rewritten on every call
        # (ARC's memory, the last user message within a tool loop): this call's
        # block is per-call context, and what earlier calls kept is not sent.
        release(ctx)
        return list(messages)
    signature = stable_signature(out)
    shown: _Shown | None = ctx.session.scratch.get(_SHOWN)
    saved = _saved_shown(ctx)
    if saved is not None and (shown is None or shown.saved() != saved):
        shown = _Shown.load(saved, ctx)  # another process (or an earlier one) served the thread
    if shown is None or shown.signature != signature:
        shown = _Shown(signature)  # a compression rewrote the prefix: start over
    present = {str(m.id) for m in out if m.type == "human"}
    for gone in [a for a in shown.lines if a not in present]:
        shown.drop(gone)
    fresh_raw = 0
    if fresh is not None:
        text = text_of(fresh)
        if shown.fresh[0] != text:
            shown.fresh = (text, ctx.counter.count_message(fresh))
        fresh_raw = shown.fresh[1]
        _add(shown, str(human.id), block_lines(text), _limit(fresh), per_turn, ctx)
    if shown.lines and _crowding(ctx, sum(shown.tokens.values()), fresh_raw):
        # The blocks kept no longer fit with the conversation and this turn's lines
        # (recall sized its block as if they were given up: see RoomFiller.room;
        # or this turn's tool results outgrew the room its block was made for):
        # given up, as a compression would, rather than the conversation cut for
        # them or a new question left without room. This call's block, which fits
        # the room now, starts the turn's lines over.
        for anchor in list(shown.lines):
            shown.drop(anchor)
        if fresh is not None:
            _add(shown, str(human.id), block_lines(text), _limit(fresh), per_turn, ctx)
    kept = sum(shown.tokens.values())
    # Sent inside user messages: counted with the messages, as the prompt ceiling
    # recounts them, instead of as system (pre-flight's) or auxiliary (recall's).
    _take_back(ctx, "system", ctx.session.reserved.get(_SHOWN, 0))
    _take_back(ctx, "auxiliary", fresh_raw)
    _take_back(ctx, "messages", -kept)
    ctx.session.reserved[_SHOWN] = kept
    ctx.session.scratch[_SHOWN] = shown
    if _CHANNEL in ctx.channels:
        _persist_changes(ctx, shown.saved())
    else:
        _persist(ctx, _SAVED, shown.saved(), saved)
    return [_anchored(m, shown.text) if m.type == "human" else m for m in out]


def _crowding(ctx: CallContext, kept: int, fresh_raw: int) -> bool:
    """Whether the prompt, with ``kept`` raw tokens of blocks in place of what
    pre-flight reserved and of this call's block (``fresh_raw``), passes the red
    line (or, under a hard message cap, the messages and ``kept`` pass the cap)."""
    report = ctx.usage
    if report is None:
        return False
    apply = ctx.session.calibration.apply
    reserved = apply(ctx.session.reserved.get(_SHOWN, 0))
    if report.total - reserved - apply(fresh_raw) + apply(kept) > ctx.budget.red_line:
        return True
    messages = report.used.get("messages", 0) + apply(kept)
    return ctx.budget.messages_cap and messages > ctx.budget.messages


def release(ctx: CallContext, keep: str | None = None) -> None:
    """Give up what another ``recall_refresh`` kept (the setting changed since, or
    placement is off): no longer sent, so no longer counted. With ``keep=None``
    (``"call"``, ``"none"``) the change is checkpointed here."""
    reserved = ctx.session.reserved
    stale = [key for key in (_KEPT, _SHOWN) if key != keep and key in reserved]
    for key in stale:
        _take_back(ctx, "system", reserved.pop(key))
    if stale and keep is None and _SESSION in ctx.channels:
        ctx.persist("placement", **{_SESSION: {"reserved": dict(reserved)}})


def _persist(
    ctx: CallContext, key: str, value: dict[str, Any], saved: Mapping[str, Any] | None
) -> None:
    """Checkpoint ``value`` as ``session[key]`` if it changed, with the tokens reserved
    (``session["reserved"]``, which the pipeline restores before pre-flight counts)."""
    if _SESSION not in ctx.channels:
        return
    reserved = dict(ctx.session.reserved)
    if value != saved or reserved != (ctx.state.get(_SESSION) or {}).get("reserved"):
        ctx.persist("placement", **{_SESSION: {key: value, "reserved": reserved}})


def _saved_shown(ctx: CallContext) -> Mapping[str, Any] | None:
    """``"delta"``'s blocks as the checkpoint keeps them: in the session if it holds
    them (no channel, or a process of an earlier version served the last call: one
    with the channel clears the session's copy whenever it writes), else in their
    channel."""
    in_session = _saved(ctx)
    if in_session is not None or _CHANNEL not in ctx.channels:
        return in_session
    saved = ctx.state.get(_CHANNEL)
    return saved if isinstance(saved, Mapping) and "signature" in saved else None


def _persist_changes(ctx: CallContext, value: dict[str, Any]) -> None:
    """Checkpoint ``value`` into the ``recall_shown`` channel as what changed since
    the channel's value (the lines added, the turns dropped; all of it after a
    compression), and the tokens reserved into the session. A copy the session
    still holds from before the channel goes."""
    held = ctx.state.get(_CHANNEL)
    base = held if isinstance(held, Mapping) and "signature" in held else None
    if value != base:
        ctx.persist("placement", **{_CHANNEL: _changes(base, value)})
    session = (ctx.state.get(_SESSION) or {}) if _SESSION in ctx.channels else {}
    update: dict[str, Any] = {}
    if session.get(_SAVED) is not None:
        update[_SAVED] = None
    if _SESSION in ctx.channels and dict(ctx.session.reserved) != session.get("reserved"):
        update["reserved"] = dict(ctx.session.reserved)
    if update:
        ctx.persist("placement", **{_SESSION: update})


def _changes(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
    """The change that makes ``before`` ``after`` (see ``recall_shown_changes``)."""
    if before is None or before.get("signature") != after["signature"]:
        return {"reset": True, "signature": after["signature"], "add": dict(after["lines"])}
    had: Mapping[str, list[str]] = before.get("lines") or {}
    drop = [a for a in had if a not in after["lines"]]
    add: dict[str, list[str]] = {}
    for anchor, lines in after["lines"].items():
        held = had.get(anchor)
        if held is not None and lines[: len(held)] != list(held):  # not grown: anew
            drop.append(anchor)
            held = None
        if held is None or len(lines) > len(held):
            add[anchor] = lines[len(held or ()) :]
    return {"drop": drop, "add": add}


def _saved(ctx: CallContext, key: str = _SAVED) -> Mapping[str, Any] | None:
    """What the checkpoint keeps under ``session[key]``, if the graph's state has a
    ``session`` key."""
    if _SESSION not in ctx.channels:
        return None
    saved = (ctx.state.get(_SESSION) or {}).get(key)
    return saved if isinstance(saved, Mapping) else None


def _add(
    shown: _Shown,
    anchor: str,
    fresh: list[str],
    limit: int,
    per_turn: float | None,
    ctx: CallContext,
) -> None:
    """This turn's block: ``fresh``'s best lines not shown yet, added to what it holds.
    ``per_turn=None``: up to the size of ``fresh`` (the block recall fitted to the
    room this call leaves), whatever the other turns' blocks hold: they are counted
    with the messages, and compression makes room. A share: up to ``per_turn`` of
    ``limit`` and within what the other turns' blocks leave of ``limit``; past it,
    a turn that holds none takes its best line alone. Earlier turns' blocks are
    never given up (see the module docstring)."""
    apply, count = ctx.session.calibration.apply, ctx.counter.count_text
    seen = shown.seen()
    held = shown.lines.get(anchor, [])
    others = sum(t for a, t in shown.tokens.items() if a != anchor)
    if per_turn is None:
        cap = apply(sum(count(line + "\n") for line in fresh))
    else:
        room = limit - apply(others + count(block_text([]) + "\n\n"))
        cap = max(0, min(int(per_turn * limit), int(room)))
    new = _best(held, [line for line in fresh if line not in seen], cap, ctx)
    if not new:
        return
    lines = [*held, *new]
    text = block_text(lines)
    cost = count(text + "\n\n")
    if anchor in shown.lines:
        shown.drop(anchor)
    shown.lines[anchor], shown.text[anchor], shown.tokens[anchor] = lines, text, cost
    if per_turn is not None and apply(others + cost) > limit:  # compression makes room
        ctx.record("recall_over_limit", ledger.RecallOverLimit(tokens=others + cost, limit=limit))


def _best(held: list[str], new: list[str], cap: int, ctx: CallContext) -> list[str]:
    """What a turn holding ``held`` adds of ``new`` (recall's best first): each line
    that still fits ``cap`` calibrated tokens, a large one passed over for the
    smaller ones below it (a whole memory does not crowd out the snippet a turn
    asks about); the best one alone if none fits a turn that holds none."""
    apply, count = ctx.session.calibration.apply, ctx.counter.count_text
    taken: list[str] = []
    used = sum(count(line + "\n") for line in held)
    for line in new:
        cost = count(line + "\n")
        if apply(used + cost) <= cap:
            taken.append(line)
            used += cost
    return taken if taken or held else new[:1]


def _anchored(m: BaseMessage, blocks: dict[str, str]) -> BaseMessage:
    block = blocks.get(str(m.id))
    if block is None:
        return m
    return m.model_copy(update={"content": join_contents([block, m.content])})


def _limit(fresh: BaseMessage) -> int:
    marks = fresh.additional_kwargs.get(KEY, {}).get("recall", {})
    limit = marks.get("limit")
    return int(limit) if isinstance(limit, int) else int(marks.get("tokens", 0))


def keep_recall(messages: Sequence[BaseMessage], ctx: CallContext) -> list[BaseMessage]:
    """``messages`` with the session's kept recall block in place of this call's, as
    stable context after the summaries (see the module docstring: ``"compression"``).

    Pre-flight counted the kept block as system content (reserved) and recall
    counted this call's block as auxiliary: the one not sent is taken back out.
    """
    release(ctx, keep=_KEPT)
    out = list(messages)
    at = next((j for j, m in enumerate(out) if is_recall_block(m)), None)
    fresh = out.pop(at) if at is not None else None
    fresh_raw = ctx.counter.count_message(fresh) if fresh is not None else 0
    signature = stable_signature(out)
    kept: _Kept | None = ctx.session.scratch.get(_KEPT)
    saved = _saved(ctx, _SAVED_BLOCK)
    if saved is not None and (kept is None or kept.saved() != saved):
        kept = _Kept.load(saved, ctx)  # another process (or an earlier one) served the thread
    current = kept if kept and kept.signature == signature and kept.block is not None else None
    if current is not None:
        _reserve(ctx, current.raw)  # what pre-flight should have counted, if it did not
    if current is not None and _fits(ctx, fresh_raw):
        kept = current  # counted as reserved: recall's own count goes
        _take_back(ctx, "auxiliary", fresh_raw)
    else:  # the prefix changed (a compression) or the kept block no longer fits
        replacement = _stable(fresh) if fresh is not None else None  # counted by recall
        _take_back(ctx, "system", ctx.session.reserved.get(_KEPT, 0))
        raw = ctx.counter.count_message(replacement) if replacement else 0
        kept = _Kept(signature, replacement, raw)
        ctx.session.reserved[_KEPT] = raw
    block = kept.block
    ctx.session.scratch[_KEPT] = kept
    _persist(ctx, _SAVED_BLOCK, kept.saved(), saved)
    if block is None:
        return out
    last = max((j for j, m in enumerate(out) if is_stable_system(m)), default=-1)
    return [*out[: last + 1], block, *out[last + 1 :]]


@dataclass(frozen=True)
class _Kept:
    """``"compression"``'s block, the stable prefix it belongs to, and its raw tokens."""

    signature: int
    block: BaseMessage | None
    raw: int

    def saved(self) -> dict[str, Any]:
        """What the checkpoint keeps."""
        if self.block is None:
            return {"signature": self.signature, "content": None, "marks": {}}
        marks = dict(self.block.additional_kwargs.get(KEY, {}))
        return {"signature": self.signature, "content": self.block.content, "marks": marks}

    @classmethod
    def load(cls, saved: Mapping[str, Any], ctx: CallContext) -> _Kept:
        """The block as a checkpoint kept it."""
        content = saved.get("content")
        if content is None:
            return cls(int(saved.get("signature", 0)), None, 0)
        marks = dict(saved.get("marks") or {})
        block = SystemMessage(content, id="lgctx-recall", additional_kwargs={KEY: marks})
        return cls(int(saved.get("signature", 0)), block, ctx.counter.count_message(block))


def _reserve(ctx: CallContext, raw: int) -> None:
    """Reserve ``raw`` tokens for the kept block; the report gets any difference from
    what pre-flight counted (a process that had not kept it, or another size)."""
    _take_back(ctx, "system", ctx.session.reserved.get(_KEPT, 0) - raw)
    ctx.session.reserved[_KEPT] = raw


def _take_back(
    ctx: CallContext, component: Literal["system", "messages", "auxiliary"], raw: int
) -> None:
    if ctx.usage is not None and raw:
        ctx.adjust_usage(component, -raw)


def _stable(block: BaseMessage) -> BaseMessage:
    """The recall block as stable context: same text, no longer marked ephemeral."""
    marks = {k: v for k, v in block.additional_kwargs.get(KEY, {}).items() if k != "ephemeral"}
    return SystemMessage(block.content, id=block.id, additional_kwargs={KEY: marks})


def _fits(ctx: CallContext, fresh_raw: int) -> bool:
    """Whether the prompt, with the kept block (reserved) instead of this call's
    block (``fresh_raw`` tokens), stays under the red line."""
    if ctx.usage is None:
        return True
    return ctx.usage.total - ctx.session.calibration.apply(fresh_raw) <= ctx.budget.red_line
