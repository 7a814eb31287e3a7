"""A deterministic ARC context manager: the extractive summarizer, no model.

A baseline, not a claim about the learned manager (section 3.4 fine-tunes one):

- **Checklist** from the task: its sentences that state a goal (find, check,
  which, a question...) or a constraint (must, only, before, a value...), at
  most ``max_items``; an open item is marked done, with the evidence line as
  its note, once the evidence (the newest interaction; in reflection, the whole
  memory) names every identifier, number and name of it and ``done_share`` of
  its other terms (a line reporting an error or a miss never closes one).
- **Incremental update**: one memory line per tool call (``name({args}) ->``
  an extractive digest of its result, ``entry_tokens`` at most), per reply the
  agent wrote, per user message.
- **Reflection**: lines about the same call merge into one with the newest
  result (so a value a newer result replaced is no longer in memory; the
  earlier memory is archived) and how often it was made; the oldest lines are
  condensed into one extractive digest when the memory is over ``condense_to``
  of its cap (one ``(tA-tB) condensed:`` line: a later reflection digests the
  earlier digest's text with the lines it adds, never the digest line itself,
  or digests nested in digests, each carrying the turn marks of the last as
  if they were facts); checklist items are re-checked against the whole memory, and a
  call repeated with no new result is noted on the item it concerns
  (``stalled: ...``). State only, never an instruction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx._checks import check_int, check_number
from langgraph_ctx.compression import entities
from langgraph_ctx.retrieval.text import content_words, sentences
from langgraph_ctx.strategies.adacom.offline import CONSTRAINT_CUES
from langgraph_ctx.strategies.arc.manager import (
    ChecklistItem,
    MemoryUpdate,
    Reflection,
    UpdateRequest,
)
from langgraph_ctx.strategies.arc.signals import signature
from langgraph_ctx.strategies.base import OfflineBaseline

GOAL_CUES = re.compile(
    r"\b(find|get|look up|check|verify|confirm|determine|identify|list|compute|calculate|"
    r"compare|book|cancel|change|update|send|report|answer|tell|give|show|search|locate|"
    r"which|what|who|when|where|how|why)\b|\?",
    re.IGNORECASE,
)
_LINE = re.compile(r"^\(t(\d+)(?:-t(\d+))?\) (.*)$")
_CONDENSED = "condensed: "
_LISTED = "Also mentioned: "  # the extractive digest's line of entities it lists
_CALL = re.compile(r"^([\w.-]+\(.*?\)) -> (.*)$")
_FAILURE = re.compile(
    r"\b(error|not found|failed|failure|unavailable|invalid|denied|timed? ?out|no results?)\b",
    re.IGNORECASE,
)
_ROLE = re.compile(r"^(?:User|Assistant|System|Tool(?: [\w.-]+)?): ")
_MADE = re.compile(r" \[made \d+ times: (t\d+(?:, t\d+)*)\]$")


@dataclass(slots=True)
class _Group:
    """Memory lines about one call (or one identical statement)."""

    head: str
    result: str
    turns: list[int] = field(default_factory=list)
    condensed: bool = False
    """An earlier reflection's digest: ``head`` is its text, ``turns`` its range."""


@dataclass(kw_only=True, eq=False)
class OfflineArcManager(OfflineBaseline):
    """Keeps the checklist and the interaction memory with the extractive summarizer."""

    entry_tokens: int = 60
    """The digest of one tool result or message in the memory."""
    max_items: int = 8
    """The checklist's size from the task."""
    done_share: float = 0.6
    """Share of an item's terms the evidence must mention to close it."""
    condense_to: float = 0.6
    """Reflection leaves the memory under this share of its cap."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("OfflineArcManager.entry_tokens", self.entry_tokens, least=1)
        check_int("OfflineArcManager.max_items", self.max_items, least=1)
        check_number("OfflineArcManager.done_share", self.done_share, above=0.0)
        check_number("OfflineArcManager.condense_to", self.condense_to, above=0.0)

    def checklist_for(self, task: str) -> list[ChecklistItem]:
        found = [" ".join(s.split()) for s in sentences(task) if s.strip()]
        kept = [s for s in found if GOAL_CUES.search(s) or CONSTRAINT_CUES.search(s)]
        kept = kept or [s for s in found if entities(s)] or found[:1]
        return [ChecklistItem(id=f"c{i + 1}", text=s) for i, s in enumerate(kept[: self.max_items])]

    def update(self, request: UpdateRequest) -> MemoryUpdate:
        lines = self._lines(request.interaction)
        checklist = self._progress(request.checklist, lines, request.turn)
        return MemoryUpdate(entry="\n".join(lines), checklist=checklist)

    async def aupdate(self, request: UpdateRequest) -> MemoryUpdate:
        return self.update(request)

    def reflect(self, request: UpdateRequest) -> Reflection:
        groups = _groups(request.memory)
        memory = self._condensed(groups, request.memory_tokens)
        lines = [f"{g.head} -> {g.result}" if g.result else g.head for g in groups]
        checklist = self._progress(request.checklist, lines, request.turn)
        checklist = self._stalled(checklist, [g for g in groups if len(g.turns) > 1])
        why = ", ".join(request.triggers) or "requested"
        return Reflection(memory=memory, checklist=checklist, rationale=f"reorganized ({why})")

    async def areflect(self, request: UpdateRequest) -> Reflection:
        return self.reflect(request)

    # -- the update ------------------------------------------------------------

    def _lines(self, interaction: Sequence[BaseMessage]) -> list[str]:
        results = {m.tool_call_id: m for m in interaction if isinstance(m, ToolMessage)}
        called = set()
        out = []
        for m in interaction:
            if isinstance(m, AIMessage):
                if m.text.strip():
                    out.append(f"said: {self._digest(m)}")
                for call in m.tool_calls:
                    called.add(call.get("id") or "")
                    result = results.get(call.get("id") or "")
                    digest = self._digest(result) if result is not None else "(no result)"
                    out.append(f"{signature(call['name'], call['args'])} -> {digest}")
            elif isinstance(m, HumanMessage):
                out.append(f"user: {self._digest(m)}")
        out += [f"result: {self._digest(m)}" for k, m in results.items() if k not in called]
        return out

    def _digest(self, message: BaseMessage) -> str:
        if not message.text.strip():
            return "(empty)"
        text = self.summarizer.summarize([message], max_tokens=self.entry_tokens)
        return _ROLE.sub("", " ".join(text.split()), count=1)

    def _progress(
        self, checklist: Sequence[ChecklistItem], evidence: Sequence[str], turn: int
    ) -> list[ChecklistItem]:
        """Open items the evidence lines cover, marked done with the best line as note."""
        # A failure mentions what it failed to find: never evidence that it was found.
        seen = [set() if _FAILURE.search(line) else _terms(line) for line in evidence]
        everything = set().union(*seen) if seen else set()
        out = []
        for item in checklist:
            terms = _terms(item.text)
            named = {e.lower() for e in entities(item.text)}
            covered = len(terms & everything) / len(terms) if terms else 0.0
            if item.status != "open" or covered < self.done_share or not named <= everything:
                out.append(item)
                continue
            best = max(range(len(seen)), key=lambda i: len(terms & seen[i]))
            note = f"t{turn}: {_clip(evidence[best], 120)}"
            out.append(item.model_copy(update={"status": "done", "note": note}))
        return out

    # -- reflection ------------------------------------------------------------

    def _condensed(self, groups: list[_Group], cap: int) -> str:
        lines = [_render(g) for g in groups]
        target = max(40, int(cap * self.condense_to))
        if self.counter.count_text("\n".join(lines)) <= target:
            return "\n".join(lines)
        kept: list[str] = []  # the newest lines, in half the target
        for line in reversed(lines):
            if self.counter.count_text("\n".join([line, *kept])) > target // 2:
                break
            kept.insert(0, line)
        older = groups[: len(groups) - len(kept)]
        room = max(20, target - self.counter.count_text("\n".join(kept)))
        # What the lines say, without their turn marks (the digest would keep them
        # as names) and with an earlier digest as its text, not as a line.
        text = "\n".join(_said_by(g) for g in older)
        digest = self.summarizer.summarize([HumanMessage(text)], max_tokens=room)
        digest = _ROLE.sub("", " ".join(digest.split()), count=1)
        first = min(t for g in older for t in g.turns)
        last = max(t for g in older for t in g.turns)
        return "\n".join([_render(_Group(digest, "", [first, last], condensed=True)), *kept])

    def _stalled(
        self, checklist: list[ChecklistItem], repeated: Sequence[_Group]
    ) -> list[ChecklistItem]:
        """Note each repeated call on the open items it concerns (the first open one if none)."""
        notes: dict[str, list[str]] = {}
        open_items = [i for i in checklist if i.status == "open"]
        for g in repeated:
            concerned = [i for i in open_items if _terms(i.text) & _terms(g.head)]
            for item in concerned or open_items[:1]:
                said = f"stalled: {g.head} made {len(g.turns)} times (t{g.turns[-1]} last)"
                notes.setdefault(item.id, []).append(f"{said}: {_clip(g.result, 80)}")
        return [
            i.model_copy(update={"note": "; ".join(notes[i.id])}) if i.id in notes else i
            for i in checklist
        ]


def _groups(memory: str) -> list[_Group]:
    """Memory lines grouped by call (newest result kept), ordered by their newest turn."""
    groups: dict[str, _Group] = {}
    for raw in memory.splitlines():
        line = _LINE.match(raw)
        turn, body = (int(line.group(1)), line.group(3)) if line else (0, raw.strip())
        if not body:
            continue
        if body.startswith(_CONDENSED):  # an earlier digest: its text and its range
            last = int(line.group(2) or turn) if line else turn
            digest = body[len(_CONDENSED) :]
            groups[f"{_CONDENSED}{len(groups)}"] = _Group(digest, "", [turn, last], condensed=True)
            continue
        call = _CALL.match(body)
        head, result = (call.group(1), call.group(2)) if call else (body, "")
        made = _MADE.search(result)  # a line an earlier reflection merged
        turns = [int(t[1:]) for t in made.group(1).split(", ")] if made else [turn]
        result = result[: made.start()] if made else result
        group = groups.pop(head, None) or _Group(head, result)
        group.result = result or group.result
        group.turns += turns
        groups[head] = group  # re-inserted: ordered by the newest mention
    return list(groups.values())


def _said_by(g: _Group) -> str:
    if g.condensed:  # its list's label would be digested as text: the list alone
        return " ".join(g.head.replace(_LISTED, " ").split())
    return f"{g.head} -> {g.result}" if g.result else g.head


def _render(g: _Group) -> str:
    if g.condensed:
        return f"(t{min(g.turns)}-t{max(g.turns)}) {_CONDENSED}{g.head}"
    body = f"{g.head} -> {g.result}" if g.result else g.head
    if len(g.turns) > 1:
        body += f" [made {len(g.turns)} times: " + ", ".join(f"t{t}" for t in g.turns) + "]"
    return f"(t{g.turns[-1]}) {body}"


def _terms(text: str) -> set[str]:
    return {w.lower() for w in content_words(text)} | {e.lower() for e in entities(text)}


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 3] + "..."
