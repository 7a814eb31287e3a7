"""The ledger's events, typed: one ``TypedDict`` per kind, for ``LedgerEntry["data"]``.

Every :class:`~langgraph_ctx.state.LedgerEntry` has a ``kind`` and a ``data``
dict; :data:`EVENT_TYPES` maps each kind to the type of its ``data``, and every
recorder builds ``data`` against it (``CallContext.record`` is overloaded by
kind, so mypy checks the fields). Read an entry through its type::

    from langgraph_ctx.ledger import Compression, event_data

    for entry in state["context_ledger"]:
        if (c := event_data(entry, Compression)) is not None:
            print(c["tokens_before"], "->", c["tokens_after"])

The events of the strategies (PACE, ARC, AdaCoM, BACM), the think node and
sub-agents are imported from :mod:`langgraph_ctx.ledger.strategies`
(``from langgraph_ctx.ledger.strategies import Fold``); :data:`EVENT_TYPES` maps
their kinds too.

The data stays a plain dict at run time (checkpoints, the custom stream and the
event tables store it as JSON); these types only describe it. Token counts are
calibrated (the provider's scale) unless a field says raw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from langgraph_ctx.ledger.core import (
    ArchiveError,
    ArchiveIdCollision,
    BudgetUnreachable,
    CeilingEnforced,
    Compression,
    CompressionCandidates,
    ContextEdit,
    EditFailed,
    EditRejected,
    Eviction,
    Observe,
    ObserveError,
    ObserveSkipped,
    ObserveTimeout,
    Recall,
    RecallError,
    RecallOverLimit,
    RecallScope,
    RecallSkipped,
    RecallTimeout,
    SummarizerFallback,
    ToolPairsRepaired,
    ToolResultsCompacted,
    Utilization,
)
from langgraph_ctx.ledger.strategies import (
    ArcReflection,
    ArcUpdateFailed,
    ArcUpdateLate,
    Delegation,
    Fold,
    FoldFailed,
    FoldGuard,
    ManagerFailed,
    ManagerUnchanged,
    PaceContext,
    PaceIndexFailed,
    PaceScorerFailed,
    Thought,
)

__all__ = [
    "EVENT_TYPES",
    "ArchiveError",
    "ArchiveIdCollision",
    "BudgetUnreachable",
    "CeilingEnforced",
    "Compression",
    "CompressionCandidates",
    "ContextEdit",
    "EditFailed",
    "EditRejected",
    "Eviction",
    "Observe",
    "ObserveError",
    "ObserveSkipped",
    "ObserveTimeout",
    "Recall",
    "RecallError",
    "RecallOverLimit",
    "RecallScope",
    "RecallSkipped",
    "RecallTimeout",
    "SummarizerFallback",
    "ToolPairsRepaired",
    "ToolResultsCompacted",
    "Utilization",
    "event_data",
]


EVENT_TYPES: Mapping[str, type[Any]] = {
    "utilization": Utilization,
    "ceiling_enforced": CeilingEnforced,
    "tool_pairs_repaired": ToolPairsRepaired,
    "eviction": Eviction,
    "compression_candidates": CompressionCandidates,
    "tool_results_compacted": ToolResultsCompacted,
    "summarizer_fallback": SummarizerFallback,
    "compression": Compression,
    "budget_unreachable": BudgetUnreachable,
    "recall_skipped": RecallSkipped,
    "recall_scope": RecallScope,
    "recall": Recall,
    "recall_timeout": RecallTimeout,
    "recall_error": RecallError,
    "observe_timeout": ObserveTimeout,
    "observe_error": ObserveError,
    "recall_over_limit": RecallOverLimit,
    "observe": Observe,
    "observe_skipped": ObserveSkipped,
    "pace_scorer_failed": PaceScorerFailed,
    "pace_index_failed": PaceIndexFailed,
    "pace_context": PaceContext,
    "arc_update_late": ArcUpdateLate,
    "arc_update_failed": ArcUpdateFailed,
    "arc_reflection": ArcReflection,
    "manager_failed": ManagerFailed,
    "manager_unchanged": ManagerUnchanged,
    "fold": Fold,
    "fold_failed": FoldFailed,
    "fold_guard": FoldGuard,
    "thought": Thought,
    "archive_error": ArchiveError,
    "delegation": Delegation,
    "edit_rejected": EditRejected,
    "edit_failed": EditFailed,
    "archive_id_collision": ArchiveIdCollision,
    "context_edit": ContextEdit,
}
"""Every ledger kind and the type of its ``data``."""

_KIND_OF = {t: k for k, t in EVENT_TYPES.items()}

D = TypeVar("D")


def event_data(entry: Mapping[str, Any], as_type: type[D]) -> D | None:
    """``entry["data"]`` as ``as_type`` if ``entry`` is of that type's kind, else ``None``.

    ``entry``: a ledger entry (from the state, the custom stream or an event
    table). ``as_type``: one of the types in :data:`EVENT_TYPES`; anything else
    is a :class:`TypeError`, so a typo cannot pass as "no such event".
    """
    kind = _KIND_OF.get(as_type)
    if kind is None:
        raise TypeError(f"{as_type!r} is not a ledger event type (see EVENT_TYPES)")
    return cast(D, entry.get("data") or {}) if entry.get("kind") == kind else None
