"""A deterministic AdaCoM manager: the paper's traces as rules, with no model.

A baseline, not a claim about the learned manager. What it does, each a
behaviour the paper's case study (appendix D) describes:

- **Working note** (the index-1 message): the task's constraints (its clauses
  that say must, only, at least, before, ... or carry a value), then one line
  per fact found: an extractive digest of every tool result it extracted or
  removed, so what leaves the context keeps a line there. Oldest facts go
  first when the note outgrows ``note_tokens``.
- **Extract**: a new tool result over the threshold is rewritten in place (same
  call id) to an extractive digest of ``extract_tokens``, before the agent
  reads it; the original is archived. With the request's ``extract_for_task``
  (``preset="paper"``) its lines that share terms with the task and the working
  note come first, whole, and the digest of the result fills what is left.
- **Stale exchanges**: a tool exchange older than ``stale_rounds`` rounds (agent
  messages after it) whose results nothing later refers to (no identifier,
  value or name of them is among those of a later message or tool call) is deleted,
  the call with its results (its facts stay in the note). One that is still
  referred to is kept as it is.
- **Distill under pressure**: when the request says the context is
  ``excess_tokens`` over target after the rules above, the oldest messages
  outside the last ``keep_rounds`` rounds (whole tool exchanges, never pinned
  ones, the note aside) are merged into one ``[Condensed history]`` digest at
  their place, sized to free that much; an earlier digest is merged again with
  what follows it. The paper's "eager distillation" strategy, extractively.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_ctx._checks import check_int
from langgraph_ctx.compression import entities
from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.core import EditOp, is_edited, is_working_note
from langgraph_ctx.history.structure import tool_units
from langgraph_ctx.strategies.adacom.policy import NOTE_TITLE, ManagerRequest
from langgraph_ctx.strategies.base import OfflineBaseline
from langgraph_ctx.strategies.managed import unquoted

CONSTRAINT_CUES = re.compile(
    r"\b(must|should|need|needs|only|at least|at most|no more than|no later than|before|after|"
    r"within|exactly|never|not|don't|do not|without|require[sd]?|prefer|budget|deadline|"
    r"under|over|between|each|every|all)\b",
    re.IGNORECASE,
)
FACTS = "Facts found:"
CONSTRAINTS = "Task constraints:"
EXTRACTED = "[Extracted tool result]"
DIGEST = "[Condensed history]"


@dataclass(kw_only=True, eq=False)
class OfflinePolicy(OfflineBaseline):
    """Maintains the working note, extracts oversized results, drops stale exchanges."""

    stale_rounds: int = 4
    """An exchange with this many agent messages after it is old."""
    keep_rounds: int = 2
    """The last rounds, never distilled under pressure."""
    note_tokens: int = 400
    """The working note's cap; the oldest facts go first."""
    fact_tokens: int = 40
    """The digest of one fact line."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("OfflinePolicy.stale_rounds", self.stale_rounds, least=1)
        check_int("OfflinePolicy.keep_rounds", self.keep_rounds, least=0)
        check_int("OfflinePolicy.note_tokens", self.note_tokens, least=1)
        check_int("OfflinePolicy.fact_tokens", self.fact_tokens, least=1)

    def propose(self, request: ManagerRequest) -> list[EditOp]:
        messages = request.messages
        ops: list[EditOp] = []
        facts: list[str] = []
        names = _tool_names(messages)
        current = next((m for m in messages if is_working_note(m) or m.id == request.note_id), None)
        focus = None
        if request.extract_for_task:
            parts = [request.task, current]
            focus = "\n".join(p.text for p in parts if p is not None)
        for m in messages:
            if str(m.id) in request.oversized and isinstance(m, ToolMessage):
                digest = self._digest(m, request.extract_tokens, focus)
                head = f"{EXTRACTED} ({request.tokens.get(str(m.id), 0)} tokens; original {m.id})"
                ops.append(EditOp((str(m.id),), "tool", "oversized result", f"{head}\n{digest}"))
                facts.append(self._fact(m, names))
        for unit in _stale(messages, self.stale_rounds, request.protected, self.entities_of):
            results = [m for m in unit if isinstance(m, ToolMessage)]
            if results and not any(str(m.id) in request.oversized for m in results):
                ids = tuple(str(m.id) for m in results)
                ops.append(EditOp(ids, None, f"stale: no later message refers to {ids}", ""))
                facts += [self._fact(m, names) for m in results]
        distill = self._distill(request, ops)
        if distill is not None:
            ops.append(distill)
        text = self._note(request.task, current, facts)
        if current is not None and text != current.text:
            ops.append(EditOp((str(current.id),), None, "working note: constraints, facts", text))
        return ops

    async def apropose(self, request: ManagerRequest) -> list[EditOp]:
        return self.propose(request)

    def _distill(self, request: ManagerRequest, ops: Sequence[EditOp]) -> EditOp | None:
        """One merge of the oldest free messages that frees what is still in excess."""
        tokens = request.tokens
        taken = {x for op in ops for x in op.ids}
        freed = sum(tokens.get(x, 0) for op in ops if op.kind == "delete" for x in op.ids)
        freed += sum(
            tokens.get(op.ids[0], 0) - self.counter.count_text(op.new_content)
            for op in ops
            if op.kind == "rewrite" and op.rationale == "oversized result"
        )
        excess = request.excess_tokens - freed
        if excess <= 0:
            return None
        span = self._span(request, taken)
        size = sum(tokens.get(str(m.id), 0) for m in span)
        if len(span) < 2 or size <= excess // 2:
            return None  # too little to distill: a merge would not make room
        digest_tokens = max(40, min(size - excess, size // 2))
        text = self.summarizer.summarize(span, max_tokens=digest_tokens)
        ids = tuple(str(m.id) for m in span)
        return EditOp(ids, "system", f"distill: {excess} tokens over target", f"{DIGEST}\n{text}")

    def _span(self, request: ManagerRequest, taken: set[str]) -> list[BaseMessage]:
        """The oldest messages that may be distilled: whole exchanges, before the last rounds."""
        messages = request.messages
        agent_at = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
        stop = agent_at[-self.keep_rounds] if len(agent_at) >= self.keep_rounds else 0
        index = {id(m): i for i, m in enumerate(messages)}
        unit_of: dict[int, list[BaseMessage]] = {}
        for unit in tool_units(messages):
            for m in unit:
                unit_of[id(m)] = unit
        chosen: dict[int, BaseMessage] = {}
        need, size = request.excess_tokens * 2, 0
        for m in messages[:stop]:
            group = unit_of.get(id(m), [m])
            ids = {str(x.id) for x in group}
            if id(m) in chosen or any(is_working_note(x) for x in group):
                continue
            if ids & (request.protected | taken) or max(index[id(x)] for x in group) >= stop:
                continue
            chosen.update((id(x), x) for x in group)
            size += sum(request.tokens.get(x, 0) for x in ids)
            if size >= need:
                break
        out = list(chosen.values())
        return sorted(out, key=lambda x: index[id(x)])

    # -- the note --------------------------------------------------------------

    def _note(self, task: BaseMessage | None, current: BaseMessage | None, new: list[str]) -> str:
        constraints = _constraints(task.text if task is not None else "")
        old = _facts_of(current.text) if current is not None else []
        facts = [*old, *(f for f in new if f not in old)]
        stated = [f"- {c}" for c in constraints] or ["- (none stated)"]
        while True:
            text = "\n".join(
                [NOTE_TITLE, CONSTRAINTS, *stated, *([FACTS, *facts] if facts else [])]
            )
            if not facts or self.counter.count_text(text) <= self.note_tokens:
                return text
            facts = facts[1:]

    def _fact(self, message: BaseMessage, names: dict[str, str]) -> str:
        name = names.get(getattr(message, "tool_call_id", ""), "tool")
        body = message.text.partition("\n")[2] if is_edited(message) else message.text
        digest = self.summarizer.summarize(
            [message.model_copy(update={"content": body})], max_tokens=self.fact_tokens
        )
        return f"- {name} ({message.id}): {' '.join(digest.split())}"

    def _digest(self, message: BaseMessage, tokens: int, focus: str | None = None) -> str:
        """An extractive digest of ``message`` in ``tokens``; with a ``focus`` (the task
        and the note), the result's lines most about it first, whole, in order, and
        the digest of the whole in what they leave."""
        tokens = max(tokens, 20)
        kept = self._about(message.text, focus, tokens * 2 // 3) if focus else []
        if not kept:
            return self.summarizer.summarize([message], max_tokens=tokens)
        left = tokens - sum(map(self.counter.count_text, kept))
        rest = self.summarizer.summarize([message], max_tokens=left) if left >= 20 else ""
        return "\n".join([*kept, *([rest] if rest else [])])

    def _about(self, text: str, focus: str, tokens: int) -> list[str]:
        """The lines of ``text`` that share the rarest terms with ``focus``, within
        ``tokens``. A term is worth less the more lines have it: a word every line
        repeats (a table's column names) says nothing of which line the task needs,
        the one name only one line has does."""
        wanted = _terms(focus) | {e.lower() for e in self.entities_of("focus", focus)}
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        shared = [_terms(line) & wanted for line in lines]
        lines_with: dict[str, int] = {}
        for terms in shared:
            for term in terms:
                lines_with[term] = lines_with.get(term, 0) + 1
        score = [sum(1 / lines_with[t] for t in terms) for terms in shared]
        best = max(score, default=0.0)
        chosen: list[int] = []
        used = 0
        for i in sorted(range(len(lines)), key=lambda i: -score[i]):
            if score[i] <= 0 or score[i] < best / 2:
                break  # half as much about the task as the best line: not about it
            cost = self.counter.count_text(lines[i])
            if used + cost > tokens:
                break
            chosen.append(i)
            used += cost
        return [lines[i] for i in sorted(chosen)]


_WORD = re.compile(r"[\w][\w.\-]*[\w]|\w")
_COMMON = frozenset(
    (
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "have",
        "what",
        "which",
        "their",
        "there",
        "about",
        "into",
        "your",
        "will",
        "find",
        "show",
        "give",
        "tell",
        "please",
        "also",
        "each",
        "every",
        "must",
        "should",
        "only",
        "before",
        "after",
        "when",
        "where",
        "then",
        "than",
        "them",
        "they",
        "were",
        "been",
        "being",
        "does",
        "done",
        "task",
        "note",
        "facts",
        "found",
        "working",
        "constraints",
        "none",
        "stated",
        "nothing",
        "recorded",
        "yet",
    )
)


def _terms(text: str) -> set[str]:
    """The words of ``text`` a line must share to be about it: four letters or more,
    or with a digit, lower-cased, common words left out."""
    words = (w.lower() for w in _WORD.findall(text))
    return {w for w in words if (len(w) >= 4 or any(c.isdigit() for c in w)) and w not in _COMMON}


def _constraints(task: str) -> list[str]:
    clauses = [c.strip() for c in re.split(r"(?<=[.;!?])\s+|\n+", task) if c.strip()]
    kept = [c for c in clauses if CONSTRAINT_CUES.search(c) or entities(c)]
    return kept or clauses[:1]


def _facts_of(note: str) -> list[str]:
    # The note as the agent reads it has its lines quoted (strategies/managed.py).
    _, found, tail = unquoted(note).partition(f"\n{FACTS}\n")
    return [line for line in tail.splitlines() if line.startswith("- ")] if found else []


def _tool_names(messages: Sequence[BaseMessage]) -> dict[str, str]:
    return {
        str(c["id"]): c["name"]
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c.get("id")
    }


def _stale(
    messages: Sequence[BaseMessage],
    rounds: int,
    protected: frozenset[str],
    entities_of: Callable[[str, str], set[str]],
) -> list[list[BaseMessage]]:
    """Whole exchanges older than ``rounds`` agent messages that nothing later cites:
    no entity of their results is an entity of a later message or tool call."""
    index = {id(m): i for i, m in enumerate(messages)}
    agent_at = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
    units = sorted(
        ((max(index[id(m)] for m in unit), unit) for unit in tool_units(messages)),
        key=lambda pair: -pair[0],
    )
    # Newest first, with the entities said after the current exchange gathered on
    # the way down: one pass over the history, not one per exchange.
    later: set[str] = set()
    j = len(messages) - 1
    out = []
    for last, unit in units:
        while j > last:
            m = messages[j]
            if not is_note(m):
                later |= entities_of(f"said:{m.id}", _said(m))
            j -= 1
        if any(str(m.id) in protected for m in unit):
            continue
        if sum(1 for i in agent_at if i > last) < rounds:
            continue
        results = [m for m in unit if isinstance(m, ToolMessage)]
        if not any(entities_of(str(m.id), m.text) & later for m in results):
            out.append(unit)
    return out[::-1]


def _said(message: BaseMessage) -> str:
    """What a message says that could cite a tool result: text and tool arguments."""
    if isinstance(message, ToolMessage):
        return ""  # a later result repeating a value is not the agent using it
    calls: list[Any] = message.tool_calls if isinstance(message, AIMessage) else []
    return " ".join([message.text, *(json.dumps(c["args"]) for c in calls)])
