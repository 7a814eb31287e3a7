"""The edit core every context strategy shares: "replace these message ids with this".

- ``core``: pure planning. Validate a list of ``{ids, role, rationale,
  new_content}`` operations against a history (delete, rewrite, merge), keep
  tool exchanges whole by widening, refuse pinned messages and deleting the
  working note, and build the new history: :func:`plan_edits`. Its types are in
  ``ops`` (:class:`EditOp`, :class:`EditPlan`, :class:`EditRejected`), the marks it
  reads and writes in ``marks`` (the working note, edited, protected ids).
- ``apply``: the same inside a middleware hook, with the guarantees a strategy
  relies on: originals archived first, the rewrite persisted with the node's
  update, every operation and its rationale in the ledger: :func:`apply_edits`.

AdaCoM's manager (:class:`~langgraph_ctx.strategies.AdaptiveContextManager`),
ARC's and BACM's folds and tiered compression (its summaries and compacted
results as ready-made operations, :meth:`EditOp.replacing`) are built on it.
"""

from langgraph_ctx.edits.core import is_note

__all__ = [
    "is_note",
]
