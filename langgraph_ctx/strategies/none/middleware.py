"""``strategy="none"``: nothing rewrites the history (:class:`NoStrategy`), the
baseline the other strategies are measured against."""

from __future__ import annotations

import math
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langgraph_ctx import ledger
from langgraph_ctx._checks import check_bool
from langgraph_ctx.compression.ceiling import fit_prompt
from langgraph_ctx.ledger.core import CeilingFitBy
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, Middleware, View, graph_namespace
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive


class NoStrategy(Middleware):
    """``strategy="none"``: nothing rewrites the history. Each call's prompt is still
    fitted by pre-flight's ceiling (cut for that call only; the checkpoint keeps every
    message whole), so this is the baseline the other strategies are measured against.

    With ``recall=True`` a user expects "no management, plus recall": the history
    stays whole, and what a call cannot show is not lost to the model but found
    again when a question needs it. So, on a prompt over its room, this layer
    does the cut itself, before recall, for this call only: the oldest turns left
    out and the largest tool results digested (pre-flight's own fit), down to the
    red line less recall's share (:data:`RECALL_SHARE` of the auxiliary allocation),
    and it puts the originals it left out or digested into ``archive``. Recall
    then searches them and fills the room kept for it; ``glimpse`` reads them
    whole. Without this, recall found an empty archive and its tool's schema
    pushed one more old turn out: recall on kept fewer answers than off. A prompt
    within its room is passed through; so is every call with recall off."""

    name = "no_strategy"
    priority = 30  # the strategy's slot: after pre-flight's report, before recall

    def __init__(
        self,
        *,
        archive: MessageArchive | None,
        nodes: Sequence[str],
        recall: bool = False,
    ) -> None:
        super().__init__(nodes=nodes)
        self.archive: MessageArchive = archive if archive is not None else InMemoryArchive()
        self.recall = check_bool("NoStrategy.recall", recall)

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        if not self.recall or ctx.node != "call_llm":
            return view
        report = ctx.measured()
        target = ctx.budget.red_line - int(RECALL_SHARE * ctx.budget.auxiliary)
        calibration = max(report.calibration, 1.0)
        over = math.ceil((report.total - target) / calibration)
        if over <= 0:
            return view
        messages: list[BaseMessage] = list(view.get("messages") or ())
        memo = ctx.session.scratch.setdefault(_FIT_MEMO, {})
        fit = fit_prompt(messages, over, ctx.session.cache.count_of, ctx.counter, memo=memo)
        if fit.tokens_before == fit.tokens_after:
            return view
        # Each original is archived once: the set keeps the archive's writes to
        # what this call newly leaves out, not the whole left-out past.
        done: set[str] = ctx.session.scratch.setdefault(_ARCHIVED, set())
        omitted = set(fit.omitted)
        left = [m for m in messages if m.id in omitted and m.id not in done]
        left += [m for m in fit.originals if m.id is not None and m.id not in done]
        if left:
            thread, namespace = ctx.thread_id or "default", graph_namespace(ctx.config)
            archive = self.archive

            def put() -> None:
                archive.put(thread, left, reason="left_out", namespace=namespace)

            async def aput() -> None:
                await archive.aput(thread, left, reason="left_out", namespace=namespace)

            try:
                yield IOCall(put, aput)
                done.update(str(m.id) for m in left)
            except Exception as exc:
                # Nothing is lost (the checkpoint keeps every original): this call
                # goes on, recall without them, and the next call writes them again.
                ctx.record("archive_error", ledger.ArchiveError(by=self.name, error=f"{exc!r}"))
        ctx.adjust_usage("messages", fit.tokens_after - fit.tokens_before)
        ctx.record("ceiling_enforced", CeilingFitBy(scope="prompt", by=self.name, **fit.as_dict()))
        return view.replace(messages=fit.messages)


RECALL_SHARE = 1.0
"""The share of the budget's auxiliary allocation a call with recall keeps free
of history when its history does not fit whole: the room recall fills."""
_FIT_MEMO = "no_strategy.fit_memo"
"""Session scratch key: the fit's reductions, for the next call (as pre-flight's)."""
_ARCHIVED = "no_strategy.archived"
"""Session scratch key: ids this process already put in the archive (memory only)."""
