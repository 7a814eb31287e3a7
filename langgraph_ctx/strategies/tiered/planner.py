"""What tiered compression compresses, and to which goal (:class:`TierPlanner`).

Pure: the planner reads a history, a token count per message and the call's
budget figures (:class:`BudgetFigures`, which the middleware gathers from
pre-flight's report), and returns a :class:`TierPlan`: the :class:`Work` a call
needs (the span to summarize, with the earlier summaries for a consolidation, the
summary's size, the kept tool results to compact in place) and what it found on
the way, for the middleware to record (``compression_candidates``,
``budget_unreachable``). No call context, no I/O, nothing recorded here, so it is
tested on generated histories without a graph (tests/strategies/test_tiered_planner.py).

Everything here counts raw (uncalibrated) tokens, as the session's token cache
does; the report's calibrated figures are divided back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, ToolMessage

from langgraph_ctx.budget import Budget, UsageReport, Zone
from langgraph_ctx.compression.ceiling import COMPACT_FLOOR
from langgraph_ctx.history.structure import Plan, Tiers, plan_compression, split_tiers, turn_starts
from langgraph_ctx.markers import is_compacted, is_summary
from langgraph_ctx.strategies.tiered.settings import DEFAULT_TARGET, TieredSettings
from langgraph_ctx.strategies.tiered.summaries import next_seq

Count = Callable[[BaseMessage], int]
"""Raw tokens of one message (the session's token cache)."""

COMPACT_MIN_TOKENS = 200
"""Tool results smaller than this are never compacted: too little to gain."""


@dataclass(frozen=True, slots=True)
class BudgetFigures:
    """The budget numbers one call's plan reads, in calibrated tokens as pre-flight's
    report gives them (the middleware gathers them: :func:`.middleware.budget_figures`).
    Zone and allocations leave recall's additions out (strategies/recall_room.py)."""

    zone: Zone
    """The prompt's zone without recall's additions."""
    messages_over: bool
    """Whether the messages are over their rebalanced allocation (same report)."""
    messages_used: int
    """The messages' tokens now."""
    messages_budget: int
    """The messages' nominal allocation (:attr:`Budget.messages`)."""
    messages_capped: bool
    """Whether that allocation is a hard cap (:attr:`Budget.messages_cap`)."""
    kept_recall: int
    """The recall blocks kept for the current prefix: they share a hard cap."""
    room: int
    """What the messages may take before the prompt reaches the red line, the kept
    recall blocks released (:func:`messages_room`)."""
    calibration: float = 1.0
    """Provider tokens per raw token: the figures above divided by it are raw."""

    def raw(self, tokens: int | float) -> int:
        """``tokens`` (calibrated) in raw tokens."""
        return int(tokens / max(self.calibration, 1e-6))


@dataclass(frozen=True, slots=True)
class Candidates:
    """In the yellow zone: what a compression would take at the red line."""

    messages: int
    tokens: int
    through: str | None


@dataclass(frozen=True, slots=True)
class Unreachable:
    """The compression target cannot be met, and why (pinned content is kept)."""

    reason: str
    pinned_tokens: int


@dataclass(frozen=True, slots=True)
class Work:
    """One compression: the plan, what the summarizer reads, and its budget."""

    plan: Plan
    source: list[BaseMessage]
    """The span to compress (empty if only tool results are compacted); for a
    consolidation, the earlier summaries before it."""
    max_tokens: int
    meta: bool
    compact: list[tuple[BaseMessage, int]] = field(default_factory=list)
    """Kept tool results to shrink in place, each with its digest's size."""

    def archive_reason(self) -> Callable[[BaseMessage], str]:
        """The archive's reason for each original this work removes.

        It names the summary that replaces it, so that a search hit says where
        its gist still is (``compressed into summary #3``)."""
        seq = next_seq(self.plan.tiers.summaries)
        compacted = {str(m.id) for m, _ in self.compact}

        def reason(message: BaseMessage) -> str:
            if str(message.id) in compacted:
                return "compacted"
            if is_summary(message):
                return f"consolidated into summary #{seq}"
            return f"compressed into summary #{seq}"

        return reason


@dataclass(frozen=True, slots=True)
class TierPlan:
    """One call's plan: the compression to apply, if any, and what to record."""

    work: Work | None = None
    candidates: Candidates | None = None
    """Yellow zone, first time on this approach to the red line: record them
    (``compression_candidates``)."""
    unreachable: Unreachable | None = None
    """Record ``budget_unreachable`` (before applying :attr:`work`, if any)."""


NOTHING = TierPlan()
"""No compression, nothing to record."""


@dataclass(frozen=True, slots=True)
class TierPlanner:
    """The plan tiered compression's :class:`TieredSettings` give for one call."""

    settings: TieredSettings
    pin_task: bool

    def decide(
        self,
        messages: Sequence[BaseMessage],
        count: Count,
        figures: BudgetFigures,
        *,
        ahead: bool = False,
        advised: bool = False,
    ) -> TierPlan:
        """The compression this call needs (``work`` ``None``: none). ``ahead``: the
        one the call crossing the red line will need, planned now (then the plan
        has nothing to record). ``advised``: the candidates were recorded already
        on this approach to the red line."""
        # Zone and allocations without recall's additions: they never trigger a
        # compression recall off would not make (see strategies/recall_room.py).
        urgent = ahead or figures.zone == "red" or figures.messages_over
        if figures.messages_capped:  # the recall kept with them shares the cap
            used = figures.messages_used + figures.kept_recall
            urgent = urgent or used > figures.messages_budget
        if not urgent and figures.zone != "yellow":
            return NOTHING
        if not urgent and advised:
            return NOTHING  # yellow, candidates already recorded: nothing to plan on this call
        messages = list(messages)
        # Everything below is in raw (uncalibrated) tokens, as the cache counts.
        tiers = split_tiers(messages, pin_task=self.pin_task)
        line, goal = self.line_and_goal(tiers, count, figures)  # at the red line, and after
        pinned = sum(count(m) for m in tiers.pinned if m.type != "system")
        existing = sum(count(m) for m in tiers.summaries)
        low = self.settings.summary_tokens[0]
        cap = self.summary_cap(figures)
        used = figures.raw(figures.messages_used)
        if ahead:  # as if at the red line (plus any headroom)
            used = max(used, line) + int(self.settings.prepare_headroom * line)
        plan = plan_compression(
            messages,
            count,
            free_tokens=max(used - goal, 1),
            expected_ratio=self.settings.expected_ratio,
            min_turns=self.settings.min_protected_turns,
            # The nominal allocation, not the rebalanced one: rebalancing grows
            # with usage, and the cap must not. Nor may the protected window
            # take the room the summaries need to meet the goal.
            max_protected_tokens=min(
                figures.raw(self.settings.protected_share * figures.messages_budget),
                max(0, goal - pinned - cap),
            ),
            pin_task=self.pin_task,
            summary_cap=cap,
            tiers=tiers,
        )
        span = sum(count(m) for m in plan.compress)
        if not urgent:
            if not plan.compress:
                return NOTHING
            return TierPlan(candidates=Candidates(len(plan.compress), span, plan.compress[-1].id))
        kept = sum(count(m) for m in plan.keep)
        # The least the summaries will take after this step: consolidated down to
        # the smallest layer if there is a span to compress, else as they are.
        smallest = low if plan.compress else existing
        # Turns kept verbatim may alone be too large (tool-heavy ones): compact
        # their tool results, oldest first, by what it takes to meet the goal.
        excess = pinned + kept + smallest - goal
        # With the partners a pin only drags along (a pin keeps a pair whole, not
        # its other results verbatim: see the tiers).
        loose = [m for m in tiers.dragged if isinstance(m, ToolMessage)]
        compact = compactions([*loose, *plan.keep], count, excess, self.settings.expected_ratio)
        kept -= sum(count(m) - size for m, size in compact)
        if not plan.compress:
            if not compact:
                # Not if it is the recall blocks kept that pass the line (the
                # messages fit it): placement gives them up (see _recall_refresh).
                if not ahead and used > line:
                    return TierPlan(
                        unreachable=_unreachable(plan, count, "nothing left to compress")
                    )
                return NOTHING
            return TierPlan(Work(plan, [], 0, meta=False, compact=compact))
        # What the summaries may take and still meet the goal, within their cap.
        room = min(cap, goal - pinned - kept)
        if room < low:
            # The target is out of reach whatever the summary's size: then at least
            # stay under the red line, and let the summary have what is left there.
            room = min(cap, line - pinned - kept - 1)
        unreachable = None
        if not ahead and pinned + kept + low > goal and plan.protected == len(plan.keep):
            # Even the smallest summary leaves the history above the target: with
            # pinned content this large, compression will run on every call.
            unreachable = _unreachable(
                plan,
                count,
                f"pinned messages and the protected window alone exceed the compression "
                f"target ({goal} tokens of messages), so compression runs on every call",
            )
        layer = min(cap, max(low, int(span / self.settings.expected_ratio)))
        summaries = plan.tiers.summaries
        if len(summaries) + 1 > self.settings.max_summary_layers or existing + layer > max(
            room, low
        ):
            # Consolidate: the earlier layers and the new span in one call, written
            # to the cap (or what the goal leaves), never to the budget's full size.
            work = Work(
                plan, [*summaries, *plan.compress], max(low, room), meta=True, compact=compact
            )
        else:
            work = Work(plan, plan.compress, layer, meta=False, compact=compact)
        return TierPlan(work, unreachable=unreachable)

    def line_and_goal(self, tiers: Tiers, count: Count, figures: BudgetFigures) -> tuple[int, int]:
        """Raw tokens the messages may take at the red line, and what a compression
        brings them to: ``target_utilization`` of that, but never less than what it
        must keep anyway (the pinned messages, a summary at its cap and the
        ``min_protected_turns`` latest turns, within the protected window's cap),
        if that is under the line. A goal below that cannot be met: with a deep
        target at a small window, the protected turns were cut to the current one
        and every compression still ended ``budget_unreachable``."""
        line = figures.raw(figures.room)
        protect = figures.raw(self.settings.protected_share * figures.messages_budget)
        keep = sum(count(m) for m in tiers.pinned if m.type != "system")
        keep += self.summary_cap(figures)
        keep += latest_turns(tiers.rest, self.settings.min_protected_turns, protect, count)
        goal = int(self.settings.target_utilization * line)
        if keep < line:
            return line, max(goal, keep)
        # Past the line (tool-heavy turns at a small window, or pinned content
        # that large, which budget_unreachable reports): the protected window
        # will be cut to fit anyway; a deep aim would cut it to the current turn,
        # the usual one keeps as many turns as recall off does.
        return line, max(goal, int(DEFAULT_TARGET * line))

    def summary_cap(self, figures: BudgetFigures) -> int:
        """Raw tokens a summary may take: ``max_summary_share`` of the messages'
        allocation, within ``summary_tokens``."""
        low, high = self.settings.summary_tokens
        share = figures.raw(self.settings.max_summary_share * figures.messages_budget)
        return max(low, min(high, share))


def _unreachable(plan: Plan, count: Count, why: str) -> Unreachable:
    return Unreachable(why, sum(count(m) for m in plan.tiers.pinned))


def compactions(
    keep: list[BaseMessage], count: Count, excess: int, ratio: float
) -> list[tuple[BaseMessage, int]]:
    """The oldest large tool results whose digests save ``excess`` tokens, with sizes.

    Results of ``COMPACT_MIN_TOKENS`` or more first; smaller ones (down to what a
    digest can still save) only if those are not enough."""
    chosen: dict[int, tuple[BaseMessage, int]] = {}
    for least in (COMPACT_MIN_TOKENS, COMPACT_FLOOR * 3 // 2):
        for m in keep:
            if excess <= 0:
                break
            tokens = count(m)
            usable = isinstance(m, ToolMessage) and not is_compacted(m)
            if usable and least <= tokens and id(m) not in chosen:
                size = max(COMPACT_FLOOR, int(tokens / ratio))
                chosen[id(m)] = (m, size)
                excess -= tokens - size
    return list(chosen.values())


def messages_room(report: UsageReport, budget: Budget, released: int = 0) -> int:
    """Calibrated tokens the messages may take before the prompt reaches the red line
    (which the prompt limit caps), given what the other components use now, less
    ``released`` (what a compression gives up with the prefix: the recall blocks
    kept for it); never more than a hard message cap (:attr:`Budget.messages_cap`)."""
    others = report.total - report.used.get("messages", 0) - released
    room = max(0, budget.red_line - others)
    return min(room, budget.messages) if budget.messages_cap else room


def latest_turns(rest: list[BaseMessage], turns: int, cap: int, count: Count) -> int:
    """Raw tokens of the ``turns`` latest turns of ``rest``, fewer while they pass
    ``cap`` (the protected window's rule), the current turn always."""
    starts = turn_starts(rest) if rest else [0]
    n = min(turns, len(starts))
    tokens = sum(count(m) for m in rest[starts[-n] :])
    while n > 1 and tokens > cap:
        n -= 1
        tokens = sum(count(m) for m in rest[starts[-n] :])
    return tokens
