"""Decision records: what a context manager, policy or compression decided, from the
ledger, with what it saw and what followed (``langgraph-ctx export``; the schema is
documented in docs/decisions.md and versioned by :data:`SCHEMA_VERSION`).

One record per decision event of a thread: an applied edit (``context_edit``: a
compression, an AdaCoM, ARC or BACM edit), compacted tool results, a BACM fold
decision, an AdaCoM manager call that changed nothing or failed, a refused edit,
an ARC reflection, a PACE condensed view, a ceiling fit. Each says:

- ``saw``: the prompt as pre-flight measured it on that call (the latest
  ``utilization`` event before it: tokens, window, utilization) and the message
  ids the decision named;
- ``did``: its action, the ids it removed and wrote, raw tokens before and after;
- ``outcome``: tokens saved, and which removed messages the agent later asked
  back: by the ``glimpse`` tool (a call naming the id) or through recall (a
  ``recall`` event listing it); ``later_calls``, the model calls after it.

Every record has the same fields with the same types (``null`` where a kind has
no value), and the event's own data as one JSON string (``event_json``): that is
what ``datasets.load_dataset("json", data_files=...)`` needs to read every line
into one table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict

SCHEMA_VERSION = 1
"""Bumped when a field changes meaning or type; a new optional field keeps it."""

DECISION_KINDS = (
    "context_edit",
    "tool_results_compacted",
    "fold",
    "fold_guard",
    "manager_unchanged",
    "manager_failed",
    "edit_rejected",
    "arc_reflection",
    "pace_context",
    "ceiling_enforced",
)
"""The ledger kinds that are decisions (a ``compression`` event's edit is its
``context_edit``, recorded with ``source="compression"``)."""


class Saw(TypedDict):
    tokens: int | None
    """The prompt's tokens as pre-flight measured them on that call (calibrated)."""
    window: int | None
    utilization: float | None
    ids: list[str]
    """Message ids (or BACM step ids) the decision named."""


class Did(TypedDict):
    action: str
    """``edit``, ``compact``, ``fold:<kind>``, ``unchanged``, ``failed``, ``rejected``,
    ``reflect``, ``condense``, ``fit``."""
    removed_ids: list[str]
    """Messages it took out of the history (archived)."""
    written_ids: list[str]
    """Messages it wrote."""
    tokens_before: int | None
    """Raw tokens of what it removed (or condensed)."""
    tokens_after: int | None
    """Raw tokens of what it wrote in their place."""


class Outcome(TypedDict):
    tokens_saved: int | None
    glimpsed_ids: list[str]
    """Removed messages the agent later asked back by ``glimpse``."""
    recalled_ids: list[str]
    """Removed messages recall later put back in a prompt."""
    later_calls: int
    """Model calls (``utilization`` events) after it in the thread."""


class DecisionRecord(TypedDict):
    """One line of the export."""

    schema_version: int
    thread_id: str
    namespace: str
    seq: int
    ts: float | None
    node: str | None
    kind: str
    source: str | None
    """Who decided: the middleware of an edit (``compression``, ``adacom``, ...), the
    ``by`` of a fold (``agent``, ``policy``), else the strategy of the kind."""
    saw: Saw
    did: Did
    outcome: Outcome
    event_json: str
    """The ledger event's ``data``, as JSON."""


_SOURCE = {
    "manager_unchanged": "adacom",
    "manager_failed": "adacom",
    "arc_reflection": "arc",
    "pace_context": "pace",
    "fold_guard": "bacm",
    "tool_results_compacted": "compression",
}


def glimpse_references(messages: Iterable[Any]) -> set[str]:
    """The ``reference`` of every ``glimpse`` tool call in ``messages``."""
    found: set[str] = set()
    for m in messages:
        for call in getattr(m, "tool_calls", None) or ():
            if call.get("name") == "glimpse":
                ref = (call.get("args") or {}).get("reference")
                if isinstance(ref, str):
                    found.add(ref)
    return found


def decisions(
    events: Sequence[Mapping[str, Any]],
    *,
    thread_id: str,
    namespace: str = "",
    glimpsed: Iterable[str] = (),
) -> list[DecisionRecord]:
    """The decision records of one thread's ``events`` (ledger entries or event-table
    rows, any order). ``glimpsed``: the references of the thread's ``glimpse`` calls
    (:func:`glimpse_references` of its messages, archived ones included)."""
    ordered = sorted(events, key=lambda e: int(e["seq"]))
    asked = set(glimpsed)
    out: list[DecisionRecord] = []
    measure: Mapping[str, Any] = {}
    for i, event in enumerate(ordered):
        kind = str(event["kind"])
        data: Mapping[str, Any] = event.get("data") or {}
        if kind == "utilization":
            measure = data
            continue
        if kind not in DECISION_KINDS:
            continue
        did = _did(kind, data)
        later = ordered[i + 1 :]
        removed = set(did["removed_ids"])
        recalled = {
            str(x)
            for e in later
            if e["kind"] == "recall"
            for x in (e.get("data") or {}).get("ids") or ()
        }
        before, after = did["tokens_before"], did["tokens_after"]
        out.append(
            DecisionRecord(
                schema_version=SCHEMA_VERSION,
                thread_id=thread_id,
                namespace=namespace,
                seq=int(event["seq"]),
                ts=_float(event.get("ts")),
                node=event.get("node"),
                kind=kind,
                source=str(data.get("source") or data.get("by") or _SOURCE.get(kind) or "") or None,
                saw=Saw(
                    tokens=_int(measure.get("total")),
                    window=_int(measure.get("window")),
                    utilization=_float(measure.get("utilization")),
                    ids=_named(kind, data),
                ),
                did=did,
                outcome=Outcome(
                    tokens_saved=before - after
                    if before is not None and after is not None
                    else None,
                    glimpsed_ids=sorted(removed & asked),
                    recalled_ids=sorted(removed & recalled),
                    later_calls=sum(1 for e in later if e["kind"] == "utilization"),
                ),
                event_json=json.dumps(data, sort_keys=True, default=str),
            )
        )
    return out


def _did(kind: str, data: Mapping[str, Any]) -> Did:
    removed = [str(x) for x in data.get("removed") or ()]
    written = [
        str(op["new_id"]) for op in data.get("operations") or () if op.get("new_id") is not None
    ]
    before, after = _int(data.get("tokens_before")), _int(data.get("tokens_after"))
    if kind == "tool_results_compacted":
        # A digest keeps its result's id: removed and written are the same ids.
        removed = written = [str(x) for x in data.get("ids") or ()]
    action = {
        "context_edit": "edit",
        "tool_results_compacted": "compact",
        "fold": f"fold:{data.get('kind', '')}",
        "fold_guard": "guard",
        "manager_unchanged": "unchanged",
        "manager_failed": "failed",
        "edit_rejected": "rejected",
        "arc_reflection": "reflect",
        "pace_context": "condense",
        "ceiling_enforced": "fit",
    }[kind]
    grew = data.get("memory")
    if isinstance(grew, Mapping) and grew.get("into"):
        written.append(str(grew["into"]))  # ARC's fold: the memory grown by its entry
    if kind == "arc_reflection":
        removed = [str(x) for x in data.get("replaced") or ()]
        written = [str(x) for x in data.get("by") or () if x is not None]
    if kind == "ceiling_enforced":
        removed = [str(x) for x in data.get("omitted") or ()]
    return Did(
        action=action,
        removed_ids=removed,
        written_ids=written,
        tokens_before=before,
        tokens_after=after,
    )


def _named(kind: str, data: Mapping[str, Any]) -> list[str]:
    if kind == "fold":
        return [str(x) for x in data.get("commits") or ()]
    if kind == "tool_results_compacted" or kind == "ceiling_enforced":
        return [str(x) for x in data.get("ids") or ()]
    named: list[str] = []
    for op in data.get("operations") or ():
        named += [str(x) for x in [*(op.get("ids") or ()), *(op.get("widened") or ())]]
    return list(dict.fromkeys(named))


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
