"""ARC's stall signals: deterministic triggers for reflection, and their bookkeeping.

The paper lets the context manager judge when to reflect (section 3.2.2:
stalled progress, unresolved inconsistencies, ineffective repetition). These
are the signals code can see for itself, checked on every incremental update:

- ``repeated_call``: a tool called with the same arguments as one of the last
  :data:`CALL_WINDOW` calls (or twice in the newest interaction), the second
  time (a loop that goes on is ``no_progress``'s);
- ``contradiction``: a newer tool result gives a key another value than the
  one the memory holds (one key, two values). A key is a field of a result
  (JSON paths, or ``name: value`` lines) scoped by the call that returned it,
  so ``status`` of one order never clashes with ``status`` of another;
- ``no_progress``: ``stall_turns`` updates in a row left the checklist as it was;
- ``manager_flag``: the manager's own assessment (``MemoryUpdate.reflect``);
- ``memory_full``: the memory outgrew its cap, so reflection condenses it
  (incremental updates only ever append).

The bookkeeping (:class:`StallState`) rides on the checklist message, so it is
checkpointed with it; it is bounded (a window of calls, a capped set of
facts), so a check costs the same at turn 10 and at turn 10,000.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

CALL_WINDOW = 32
"""How many recent call signatures a repeat is looked for in."""
FACT_LIMIT = 256
"""How many keys the contradiction check remembers (the oldest go first)."""
FACTS_PER_RESULT = 48
TRIGGERS = ("repeated_call", "contradiction", "no_progress", "manager_flag", "memory_full")
"""Every trigger, in the order they are reported."""

_PAIR = re.compile(r"^\s*([A-Za-z][\w .\-/]{0,40}?)\s*[:=]\s*(\S.{0,200}?)\s*$")


@dataclass(frozen=True, slots=True)
class StallState:
    """What the triggers remember between updates (checkpointed, bounded)."""

    turn: int = 0
    """Interactions folded so far."""
    unchanged: int = 0
    """Updates in a row that left the checklist as it was."""
    calls: tuple[str, ...] = ()
    """Signatures of the latest calls, newest last."""
    facts: Mapping[str, str] = field(default_factory=dict)
    """Key -> the newest value seen, newest last."""
    reflections: int = 0

    def reflected(self) -> StallState:
        """After a reflection: progress counting starts again."""
        return replace(self, unchanged=0, reflections=self.reflections + 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "unchanged": self.unchanged,
            "calls": list(self.calls),
            "facts": dict(self.facts),
            "reflections": self.reflections,
        }

    @classmethod
    def from_json(cls, data: Any) -> StallState:
        if not isinstance(data, Mapping):
            return cls()
        return cls(
            turn=int(data.get("turn", 0)),
            unchanged=int(data.get("unchanged", 0)),
            calls=tuple(str(c) for c in data.get("calls", ())),
            facts={str(k): str(v) for k, v in dict(data.get("facts", {})).items()},
            reflections=int(data.get("reflections", 0)),
        )


@dataclass(frozen=True, slots=True)
class Triggers:
    fired: tuple[str, ...]
    stall: StallState


@dataclass(frozen=True, slots=True)
class FoldSettings:
    """The trigger thresholds, fixed when the middleware is built."""

    count: Callable[[str], int]
    """Tokens of a text."""
    stall_turns: int
    """Updates in a row with no checklist change that count as stalled progress."""
    memory_full: int
    """Memory tokens past which reflection condenses it."""


def observe(
    stall: StallState,
    interaction: Sequence[BaseMessage],
    *,
    turn: int,
    changed: bool,
    flagged: bool,
    memory_tokens: int,
    settings: FoldSettings,
) -> Triggers:
    """The triggers the newest interaction fires, and the bookkeeping after it."""
    calls, facts, fired = list(stall.calls), dict(stall.facts), set()
    for signature, result in calls_in(interaction):
        if calls.count(signature) == 1:  # the second time: a third adds nothing new
            fired.add("repeated_call")
        calls.append(signature)
        for key, value in facts_of(signature, result).items():
            if facts.pop(key, value) != value:
                fired.add("contradiction")
            facts[key] = value  # re-inserted: newest last
    unchanged = 0 if changed else stall.unchanged + 1
    if unchanged >= settings.stall_turns:
        fired.add("no_progress")
    if flagged:
        fired.add("manager_flag")
    if memory_tokens > settings.memory_full:
        fired.add("memory_full")
    kept = dict(list(facts.items())[-FACT_LIMIT:])
    after = replace(
        stall, turn=turn, unchanged=unchanged, calls=tuple(calls[-CALL_WINDOW:]), facts=kept
    )
    return Triggers(tuple(t for t in TRIGGERS if t in fired), after)


def signature(name: str, args: Any) -> str:
    """A call as ``name({...})`` with its arguments in a canonical order."""
    canonical = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return f"{name}({canonical})"


def calls_in(interaction: Sequence[BaseMessage]) -> Iterator[tuple[str, str]]:
    """Every tool call of ``interaction`` as (signature, the text of its result)."""
    results = {m.tool_call_id: str(m.text) for m in interaction if isinstance(m, ToolMessage)}
    for m in interaction:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                yield signature(call["name"], call["args"]), results.get(call.get("id") or "", "")


def facts_of(subject: str, text: str) -> dict[str, str]:
    """The key-value facts of a tool result, keys prefixed with ``subject``."""
    found: dict[str, str] = {}
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, (dict, list)):
        _flatten(data, "", found, depth=0)
    else:
        for line in re.split(r"[\n;]+", text):
            pair = _PAIR.match(line)
            if pair is not None:
                found[pair.group(1).strip().lower()] = pair.group(2)
            if len(found) >= FACTS_PER_RESULT:
                break
    return {f"{subject}.{k}": v for k, v in list(found.items())[:FACTS_PER_RESULT]}


def _flatten(data: Any, path: str, out: dict[str, str], *, depth: int) -> None:
    if len(out) >= FACTS_PER_RESULT:
        return
    if depth > 4 or not isinstance(data, (dict, list)):
        out[path or "value"] = data if isinstance(data, str) else json.dumps(data, default=str)
        return
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        if isinstance(data, list) and isinstance(
            value, dict
        ):  # a record is known by its id or name, not its position
            key = value.get("id", value.get("name", key))
        _flatten(value, f"{path}.{key}" if path else str(key), out, depth=depth + 1)
