"""``CallContext.record``: the ledger's events, typed by kind.

Each kind the package records has an overload taking its type from
:mod:`langgraph_ctx.ledger` (a ``TypedDict``), so mypy checks a recorder's
fields and that the type is its kind's. Recorders pass typed values (a type's
constructor, or an annotated variable), not bare dict literals: a literal whose
fields are wrong would match the last overload instead, the one a user's own
middleware records its own kinds with (``dict[str, Any]``, which a
``TypedDict`` never matches). ``tests/test_ledger_types.py`` checks both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, overload

from langgraph_ctx import ledger as ev
from langgraph_ctx.errors import ContextRunError
from langgraph_ctx.ledger import strategies as st
from langgraph_ctx.ledger.core import CeilingRecorded, UtilizationMeasured
from langgraph_ctx.state import LEDGER, LedgerEntry, declaration, ledger_entry


class Recording:
    """The ledger half of :class:`~langgraph_ctx.pipeline.CallContext`."""

    node: str
    state: Mapping[str, Any]
    channels: frozenset[str]
    events: list[LedgerEntry]

    @overload
    def record(self, kind: Literal["utilization"], data: UtilizationMeasured) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["ceiling_enforced"], data: CeilingRecorded) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["tool_pairs_repaired"], data: ev.ToolPairsRepaired
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["eviction"], data: ev.Eviction) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["compression_candidates"], data: ev.CompressionCandidates
    ) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["tool_results_compacted"], data: ev.ToolResultsCompacted
    ) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["summarizer_fallback"], data: ev.SummarizerFallback
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["compression"], data: ev.Compression) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["budget_unreachable"], data: ev.BudgetUnreachable
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["recall_skipped"], data: ev.RecallSkipped) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["recall_scope"], data: ev.RecallScope) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["recall"], data: ev.Recall) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["recall_timeout"], data: ev.RecallTimeout) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["recall_error"], data: ev.RecallError) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["observe_timeout"], data: ev.ObserveTimeout) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["observe_error"], data: ev.ObserveError) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["recall_over_limit"], data: ev.RecallOverLimit
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["observe"], data: ev.Observe) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["observe_skipped"], data: ev.ObserveSkipped) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["pace_scorer_failed"], data: st.PaceScorerFailed
    ) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["pace_index_failed"], data: st.PaceIndexFailed
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["pace_context"], data: st.PaceContext) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["arc_update_late"], data: st.ArcUpdateLate) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["arc_update_failed"], data: st.ArcUpdateFailed
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["arc_reflection"], data: st.ArcReflection) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["manager_failed"], data: st.ManagerFailed) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["manager_unchanged"], data: st.ManagerUnchanged
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["fold"], data: st.FoldRecorded) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["fold_failed"], data: st.FoldFailed) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["fold_guard"], data: st.FoldGuard) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["thought"], data: st.Thought) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["archive_error"], data: ev.ArchiveError) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["delegation"], data: st.Delegation) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["edit_rejected"], data: ev.EditRejected) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["edit_failed"], data: ev.EditFailed) -> LedgerEntry: ...
    @overload
    def record(
        self, kind: Literal["archive_id_collision"], data: ev.ArchiveIdCollision
    ) -> LedgerEntry: ...
    @overload
    def record(self, kind: Literal["context_edit"], data: ev.ContextEdit) -> LedgerEntry: ...
    @overload
    def record(self, kind: str, data: dict[str, Any]) -> LedgerEntry: ...
    def record(self, kind: str, data: Mapping[str, Any]) -> LedgerEntry:
        """Append an event to this call's ledger entries.

        They reach the custom stream, the event sink and the checkpoint together,
        once the call succeeded (:meth:`finish`), so an entry may still be
        completed until then and every consumer sees its final form. Raises
        :class:`~langgraph_ctx.errors.ContextRunError` if the graph's state has
        no ``context_ledger``. ``data``: the kind's type in
        :data:`langgraph_ctx.ledger.EVENT_TYPES`, or a dict for a kind of your own.
        """
        if LEDGER not in self.channels:
            self._require([LEDGER], f"a {kind!r} event was recorded")
        previous = self.events or self.state.get(LEDGER) or None
        entry = ledger_entry(kind, self.node, data, after=previous)
        self.events.append(entry)
        return entry

    def _require(self, missing: list[str], what: str) -> None:
        if missing:
            raise ContextRunError(
                f"{what} on node {self.node!r}, but the graph's state lacks {missing}, so "
                "LangGraph would drop it silently; build the graph on ContextState, or add "
                "to its state: " + "; ".join(declaration(k) for k in missing)
            )
