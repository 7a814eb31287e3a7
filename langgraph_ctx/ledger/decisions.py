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

from langgraph_ctx.ledger import event_data
from langgraph_ctx.ledger.core import (
    CeilingEnforced,
    ContextEdit,
    EditRejected,
    Recall,
    ToolResultsCompacted,
    Utilization,
)
from langgraph_ctx.ledger.parts import EditNote
from langgraph_ctx.ledger.strategies import ArcReflection, Fold, PaceContext

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
    # Each kind's data read through its ledger type (``.get``: an event table written
    # by an earlier version may lack a field).
    measure: Utilization | Mapping[str, Any] = {}
    for i, event in enumerate(ordered):
        kind = str(event["kind"])
        data: Mapping[str, Any] = event.get("data") or {}
        if (use := event_data(event, Utilization)) is not None:
            measure = use
            continue
        if kind not in DECISION_KINDS:
            continue
        did = _did(event)
        later = ordered[i + 1 :]
        removed = set(did["removed_ids"])
        recalled = {
            str(x)
            for e in later
            if (recall := event_data(e, Recall)) is not None
            for x in recall.get("ids") or ()
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
                source=_source(event),
                saw=Saw(
                    tokens=_int(measure.get("total")),
                    window=_int(measure.get("window")),
                    utilization=_float(measure.get("utilization")),
                    ids=_named(event),
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


def _source(event: Mapping[str, Any]) -> str | None:
    """Who decided: an edit's middleware, a fold's or a fit's ``by``, else the
    kind's strategy (an ARC reflection's ``by`` is the ids it wrote, not who)."""
    by: Any = None
    if (edit := event_data(event, ContextEdit) or event_data(event, EditRejected)) is not None:
        by = edit.get("source")
    elif (fold := event_data(event, Fold)) is not None:
        by = fold.get("by")
    elif (fitted := event_data(event, CeilingEnforced)) is not None:
        by = fitted.get("by")
    return str(by or _SOURCE.get(str(event["kind"])) or "") or None


def _did(event: Mapping[str, Any]) -> Did:
    removed: list[str] = []
    written: list[str] = []
    tokens: tuple[Any, Any] = (None, None)
    note: EditNote | None = None
    if (edit := event_data(event, ContextEdit)) is not None:
        removed = [str(x) for x in edit.get("removed") or ()]
        written = [
            str(op["new_id"]) for op in edit.get("operations") or () if op.get("new_id") is not None
        ]
        tokens, note = (edit.get("tokens_before"), edit.get("tokens_after")), edit
    elif (rejected := event_data(event, EditRejected)) is not None:
        note = rejected
    elif (compacted := event_data(event, ToolResultsCompacted)) is not None:
        # A digest keeps its result's id: removed and written are the same ids.
        removed = [str(x) for x in compacted.get("ids") or ()]
        written = list(removed)
        tokens = (compacted.get("tokens_before"), compacted.get("tokens_after"))
    elif (reflection := event_data(event, ArcReflection)) is not None:
        removed = [str(x) for x in reflection.get("replaced") or ()]
        written = [str(x) for x in reflection.get("by") or () if x is not None]
    elif (fitted := event_data(event, CeilingEnforced)) is not None:
        removed = [str(x) for x in fitted.get("omitted") or ()]
        tokens = (fitted.get("tokens_before"), fitted.get("tokens_after"))
    elif (condensed := event_data(event, PaceContext)) is not None:
        tokens = (condensed.get("tokens_before"), condensed.get("tokens_after"))
    grew = note.get("memory") if note is not None else None
    if isinstance(grew, Mapping) and grew.get("into"):
        written.append(str(grew["into"]))  # ARC's fold: the memory grown by its entry
    fold = event_data(event, Fold)
    kind = str(event["kind"])
    action = {
        "context_edit": "edit",
        "tool_results_compacted": "compact",
        "fold": f"fold:{fold.get('kind', '') if fold is not None else ''}",
        "fold_guard": "guard",
        "manager_unchanged": "unchanged",
        "manager_failed": "failed",
        "edit_rejected": "rejected",
        "arc_reflection": "reflect",
        "pace_context": "condense",
        "ceiling_enforced": "fit",
    }[kind]
    return Did(
        action=action,
        removed_ids=removed,
        written_ids=written,
        tokens_before=_int(tokens[0]),
        tokens_after=_int(tokens[1]),
    )


def _named(event: Mapping[str, Any]) -> list[str]:
    if (fold := event_data(event, Fold)) is not None:
        return [str(x) for x in fold.get("commits") or ()]
    compacted = event_data(event, ToolResultsCompacted) or event_data(event, CeilingEnforced)
    if compacted is not None:
        return [str(x) for x in compacted.get("ids") or ()]
    named: list[str] = []
    edit = event_data(event, ContextEdit)
    for op in (edit.get("operations") or ()) if edit is not None else ():
        named += [str(x) for x in [*(op.get("ids") or ()), *(op.get("widened") or ())]]
    return list(dict.fromkeys(named))


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
