"""Plan a list of edit operations on a message history: validate, widen, rebuild. Pure.

An operation is ``{ids, role, rationale, new_content}`` (``justification`` is
accepted for ``rationale``: the AdaCoM fork's name):

- empty ``new_content`` (or only whitespace) **deletes** the targets;
- one target with content **rewrites** it, at its place;
- several targets **merge** into one message at the place of the first of them
  in the history (not in the list; code may ask for the last), the others removed;
- every message no operation targets is copied as it is.

Guarantees, whoever calls it:

- **Pairs stay whole, by widening.** An operation that would leave a tool call
  without its result, or a result without its call (deleting or merging part of
  an exchange, or giving one of its messages another role), is widened to the
  whole exchange: the assistant message and every result answering it, parallel
  calls included. Widening rather than refusing, because the usual edits
  ("drop this stale result", "merge these results into a digest") name the
  results only, and refusing them would refuse nearly every useful action. A
  rewrite that keeps the role (a tool result stays a tool result with its
  ``tool_call_id``; an assistant message keeps its ``tool_calls``) is not
  widened. Widening is listed in the plan (``widened``) and so in the ledger.
- **Pinned messages are never edited**: system messages (except summaries and
  what an earlier edit produced), the session's first user message (the task),
  anything :func:`~langgraph_ctx.markers.pin`-ned, and the exchanges they belong
  to. The working note (:func:`is_working_note`) may be rewritten, never deleted or
  merged away.
- What is protected follows ``rules`` (:data:`Protection`): a manager's
  actions by default, compression's tiers for compression.
- **All or nothing.** Any invalid operation rejects the whole list with an
  :class:`EditRejected` naming the reason and the operation; the input list is
  never changed.

Edited messages get new ids derived from what made them (so a step LangGraph
re-runs after a crash produces the same ids), and an ``edited`` mark naming
the ids they replace; originals keep their ids, for the archive. Rationales
stay in the plan for the ledger and never enter a message.

Code may hand the message to put in place ready made (:meth:`EditOp.replacing`:
compression's numbered summary, a compacted tool result that keeps its id): it
goes through the same checks, and is placed as it is, with its maker's marks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

# The operation types (.ops) and the marks (.marks) are named from here too: this
# module is where strategies import the edit core from.
from langgraph_ctx.edits.marks import has_pin_mark, protected_in
from langgraph_ctx.edits.marks import is_edited as is_edited
from langgraph_ctx.edits.marks import is_note as is_note
from langgraph_ctx.edits.marks import is_working_note as is_working_note
from langgraph_ctx.edits.marks import note as note
from langgraph_ctx.edits.marks import protected_ids as protected_ids
from langgraph_ctx.edits.ops import ROLES as ROLES
from langgraph_ctx.edits.ops import AppliedEdit as AppliedEdit
from langgraph_ctx.edits.ops import EditOp as EditOp
from langgraph_ctx.edits.ops import EditPlan as EditPlan
from langgraph_ctx.edits.ops import EditRejected as EditRejected
from langgraph_ctx.edits.ops import Protection as Protection
from langgraph_ctx.edits.ops import Reason as Reason
from langgraph_ctx.edits.ops import parse_ops as parse_ops
from langgraph_ctx.history.structure import split_tiers, tool_units
from langgraph_ctx.markers import KEY


def plan_edits(
    messages: Sequence[BaseMessage],
    operations: Iterable[Any],
    *,
    pin_task: bool = True,
    rules: Protection = "manager",
) -> EditPlan:
    """Validate ``operations`` against ``messages`` and build the history after them.

    ``pin_task``: the task is pinned; ``rules``: what else is (:data:`Protection`).
    Raises :class:`EditRejected` (and changes nothing) if any operation is invalid.
    """
    ops = parse_ops(operations)
    position = {str(m.id): i for i, m in enumerate(messages) if m.id}
    _check_ids(ops, position)
    exchanges = tool_units(messages)  # one pass, for pinning and for widening
    tiers = split_tiers(
        messages, pin_task=pin_task, every_system=rules == "manager", units=exchanges
    )
    protected = protected_in(tiers)
    # Compression may reduce in place what a pin only drags along for the pair's
    # sake (see compression's tiers); a manager's actions leave the whole exchange.
    loose = {str(m.id) for m in tiers.dragged} if rules == "tiers" else set()
    every_note = rules == "manager"
    units = _unit_of(exchanges, position)
    targets: list[list[int]] = []
    widened: list[tuple[str, ...]] = []
    for i, op in enumerate(ops):
        where = sorted(position[x] for x in op.ids)
        in_place = op.kind == "rewrite" and _keeps_role(op.role, messages[where[0]])
        guard = protected - loose if in_place else protected
        _check_protected(i, op, [messages[p] for p in where], guard, every_note)
        extra = _widen(op, where, messages, units)
        widened.append(tuple(str(messages[p].id) for p in extra))
        targets.append(sorted({*where, *extra}))
    _check_overlap(targets, messages)
    for i, (op, where) in enumerate(zip(ops, targets, strict=True)):
        in_place = op.kind == "rewrite" and _keeps_role(op.role, messages[where[0]])
        guard = protected - loose if in_place else protected
        _check_protected(i, op, [messages[p] for p in where], guard, every_note)
        _check_role(i, op, [messages[p] for p in where])
    _check_made(messages, ops, targets, position)
    return _build(messages, ops, targets, widened)


def _check_ids(ops: Sequence[EditOp], position: Mapping[str, int]) -> None:
    seen: dict[str, int] = {}
    for i, op in enumerate(ops):
        for x in op.ids:
            if x not in position:
                raise EditRejected("unknown_id", f"no message has id {x!r}", i)
            if x in seen:
                where = "twice in it" if seen[x] == i else f"also in operation {seen[x]}"
                raise EditRejected("duplicate_id", f"id {x!r} appears {where}", i)
            seen[x] = i


def _check_protected(
    i: int, op: EditOp, targets: Sequence[BaseMessage], protected: set[str], every_note: bool
) -> None:
    for m in targets:
        if str(m.id) in protected:
            raise EditRejected(
                "pinned", f"message {m.id!r} ({m.type}) is pinned and is never edited", i
            )
        kept = is_working_note(m) and (every_note or has_pin_mark(m))
        if kept and (op.kind != "rewrite" or len(targets) > 1):
            raise EditRejected(
                "note_protected",
                f"the working note {m.id!r} may be rewritten, never deleted or merged",
                i,
            )


def _unit_of(
    exchanges: list[list[BaseMessage]], position: Mapping[str, int]
) -> dict[int, list[int]]:
    """Position -> the positions of its tool exchange (the call and its results)."""
    out: dict[int, list[int]] = {}
    for unit in exchanges:
        where = sorted(position[str(m.id)] for m in unit)
        for p in where:
            out[p] = where
    return out


def _widen(
    op: EditOp, where: list[int], messages: Sequence[BaseMessage], units: dict[int, list[int]]
) -> list[int]:
    if op.kind == "rewrite" and _keeps_role(op.role, messages[where[0]]):
        return []  # same message, same place, same pairing: nothing to widen
    extra = {p for w in where for p in units.get(w, ())}
    return sorted(extra - set(where))


def _keeps_role(role: str | None, message: BaseMessage) -> bool:
    return role is None or ROLES.get(role.lower()) == message.type


def _check_overlap(targets: Sequence[list[int]], messages: Sequence[BaseMessage]) -> None:
    owner: dict[int, int] = {}
    for i, where in enumerate(targets):
        for p in where:
            if p in owner:
                raise EditRejected(
                    "conflict",
                    f"keeping tool exchanges whole makes it and operation {owner[p]} both "
                    f"edit message {messages[p].id!r}",
                    i,
                )
            owner[p] = i


def _check_role(i: int, op: EditOp, targets: Sequence[BaseMessage]) -> None:
    if op.kind == "delete":
        return
    if op.role is None:
        if len(targets) == 1:
            return  # a rewrite that keeps the role
        raise EditRejected("bad_role", "a merge needs a role", i)
    role = ROLES.get(op.role.lower())
    if role is None:
        raise EditRejected("bad_role", f"unknown role {op.role!r}; use one of {sorted(ROLES)}", i)
    if role == "tool" and not (len(targets) == 1 and targets[0].type == "tool"):
        raise EditRejected(
            "role_position",
            "a tool message must answer a tool call: only a tool result may be rewritten "
            "as one (one target, which keeps its tool_call_id)",
            i,
        )


def _check_made(
    messages: Sequence[BaseMessage],
    ops: Sequence[EditOp],
    targets: Sequence[list[int]],
    position: Mapping[str, int],
) -> None:
    """A ready-made message keeps tool exchanges whole and takes no id that stays."""
    made: set[str] = set()
    for i, (op, where) in enumerate(zip(ops, targets, strict=True)):
        m = op.message
        if m is None:
            continue
        if not m.id:
            raise EditRejected("malformed", "the message it puts in place has no id", i)
        if str(m.id) in made or position.get(str(m.id), where[0]) not in where:
            raise EditRejected(
                "conflict", f"the message it puts in place has id {m.id!r}, which stays", i
            )
        made.add(str(m.id))
        # As a rewrite, the tool call id or the calls of what it replaces; as a
        # merge (widened to whole exchanges), none.
        expected = _pairing(messages[where[0]]) if len(where) == 1 else ("", ())
        if _pairing(m) != expected:
            raise EditRejected(
                "role_position", "the message it puts in place would split a tool exchange", i
            )


def _pairing(message: BaseMessage) -> tuple[str, tuple[str, ...]]:
    calls = message.tool_calls if isinstance(message, AIMessage) else []
    return str(getattr(message, "tool_call_id", "") or ""), tuple(str(c["id"]) for c in calls)


def _build(
    messages: Sequence[BaseMessage],
    ops: Sequence[EditOp],
    targets: Sequence[list[int]],
    widened: Sequence[tuple[str, ...]],
) -> EditPlan:
    first: dict[int, BaseMessage | None] = {}
    applied: list[AppliedEdit] = []
    for op, where, extra in zip(ops, targets, widened, strict=True):
        originals = [messages[p] for p in where]
        made = op.message or (None if op.kind == "delete" else _made(op, originals))
        for p in where:
            first[p] = None
        first[where[-1] if op.place == "last" else where[0]] = made
        applied.append(
            AppliedEdit(
                kind=op.kind,
                ids=tuple(str(m.id) for m in originals),
                widened=extra,
                role=None if made is None else made.type,
                rationale=op.rationale,
                new_id=None if made is None else str(made.id),
            )
        )
    out: list[BaseMessage] = []
    for p, m in enumerate(messages):
        if p not in first:
            out.append(m)
        elif (made := first[p]) is not None:
            out.append(made)
    removed = [messages[p] for p in sorted(first)]
    produced = [m for m in first.values() if m is not None]
    return EditPlan(messages=out, removed=removed, applied=applied, made=produced)


def _made(op: EditOp, originals: Sequence[BaseMessage]) -> BaseMessage:
    sources = [str(m.id) for m in originals]
    digest = hashlib.sha1(
        json.dumps([sources, op.role, op.new_content]).encode(), usedforsecurity=False
    ).hexdigest()[:16]
    new_id = f"edit-{digest}"
    head = originals[0]
    marks: dict[str, Any] = {**(op.marks or {}), "edited": {"from": sources}}
    if any(is_working_note(m) for m in originals):
        marks["note"] = True
    if len(originals) == 1 and _keeps_role(op.role, head):
        old = head.additional_kwargs.get(KEY)
        kept = {k: v for k, v in (old if isinstance(old, dict) else {}).items() if k == "pinned"}
        return head.model_copy(
            update={
                "content": op.new_content,
                "id": new_id,
                "additional_kwargs": {**head.additional_kwargs, KEY: {**kept, **marks}},
            }
        )
    role = ROLES[str(op.role).lower()]
    kwargs: dict[str, Any] = {"id": new_id, "additional_kwargs": {KEY: marks}}
    if role == "system":
        return SystemMessage(op.new_content, **kwargs)
    if role == "human":
        return HumanMessage(op.new_content, **kwargs)
    if role == "ai":
        return AIMessage(op.new_content, **kwargs)
    # A tool role with one tool target keeps the role (handled above); _check_role
    # refused every other tool role.
    raise AssertionError(f"unreachable role {role!r}")
