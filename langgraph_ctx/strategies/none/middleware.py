"""``strategy="none"``: nothing rewrites the history (:class:`NoStrategy`), the
baseline the other strategies are measured against."""

from __future__ import annotations

import math
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from langgraph_ctx import ledger
from langgraph_ctx._checks import check_bool
from langgraph_ctx.compression.ceiling import Fit, fit_prompt
from langgraph_ctx.edits import is_note
from langgraph_ctx.middleware import glimpse
from langgraph_ctx.middleware.placement import fold_notes
from langgraph_ctx.middleware.preflight import prompt_over
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, Middleware, View
from langgraph_ctx.pipeline.context import graph_namespace
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive


class NoStrategy(Middleware):
    """``strategy="none"``: nothing rewrites the history. Each call's prompt is still
    fitted by pre-flight's ceiling (cut for that call only; the checkpoint keeps every
    message whole), so this is the baseline the other strategies are measured against.

    With ``recall=True``, on a prompt over its limit, this layer puts into
    ``archive`` the originals that pre-flight's guard is about to leave out or
    digest for this call (the same fit of the same prompt), so that recall and
    ``glimpse`` can find them on later calls. It changes nothing in the prompt:
    the guard cuts it exactly as with recall off, and recall fills only the room
    that leaves. A history that fills the window leaves recall none, so recall
    on equals recall off there; an earlier design cut deeper to make room for
    recall, and lost turns that word search could not find again (recall on
    kept fewer answers than off). See ``strategies/recall_room.py``."""

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
        self._prompt_tokens: tuple[str, int] = ("", 0)

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        if not self.recall or ctx.node != "call_llm":
            return view
        # Where pre-flight's guard will cut with recall off (the same count of the
        # same prompt), recall's additions left out: its kept blocks (the guard's
        # count leaves them out too) and the glimpse schema (unbound over the line).
        _, over = prompt_over(view, ctx, self._prompt(ctx))
        over -= math.floor(glimpse.bound_tokens(ctx) / max(ctx.measured().calibration, 1.0))
        if over <= 0:
            return view
        raw: list[BaseMessage] = list(view.get("messages") or ())
        # Fitted as placement will send them, each [plan] note folded into its
        # answer, as the guard sees them.
        memo = ctx.session.scratch.setdefault(_FIT_MEMO, {})
        fit = fit_prompt(fold_notes(raw), over, ctx.session.cache.count_of, ctx.counter, memo=memo)
        # Each original is archived once: the set keeps the archive's writes to
        # what this call newly leaves out, not the whole left-out past.
        done: set[str] = ctx.session.scratch.setdefault(_ARCHIVED, set())
        left = [m for m in _left_out(raw, fit) if m.id is not None and m.id not in done]
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
        return view

    def _prompt(self, ctx: CallContext) -> int:
        """Raw tokens of the system prompt the node sends as its own message."""
        prompt = ctx.system_prompt or ""
        if prompt and self._prompt_tokens[0] != prompt:
            self._prompt_tokens = (prompt, ctx.counter.count_message(SystemMessage(prompt)))
        return self._prompt_tokens[1] if prompt else 0


def _left_out(raw: list[BaseMessage], fit: Fit) -> list[BaseMessage]:
    """The originals in ``raw`` that ``fit`` (made on ``raw`` with its notes folded)
    leaves out or makes smaller; notes folded into an answer
    (:func:`~langgraph_ctx.middleware.placement.fold_notes`) go with it."""
    touched = {*fit.omitted, *fit.reduced}
    out: list[BaseMessage] = []
    notes: list[BaseMessage] = []
    for m in raw:
        if isinstance(m, AIMessage) and is_note(m) and not m.tool_calls:
            notes.append(m)
            continue
        group = [*notes, m] if isinstance(m, AIMessage) else [m]
        if not isinstance(m, AIMessage):  # not folded: each note stands alone
            out += [n for n in notes if str(n.id) in touched]
        notes = []
        if str(m.id) in touched:
            out += group
    return out + [n for n in notes if str(n.id) in touched]


_FIT_MEMO = "no_strategy.fit_memo"
"""Session scratch key: the fit's reductions, for the next call (as pre-flight's)."""
_ARCHIVED = "no_strategy.archived"
"""Session scratch key: ids this process already put in the archive (memory only)."""
