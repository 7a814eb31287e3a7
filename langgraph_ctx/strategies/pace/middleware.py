"""PACE: show each past step at the granularity its relevance to the next step earns.

Before each model call: the steps completed since the last call get their key
vector (one encoder call, with the query) and a background job for their
summaries; every older step (all but the last ``recent``) is scored against the
query (the task, the latest user message, the latest ``query_steps`` steps), and
shown in full, as a detailed or brief summary, or as a placeholder, by thresholds
that rise with pressure (:mod:`langgraph_ctx.strategies.pace.policy`); the whole is
kept within the message budget. Summaries are never waited for: one not ready yet
leaves the step in full, or a placeholder if that does not fit.
``preset="paper"`` (:meth:`PaceSettings.paper`) runs it as the paper does where
the defaults differ: the last two steps in the query, pressure against a fixed
128K, every call condensed by relevance.

All of it is ephemeral: the assembled messages are this call's view, and the
history in the checkpoint is never rewritten, so nothing is lost and a step
shown as a placeholder is one ``glimpse`` away
(:class:`~langgraph_ctx.middleware.Glimpse` with a
:class:`~langgraph_ctx.strategies.pace.glimpse.StepSource`). What resume needs
(each step's key vector and summaries) is checkpointed under ``pace_chunks``,
keyed by step id, as it is made: a delta channel, so a step stores the records
it added, not all of them. The history itself is best kept in one too
(:class:`~langgraph_ctx.state.DeltaContextState`, the prebuilt agent's default
with PACE): under ``add_messages`` every checkpoint would store all of it.

Ledger: one ``pace_context`` entry per call (steps, the level counts, pressure,
thresholds, scorer, summaries pending, tokens before and after; with
``scorer_fallback``, why the default scorer scored lexically: its model was still
loading, or failed to);
``pace_scorer_failed`` when the encoder raised or timed out (that call weighs
every step alike).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, RemoveMessage
from langgraph.types import Command

from langgraph_ctx._checks import check_has, check_instance
from langgraph_ctx.compression import ChatModelSummarizer, ExtractiveSummarizer, Summarizer
from langgraph_ctx.ledger.strategies import PaceContext, PaceIndexFailed, PaceScorerFailed
from langgraph_ctx.markers import is_view_only
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View
from langgraph_ctx.pipeline.context import graph_namespace
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.base import ContextStrategy
from langgraph_ctx.strategies.pace.policy import (
    FULL,
    LEVELS,
    PaceSettings,
    fit,
    pressure,
    select,
    thresholds,
)
from langgraph_ctx.strategies.pace.scorer import (
    EmbeddingScorer,
    Scorer,
    default_scorer,
    relative_weights,
    unit,
)
from langgraph_ctx.strategies.pace.state import PaceState
from langgraph_ctx.strategies.pace.steps import CHANNEL, PaceSession, Step
from langgraph_ctx.strategies.pace.summaries import start
from langgraph_ctx.strategies.recall_room import kept_recall, without_recall

BLOCK_TOKENS = 30
"""Room kept for the condensed blocks' title and message overhead: a first estimate.
A title that says steps were left out, or full steps splitting the condensed ones
into several messages, cost more; :meth:`PredictiveExtraction._assemble` then fits
again to the exact excess."""
REFITS = 4
"""Most times the levels are lowered again by what the assembly came out over."""
KEYS_PER_CALL = 64
"""Most new keys encoded in one call (a resumed session without records catches
up over a few calls; a step not keyed yet weighs as the average)."""


class PredictiveExtraction(ContextStrategy):
    """Assembles each model call's context from the steps at PACE's granularities."""

    name = "pace"
    writes = (CHANNEL, "context_ledger")  # the history itself is never rewritten
    state_schema = PaceState
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "default": {},
        "paper": {"settings": PaceSettings.paper()},
    }

    def __init__(
        self,
        *,
        scorer: Scorer | Embeddings | None = None,
        summarizer: Summarizer | BaseChatModel | None = None,
        settings: PaceSettings | None = None,
        archive: MessageArchive | None = None,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            scorer: any LangChain ``Embeddings``, or a :class:`~langgraph_ctx.strategies.
                pace_scorer.Scorer`. Default: all-MiniLM-L6-v2 if the ``embeddings``
                extra is installed, else the lexical scorer.
            summarizer: makes the detailed and brief summaries, in the background: a
                chat model, a summarizer, or ``None`` for the extractive one.
            settings: PACE's parameters (:class:`~langgraph_ctx.strategies.PaceSettings`).
            archive: where every message of the history goes as PACE takes it in
                (reason ``"pace"``), so that recall searches the steps it shows
                condensed (:class:`~langgraph_ctx.middleware.MemoryRecall` skips
                what the call shows in full) and ``glimpse`` finds any message by id.
                ``None``: no index (the steps stay glimpsable by step id).
        """
        super().__init__(**kwargs)
        if isinstance(scorer, Embeddings):
            scorer = EmbeddingScorer(scorer)
        self.scorer: Scorer = check_has(
            "scorer", scorer or default_scorer(), ("encode", "aencode"), "a scorer or Embeddings"
        )
        if isinstance(summarizer, BaseChatModel):
            summarizer = ChatModelSummarizer(summarizer)
        self.summarizer: Summarizer = check_has(
            "summarizer",
            summarizer or ExtractiveSummarizer(),
            ("summarize", "asummarize"),
            "a summarizer or chat model",
        )
        self.settings = check_instance(
            "settings", settings or PaceSettings(), PaceSettings, "PaceSettings(...)"
        )
        if archive is not None:
            check_has("archive", archive, ("put", "aput", "search"), "a MessageArchive")
        self.archive = archive

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        messages = view.get("messages") or []
        scratch, key = ctx.session.scratch, f"{self.name}:session"
        session: PaceSession = scratch.get(key) or scratch.setdefault(key, PaceSession())
        count_text = ctx.counter.count_text
        sealed = session.update(messages, ctx.session.cache.count_of, count_text)
        if self.archive is not None and session.taken_from < len(messages):
            yield from self._index(messages[session.taken_from :], ctx)
        restored = None
        if not session.restored:
            restored = session.restore(view.get(CHANNEL) or {}, self.scorer.name, count_text)
        changed = self._harvest(session, count_text)
        self._summarize(session, sealed, messages)
        scored = session.steps[: -self.settings.recent]
        weights, failed = np.zeros(0), None
        if scored:
            weights, failed, keyed = yield from self._weigh(session, scored, messages)
            changed.update(keyed)
        if changed:
            records = {s.id: session.record(s, self.scorer.name) for s in changed.values()}
            ctx.persist(self.name, **{CHANNEL: records})
        if failed is not None:
            ctx.record(
                "pace_scorer_failed", PaceScorerFailed(scorer=self.scorer.name, error=failed)
            )
        if not scored:
            return view
        return self._assemble(view, ctx, session, scored, weights, restored)

    def after(self, view: View, result: Any, ctx: CallContext) -> Any:
        """The node's update without removals of this call's condensed blocks: a node
        shown one may remove it as it would a summary, and LangGraph would fail the
        step over an id no state holds. There is nothing to remove: PACE never wrote
        it."""
        removed = _removals(result)
        if not removed:
            return result
        shown = {str(m.id) for m in view.get("messages") or () if is_view_only(m)}
        gone = removed & shown
        return _without_removals(result, gone) if gone else result

    def _index(self, new: Sequence[BaseMessage], ctx: CallContext) -> Hook[None]:
        """Put the messages taken in into the archive recall searches (all of the
        history after a restart: the archive skips ids it holds). One that fails
        is recorded and the call goes on: the history itself is never at risk."""
        thread, namespace = ctx.thread_id, graph_namespace(ctx.config)
        batch = [m for m in new if m.id and not is_view_only(m)]
        if thread is None or not batch or self.archive is None:
            return
        archive = self.archive
        put = partial(archive.put, thread, batch, reason="pace", namespace=namespace)
        aput = partial(archive.aput, thread, batch, reason="pace", namespace=namespace)
        try:
            yield IOCall(put, aput)
        except Exception as exc:
            ctx.record("pace_index_failed", PaceIndexFailed(messages=len(batch), error=repr(exc)))

    # -- the steps -------------------------------------------------------------

    def _harvest(self, session: PaceSession, count_text: Any) -> dict[str, Step]:
        """Summaries finished since the last call (never waited for)."""
        done: dict[str, Step] = {}
        waiting = []
        for step in session.pending:
            assert step.job is not None
            outcome = step.job.outcome(self.settings.summary_timeout)
            if outcome is None:
                waiting.append(step)
                continue
            step.job = None
            if isinstance(outcome, str):  # failed or timed out: full or placeholder
                step.summary_failed = True
                continue
            session.set_summaries(step, *outcome, count_text)
            done[step.id] = step
        session.pending = waiting
        return done

    def _summarize(self, session: PaceSession, sealed: list[Step], messages: Any) -> None:
        s = self.settings
        for step in sealed:
            if step.detailed is None and step.job is None and not step.summary_failed:
                batch = messages[step.start : step.end]
                step.job = start(self.summarizer, batch, s.detailed_tokens, s.brief_tokens)
                session.pending.append(step)

    def _weigh(
        self, session: PaceSession, scored: list[Step], messages: Any
    ) -> Hook[tuple[np.ndarray, str | None, dict[str, Step]]]:
        """Relative weights of the scored steps; the error if the scorer failed; the
        steps newly keyed."""
        chars = self.settings.text_chars
        missing = np.flatnonzero(~_padded(session.keyed, len(scored)))[-KEYS_PER_CALL:]
        todo = [scored[i] for i in missing.tolist()]
        part = chars // 3
        latest = [
            session.text(step, messages, part)
            for step in session.steps[-self.settings.query_steps :]
        ]
        query = "\n".join([session.task[:part], session.last_user[:part], *latest])
        texts = [session.text(step, messages, chars) for step in todo]
        try:
            keys, q = yield IOCall(
                partial(self.scorer.encode, texts, query),
                partial(self.scorer.aencode, texts, query),
                timeout=self.settings.scorer_timeout,
            )
        except Exception as exc:
            return np.ones(len(scored)), f"{type(exc).__name__}: {exc}", {}
        for step, key in zip(todo, keys, strict=True):
            session.set_key(step.number, unit(key))
        query_vector = unit(q)
        m = len(scored)
        keyed = _padded(session.keyed, m)
        if session.keys.shape[1] != query_vector.size or not keyed.any():
            return np.ones(m), None, {s.id: s for s in todo}
        scores = session.keys[:m] @ query_vector
        scores[~keyed] = scores[keyed].mean()  # not keyed yet: average relevance
        weights = relative_weights(scores, self.settings.temperature)
        return weights, None, {s.id: s for s in todo}

    def _assemble(
        self,
        view: View,
        ctx: CallContext,
        session: PaceSession,
        scored: list[Step],
        weights: np.ndarray,
        restored: int | None,
    ) -> View:
        s = self.settings
        # As recall off has it (strategies/recall_room.py): recall's kept blocks and
        # glimpse schema give way when the prompt would pass the red line with them,
        # and recall refills the room the steps leave; counted here, they took the
        # steps' room, and every step was shown condensed further than without recall.
        report = without_recall(ctx)
        calibration = max(report.calibration, 1e-6)
        others = report.total - report.used.get("messages", 0) - kept_recall(ctx)
        room = min(report.allocation["messages"], ctx.budget.red_line - others)
        budget = max(0, int(room / calibration))
        recent = sum(step.tokens for step in session.steps[len(scored) :])
        fixed = session.head_tokens + recent + BLOCK_TOKENS
        previous = session.previous_tokens or session.head_tokens
        p = pressure(len(session.steps), s.expected_steps, previous, s.pressure_budget or budget)
        limits = thresholds(s, p)
        table = session.table[: len(scored)]
        whole = int(table[:, FULL].sum())
        chosen = select(weights, limits)
        # The step holding the user's latest message is shown whole, whatever its
        # relevance: condensed, the model would act on its tool results without the
        # question they answer (and answer an earlier one).
        free = np.ones(len(scored), dtype=bool)
        asked = session.asked_step
        if asked is not None and asked <= len(scored):
            free[asked - 1] = False
        kept = int(table[~free, FULL].sum())
        rows = np.arange(len(scored))
        # The tokens sent come with the messages, summed from counts made once per step
        # and line, exact (the prompt ceiling trusts the usage report a strategy leaves
        # clearly under the limit): the condensed messages are never tokenized.
        held = self._held(view, session, scored, free, fixed, budget, ctx)
        if held is not None:
            levels, (messages, sent) = held
        elif not s.condense_when_fits and fixed + whole <= budget:
            levels = np.full(len(scored), FULL, dtype=np.int8)  # it fits: nothing gives way
            messages, sent = session.assemble(view["messages"], scored, levels, ctx.session.cache)
        else:  # a new selection, leaving room for the steps to come
            target = budget - int(s.headroom * budget) - fixed - kept
            levels = _fit_free(chosen, table, weights, target, free)
            messages, sent = session.assemble(view["messages"], scored, levels, ctx.session.cache)
        # Over by what the estimate of the blocks' overhead missed: fit again, to what
        # the steps cost now less that excess (the least relevant step lowered first),
        # and assemble again. Left over, even a token, the prompt ceiling would drop a
        # whole block.
        for _ in range(REFITS):
            if sent <= budget:
                break
            cost = int(table[rows, levels].sum())  # a step left out costs 0
            lowered = _fit_free(chosen, table, weights, cost - kept - (sent - budget), free)
            if np.array_equal(lowered, levels):
                break  # nothing left to lower: the head and the last steps alone are over
            levels = lowered
            messages, sent = session.assemble(view["messages"], scored, levels, ctx.session.cache)
        session.previous_tokens = sent
        session.held = levels.copy() if s.headroom > 0 else None
        # Reported as what is sent, message by message: the condensed ones are looked
        # up (remembered at assembly), the rest were counted by pre-flight; a message
        # the steps do not hold (a repaired pair) is counted here.
        sent = sum(map(ctx.session.cache.count_of, messages))
        # Against what pre-flight measured (its view may differ from the steps': a
        # repaired pair), so that the report stays exact.
        measured = math.ceil(report.used.get("messages", 0) / calibration)
        ctx.adjust_usage("messages", sent - measured)
        counts = np.bincount(levels, minlength=len(LEVELS))
        fallback = getattr(self.scorer, "fallback", None)  # a model still loading, say
        full, detailed, brief, placeholder, omitted = (int(n) for n in counts)  # LEVELS' order
        data = PaceContext(
            steps=len(session.steps),
            scored=len(scored),
            full=full,
            detailed=detailed,
            brief=brief,
            placeholder=placeholder,
            omitted=omitted,
            pressure=round(p, 3),
            thresholds=[round(x, 3) for x in limits],
            scorer=self.scorer.name,
            summaries_pending=len(session.pending),
            tokens_before=session.total,
            tokens_after=sent,
            budget=budget,
        )
        if fallback:
            data["scorer_fallback"] = fallback
        if held is not None:
            data["held"] = True
        if restored is not None:
            data["restored"] = restored
        ctx.record("pace_context", data)
        return view.replace(messages=messages)

    def _held(
        self,
        view: View,
        session: PaceSession,
        scored: list[Step],
        free: np.ndarray,
        fixed: int,
        budget: int,
        ctx: CallContext,
    ) -> tuple[np.ndarray, tuple[list[BaseMessage], int]] | None:
        """The last call's levels, the steps scored since then whole, if that fits and
        the step that must be whole is: the prompt is then the last one extended (what
        a provider's prompt cache serves). ``None``: select anew."""
        last = session.held
        if last is None or len(last) > len(scored) or self.settings.condense_when_fits:
            # condense_when_fits asks for a selection by relevance on every call: new
            # steps held whole would never be condensed while they fit.
            return None
        levels = np.full(len(scored), FULL, dtype=np.int8)
        levels[: len(last)] = last
        rows = np.arange(len(scored))
        if (levels[~free] != FULL).any():
            return None
        if fixed + int(session.table[rows, levels].sum()) > budget:
            return None
        made = session.assemble(view["messages"], scored, levels, ctx.session.cache)
        return (levels, made) if made[1] <= budget else None


def _fit_free(
    chosen: np.ndarray, table: np.ndarray, weights: np.ndarray, budget: int, free: np.ndarray
) -> np.ndarray:
    """:func:`fit` over the ``free`` steps within ``budget``; the others full."""
    levels = np.full(len(chosen), FULL, dtype=np.int8)
    levels[free] = fit(chosen[free], table[free], weights[free], budget)
    return levels


def _removals(result: Any) -> set[str]:
    """The ids a node's update removes (a dict update, or Commands carrying one)."""
    found: set[str] = set()
    for update in _updates(result):
        messages = update.get("messages")
        for m in messages if isinstance(messages, list) else [messages]:
            if isinstance(m, RemoveMessage) and m.id is not None:
                found.add(str(m.id))
    return found


def _updates(result: Any) -> list[dict[str, Any]]:
    parts = result if isinstance(result, list) else [result]
    out = []
    for part in parts:
        update = part.update if isinstance(part, Command) else part
        if isinstance(update, dict):
            out.append(update)
    return out


def _without_removals(result: Any, ids: set[str]) -> Any:
    if isinstance(result, list):
        return [_without_removals(part, ids) for part in result]
    if isinstance(result, Command) and isinstance(result.update, dict):
        return dataclasses.replace(result, update=_without_removals(result.update, ids))
    if not isinstance(result, dict) or "messages" not in result:
        return result
    messages = result["messages"]
    listed = messages if isinstance(messages, list) else [messages]
    kept = [m for m in listed if not (isinstance(m, RemoveMessage) and str(m.id) in ids)]
    return {**result, "messages": kept}


def _padded(flags: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` of ``flags``, False past its end."""
    out = np.zeros(n, dtype=bool)
    k = min(n, len(flags))
    out[:k] = flags[:k]
    return out
