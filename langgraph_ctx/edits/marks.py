"""The marks edits put on messages and read back: the working note, what an
edit produced, and which messages no operation may touch."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_ctx.history.structure import Tiers, split_tiers
from langgraph_ctx.markers import KEY


def note(message: BaseMessage) -> BaseMessage:
    """Mark ``message`` as the working note: rewritable, never deleted. Returns it."""
    marks = message.additional_kwargs.get(KEY)
    message.additional_kwargs[KEY] = {**(marks if isinstance(marks, dict) else {}), "note": True}
    return message


def is_note(message: BaseMessage) -> bool:
    """Whether ``message`` carries the note mark: a working note, or the think
    node's ``[plan]`` trace (:func:`is_working_note` tells them apart)."""
    marks = message.additional_kwargs.get(KEY)
    return isinstance(marks, dict) and bool(marks.get("note"))


def is_working_note(message: BaseMessage) -> bool:
    """Whether ``message`` is the working note a manager keeps (rewritten, never
    deleted or merged away). The think node's ``[plan]`` trace carries the note mark
    too (placement folds it into the reply after it), but it is an agent message like
    any other: taken for the note, the first trace became AdaCoM's working note and
    every later one was kept from distillation, until a run of them outgrew the
    prompt and the ceiling dropped it, the note with it."""
    plan_trace = isinstance(message, AIMessage) and message.name == "think"
    return is_note(message) and not plan_trace


def is_edited(message: BaseMessage) -> bool:
    """Whether ``message`` was produced by an edit (its originals are archived)."""
    marks = message.additional_kwargs.get(KEY)
    return isinstance(marks, dict) and "edited" in marks


def protected_ids(
    messages: Sequence[BaseMessage],
    *,
    pin_task: bool = True,
    every_system: bool = True,
    units: list[list[BaseMessage]] | None = None,
) -> set[str]:
    """Ids no operation may touch: pinned messages and their exchanges (not the note).

    ``every_system``: every system message is pinned (a manager must not rewrite
    an instruction anywhere); else only the leading ones, as compression's tiers
    have it (a later system message belongs to its turn). ``units``: the
    history's tool exchanges, if the caller has them."""
    return protected_in(
        split_tiers(messages, pin_task=pin_task, every_system=every_system, units=units)
    )


def protected_in(tiers: Tiers) -> set[str]:
    # System messages an edit produced are the manager's own: it may edit them again.
    return {
        str(m.id)
        for m in tiers.pinned
        if not is_note(m) and not (m.type == "system" and is_edited(m) and not has_pin_mark(m))
    }


def has_pin_mark(message: BaseMessage) -> bool:
    marks = message.additional_kwargs.get(KEY)
    return isinstance(marks, dict) and bool(marks.get("pinned"))
