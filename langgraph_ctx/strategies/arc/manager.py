"""ARC's context manager: a checklist and an interaction memory, folded every turn,
reorganized by reflection when the agent stalls (arXiv "ARC: Active and
Reflection-driven Context Management", section 3).

The actor sees the task, the checklist, the interaction memory and the last
interaction raw. A context manager keeps the other two:

- the **incremental update** (section 3.2.1) folds the newest interaction into
  the memory: it returns one new entry, which is appended; older memory text is
  never rewritten in this step, nor re-read, re-counted or re-archived by it. It
  also updates the checklist and may flag that the memory needs reflection;
- **reflection** (section 3.2.2) rewrites memory and checklist together
  (non-local edits: merge, drop outdated values, re-emphasize), when a stall
  signal fires (:mod:`~langgraph_ctx.strategies.arc.signals`) or the update
  flagged it. It reorganizes internal state only: it never prescribes actions.

Anything with ``checklist_for``/``update``/``reflect`` (and the async twins) is
a manager (:class:`ArcManager`):
:class:`~langgraph_ctx.strategies.arc.model.ChatModelArcManager` asks any
LangChain chat model through structured output;
:class:`~langgraph_ctx.strategies.arc.offline.OfflineArcManager` needs no model.
:func:`fold` runs one update and, when due, the reflection: the unit of work
the middleware (:class:`~langgraph_ctx.strategies.ReflectiveContextManager`)
runs in the background.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from langgraph_ctx.strategies.arc.signals import FoldSettings, StallState, Triggers, observe
from langgraph_ctx.strategies.managed import managed, title, unquoted

CHECKLIST_TITLE = title("Checklist")
"""The first line of the checklist message: what it is, and that the context
manager wrote it, not the user (:mod:`~langgraph_ctx.strategies.managed`)."""
MEMORY_TITLE = title("Interaction memory")
"""The first line of the interaction memory message (as the checklist's)."""

Status = Literal["open", "done", "dropped"]


class ChecklistItem(BaseModel):
    """One objective or constraint of the task, and how far it is."""

    id: str = Field(description="a short stable id, e.g. c1; keep the ids you were given")
    text: str = Field(description="the objective or constraint, as the task states it")
    status: Status = Field(default="open", description="open, done or dropped")
    note: str = Field(default="", description="short evidence or state (found values, ids)")


class Checklist(BaseModel):
    """A manager model's first checklist for a task (``initial_checklist="manager"``)."""

    items: list[ChecklistItem] = Field(
        description="the task's objectives and constraints, one per item, ids c1, c2, ..."
    )


class MemoryUpdate(BaseModel):
    """The incremental step's answer: what the newest interaction adds."""

    entry: str = Field(
        description="new memory text for the newest interaction only: evidence, values, ids, "
        "failures; no speculation. Empty if it adds nothing."
    )
    checklist: list[ChecklistItem] = Field(description="the whole checklist after it")
    reflect: bool = Field(
        default=False,
        description="true if progress stalls, the agent repeats itself, or the memory now "
        "contradicts itself or the newest evidence",
    )
    reason: str = Field(default="", description="why reflection is needed, if it is")


class Reflection(BaseModel):
    """Reflection's answer: memory and checklist rewritten together."""

    memory: str = Field(description="the whole interaction memory, reorganized")
    checklist: list[ChecklistItem] = Field(description="the whole checklist, revised")
    rationale: str = Field(default="", description="what was changed and why; recorded only")


@dataclass(frozen=True, kw_only=True)
class UpdateRequest:
    """Everything a manager is given for one update or reflection."""

    task: str
    checklist: tuple[ChecklistItem, ...]
    memory: str
    """The memory's text, without its title line."""
    interaction: tuple[BaseMessage, ...]
    """The interaction(s) to fold, raw and in order (the newest last)."""
    turn: int
    """The turn the newest interaction was (1 for the first)."""
    memory_tokens: int
    """The memory's cap; reflection should leave it well under it."""
    triggers: tuple[str, ...] = ()
    """For reflection: why it runs."""
    background: str = ""
    memory_used: int | None = None
    """Tokens the memory holds now, if the caller knows them (the middleware's memory
    message carries its count): the fold then counts only the new entry. ``None``:
    counted from ``memory``."""


class ArcManager(Protocol):
    """Keeps the checklist and the interaction memory (see the module)."""

    def checklist_for(self, task: str) -> list[ChecklistItem]: ...

    def update(self, request: UpdateRequest) -> MemoryUpdate: ...

    async def aupdate(self, request: UpdateRequest) -> MemoryUpdate: ...

    def reflect(self, request: UpdateRequest) -> Reflection: ...

    async def areflect(self, request: UpdateRequest) -> Reflection: ...


@dataclass(frozen=True, slots=True)
class Folded:
    """One update, and the reflection it triggered if any: what the middleware applies."""

    entry: str
    checklist: tuple[ChecklistItem, ...]
    stall: StallState
    """The trigger bookkeeping after it."""
    triggers: tuple[str, ...]
    """Why reflection ran; empty when it did not."""
    reflection: Reflection | None = None


def fold(
    manager: ArcManager, request: UpdateRequest, stall: StallState, settings: FoldSettings
) -> Folded:
    """Run the incremental update, then the reflection if a trigger fired."""
    folded, ask = _after_update(request, manager.update(request), stall, settings)
    return folded if ask is None else _with(folded, manager.reflect(ask))


async def afold(
    manager: ArcManager, request: UpdateRequest, stall: StallState, settings: FoldSettings
) -> Folded:
    """Async :func:`fold`."""
    folded, ask = _after_update(request, await manager.aupdate(request), stall, settings)
    return folded if ask is None else _with(folded, await manager.areflect(ask))


def _after_update(
    request: UpdateRequest, update: MemoryUpdate, stall: StallState, settings: FoldSettings
) -> tuple[Folded, UpdateRequest | None]:
    checklist = tuple(update.checklist) or request.checklist
    entry = stamped(request.turn, update.entry)
    # The memory only grows by the entry: its size is the known size plus the entry's,
    # so a fold counts what it adds, never the whole memory again.
    size = (
        settings.count("\n".join(x for x in (request.memory, entry) if x))
        if request.memory_used is None
        else request.memory_used + (settings.count(entry) if entry else 0)
    )
    found: Triggers = observe(
        stall,
        request.interaction,
        turn=request.turn,
        changed=_progress(request.checklist) != _progress(checklist),
        flagged=update.reflect,
        memory_tokens=size,
        settings=settings,
    )
    folded = Folded(update.entry, checklist, found.stall, found.fired)
    if not found.fired:
        return folded, None
    ask = UpdateRequest(
        task=request.task,
        checklist=checklist,
        memory="\n".join(x for x in (request.memory, entry) if x),
        interaction=request.interaction,
        turn=request.turn,
        memory_tokens=request.memory_tokens,
        triggers=found.fired,
        background=request.background,
        memory_used=size,
    )
    return folded, ask


def _with(folded: Folded, reflection: Reflection) -> Folded:
    return Folded(
        folded.entry, folded.checklist, folded.stall.reflected(), folded.triggers, reflection
    )


def _progress(items: Sequence[ChecklistItem]) -> list[tuple[str, str, str]]:
    return [(i.id, i.status, i.note) for i in items]


def stamped(turn: int, entry: str) -> str:
    """A memory entry as appended: each line with its turn, so reflection can order
    and merge lines."""
    return "\n".join(f"(t{turn}) {line.strip()}" for line in entry.splitlines() if line.strip())


def render_checklist(items: Sequence[ChecklistItem]) -> str:
    """The checklist message's text, as the actor reads it: its title, then one
    quoted line per item (a note may quote a tool result)."""
    lines = []
    for i in items:
        lines.append(f"- [{i.status}] {i.id}: {i.text}" + (f" -- {i.note}" if i.note else ""))
    return managed(CHECKLIST_TITLE, "\n".join(lines or ["- (no objectives stated)"]))


def render_memory(body: str) -> str:
    """The memory message's text, as the actor reads it: its title, then ``body``
    quoted line by line."""
    return managed(MEMORY_TITLE, body or EMPTY_MEMORY)


EMPTY_MEMORY = "(nothing yet)"


def memory_body(text: str) -> str:
    """The memory message's text without its title line and quotes (and the empty
    placeholder): what the manager wrote."""
    body = unquoted(text.partition("\n")[2])
    return "" if body == EMPTY_MEMORY else body
