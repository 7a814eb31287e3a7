"""The edit operations and plans of :mod:`.core`: what an operation says
(:class:`EditOp`, parsed from a manager's JSON by :func:`parse_ops`), what an
action did (:class:`EditPlan`, :class:`AppliedEdit`) and why one is refused
(:class:`EditRejected`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langgraph_ctx.errors import ContextRunError
from langgraph_ctx.ledger.parts import EditRecord

Reason = Literal[
    "malformed",
    "missing_field",
    "content_not_text",
    "unknown_id",
    "duplicate_id",
    "bad_role",
    "role_position",
    "pinned",
    "note_protected",
    "conflict",
]
"""Why an action was rejected (``EditRejected.reason``)."""

Protection = Literal["manager", "tiers"]
"""What an action may not touch. ``"manager"`` (a model's or a policy's
actions): every system message and the exchanges of pinned messages are pinned,
and every note (the working note, the think node's plan traces) may be rewritten,
never deleted or merged. ``"tiers"`` (compression's own plan, by its tiers): the
leading system messages and pinned messages are, and a pinned note (the working
note); a later system message or a plan trace goes with its turn."""

ROLES = {"system": "system", "user": "human", "human": "human", "assistant": "ai", "ai": "ai"}
ROLES["tool"] = "tool"
"""Accepted role names (OpenAI's and LangChain's), to LangChain message types."""


class EditRejected(ContextRunError):
    """An edit action was invalid; nothing was changed.

    ``reason`` is one of :data:`Reason`; ``op`` the index of the offending
    operation (``None`` for the action as a whole); ``detail`` says what is wrong.
    """

    def __init__(self, reason: Reason, detail: str, op: int | None = None) -> None:
        where = "" if op is None else f"operation {op}: "
        super().__init__(f"edit rejected ({reason}): {where}{detail}")
        self.reason: Reason = reason
        self.detail = detail
        self.op = op


@dataclass(frozen=True, slots=True)
class EditOp:
    """One operation, validated in shape (see :func:`parse_ops`)."""

    ids: tuple[str, ...]
    role: str | None
    rationale: str
    new_content: str
    marks: Mapping[str, Any] | None = None
    """Marks the produced message carries (a strategy's own state on its pinned
    note). Set by code only: never parsed from a manager's JSON."""
    message: BaseMessage | None = None
    """The message to put in place, ready made (see :meth:`replacing`). Set by
    code only: never parsed from a manager's JSON."""
    place: Literal["first", "last"] = "first"
    """Where a merge lands: at the place of its first target in the history, or
    of its last (compression's summaries: after the pinned messages among the
    span, before what it keeps). Set by code only."""

    @classmethod
    def replacing(
        cls,
        ids: Iterable[str],
        message: BaseMessage,
        rationale: str,
        *,
        place: Literal["first", "last"] = "first",
    ) -> EditOp:
        """An operation putting ``message``, made by code, in place of ``ids``: a
        rewrite for one id, a merge for several (at ``place``).

        ``message`` is placed as it is (its id and marks are its maker's); it must
        not take the id of a message that stays, and as a rewrite it keeps the
        tool call id or the tool calls of what it replaces (refused otherwise)."""
        return cls(
            ids=tuple(ids),
            role=message.type,
            rationale=rationale,
            new_content=message.text,
            message=message,
            place=place,
        )

    @property
    def kind(self) -> Literal["delete", "rewrite", "merge"]:
        if self.message is None and not self.new_content.strip():
            return "delete"
        return "rewrite" if len(self.ids) == 1 else "merge"


@dataclass(frozen=True, slots=True)
class AppliedEdit:
    """What one operation did, after widening: the ledger's record of it."""

    kind: Literal["delete", "rewrite", "merge"]
    ids: tuple[str, ...]
    """Every message it replaced or removed, in history order."""
    widened: tuple[str, ...]
    """Ids added to the operation's own to keep tool exchanges whole."""
    role: str | None
    rationale: str
    new_id: str | None
    """The id of the message it produced (``None`` for a deletion)."""


@dataclass(frozen=True, slots=True)
class EditPlan:
    """The history after an action, and what it takes out of the active state."""

    messages: list[BaseMessage]
    removed: list[BaseMessage] = field(default_factory=list)
    """Originals leaving the active state, in history order: archive them first."""
    applied: list[AppliedEdit] = field(default_factory=list)
    made: list[BaseMessage] = field(default_factory=list)
    """The messages the operations produced (each is in ``messages``)."""

    @property
    def changed(self) -> bool:
        return bool(self.applied)

    def update(self) -> list[AnyMessage | RemoveMessage]:
        """The ``messages`` state update that writes this history (for ``ctx.persist``).

        The whole list after ``RemoveMessage(REMOVE_ALL)``, as compression writes
        its rewrite: ``add_messages`` appends a new id at the end, and an edited
        message must land where its originals were."""
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *self.messages]  # type: ignore[list-item]

    def ledger(self) -> EditRecord:
        """The ledger entry's data: every operation, with its rationale."""
        return {
            "operations": [
                {
                    "kind": a.kind,
                    "ids": list(a.ids),
                    "widened": list(a.widened),
                    "role": a.role,
                    "rationale": a.rationale,
                    "new_id": a.new_id,
                }
                for a in self.applied
            ],
            "removed": [str(m.id) for m in self.removed],
        }


# -- parsing -------------------------------------------------------------------


def parse_ops(raw: Iterable[Any]) -> list[EditOp]:
    """Operations from dicts (JSON), pydantic models or :class:`EditOp`; shape only.

    Raises :class:`EditRejected` for a missing field, ids that are not a
    non-empty list of strings, or content that is not text.
    """
    if isinstance(raw, (str, bytes, Mapping)):
        raise EditRejected("malformed", f"expected a list of operations, got {type(raw).__name__}")
    return [_parse_one(i, item) for i, item in enumerate(raw)]


def _parse_one(i: int, item: Any) -> EditOp:
    if isinstance(item, EditOp):
        return item
    if hasattr(item, "model_dump"):
        item = item.model_dump()
    if not isinstance(item, Mapping):
        raise EditRejected("malformed", f"expected an object, got {type(item).__name__}", i)
    if "rationale" not in item and "justification" in item:
        item = {**item, "rationale": item["justification"]}
    missing = [k for k in ("ids", "role", "rationale", "new_content") if k not in item]
    if missing:
        raise EditRejected("missing_field", f"missing {missing}", i)
    ids = item["ids"]
    if isinstance(ids, str) or not isinstance(ids, Sequence) or not ids:
        raise EditRejected("malformed", f"'ids' must be a non-empty list, got {ids!r}", i)
    if not all(isinstance(x, str) and x for x in ids):
        raise EditRejected("malformed", f"every id must be a non-empty string, got {ids!r}", i)
    content = item["new_content"]
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise EditRejected(
            "content_not_text", f"'new_content' must be text, got {type(content).__name__}", i
        )
    role, rationale = item["role"], item["rationale"]
    if role is not None and not isinstance(role, str):
        raise EditRejected("bad_role", f"'role' must be a string, got {role!r}", i)
    if not isinstance(rationale, str):
        raise EditRejected("malformed", f"'rationale' must be text, got {rationale!r}", i)
    return EditOp(ids=tuple(ids), role=role, rationale=rationale, new_content=content)
