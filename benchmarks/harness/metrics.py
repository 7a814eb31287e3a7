"""Metrics of a strategy on a workload, computed from what the runs recorded.

Definitions (also printed with the results):

- utilization: prompt tokens the model received / the window;
- overflow: a prompt over ``Budget.for_window(window).prompt_limit`` (the window minus
  the output reserve and the safety margin: no room left for the answer); longevity is
  the number of calls made before the first one;
- reduction: a call whose prompt is smaller than the previous prompt plus what arrived
  since (its inputs and the previous reply): something was summarized, trimmed or
  cleared; its ratio is that expected size over the actual one;
- overhead: the strategy's own time per call, and the whole graph step's time as a
  ratio to no management over the calls both made, in the same run.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_ctx.budget import Budget

from .runner import PairRun, SessionRun

TOLERANCE = 2
"""Tokens a prompt may fall short of the expected size without counting as a reduction."""


def utilization(prompt_tokens: Sequence[int], window: int) -> list[float]:
    return [t / window for t in prompt_tokens]


def calls_before_overflow(prompt_tokens: Sequence[int], limit: int) -> int | None:
    """Calls made before the first prompt over ``limit``; ``None`` if none was."""
    return next((i for i, t in enumerate(prompt_tokens) if t > limit), None)


def reduction_ratios(prompt_tokens: Sequence[int], added_tokens: Sequence[int]) -> list[float]:
    """Expected / actual prompt size at each call where the context was reduced."""
    ratios = []
    for i in range(1, len(prompt_tokens)):
        expected = prompt_tokens[i - 1] + added_tokens[i]
        if prompt_tokens[i] < expected - TOLERANCE:
            ratios.append(expected / max(prompt_tokens[i], 1))
    return ratios


def common_ratio(
    runs: Sequence[SessionRun], baseline: Sequence[SessionRun], field: str
) -> float | None:
    """Sum of ``field`` per call over ``runs`` / the same over ``baseline``, counting only
    the calls both made (same sessions, in order)."""
    ours = base = 0.0
    for a, b in zip(runs, baseline, strict=True):
        n = min(a.calls, b.calls)
        ours += sum(getattr(a, field)[:n])
        base += sum(getattr(b, field)[:n])
    return ours / base if base > 0 else None


def _vs(
    runs: Sequence[SessionRun],
    base: Sequence[SessionRun] | None,
    field: str,
    same_steps: bool,
    *,
    per_call: bool,
) -> float | None:
    if not base:
        return None
    if same_steps:
        return common_ratio(runs, base, field)
    if per_call:
        return total_ratio(runs, base, field)
    extra = sum(r.extra_tokens for r in runs)
    total = sum(sum(getattr(r, field)) for r in runs) + extra
    return total / max(sum(sum(getattr(r, field)) for r in base), 1)


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


@dataclass(frozen=True)
class Metrics:
    """One strategy on one workload."""

    strategy: str
    sessions: int
    calls: int
    peak_utilization: float
    mean_utilization: float
    overflowed: int
    """Sessions with at least one prompt over the prompt limit."""
    longevity: int | None
    """Fewest calls any session made before overflowing (``None``: none overflowed)."""
    reductions: int
    reduction_ratio: float | None
    summaries: int
    summary_ratio: float | None
    """Tokens summarized / summary tokens, over all summaries."""
    summary_retention: float | None
    entity_retention: float
    """Mean over sessions of the last prompt's share of the history's entities."""
    probes: int
    probes_kept: int
    tokens_sent: int
    summary_tokens: int
    """Tokens sent to the summarizer (a model call each, with a real summarizer)."""
    extra_tokens: int
    managed_ms: float
    step_ms: float
    step_vs_none: float | None
    tokens_vs_none: float | None
    checkpoint_bytes_per_call: float
    cut: int
    """Sessions stopped early because the prompt outgrew the cut-off."""

    @property
    def survival(self) -> float | None:
        return self.probes_kept / self.probes if self.probes else None


def total_ratio(runs: Sequence[SessionRun], baseline: Sequence[SessionRun], field: str) -> float:
    """Per-call mean of ``field`` over ``runs`` / the same over ``baseline``."""
    ours: list[float] = [x for r in runs for x in getattr(r, field)]
    base: list[float] = [x for r in baseline for x in getattr(r, field)]
    return (sum(ours) / max(len(ours), 1)) / (sum(base) / max(len(base), 1) or 1.0)


def measure(
    pair: PairRun, window: int, baseline: PairRun | None = None, *, same_steps: bool = True
) -> Metrics:
    """The metrics of one strategy's runs; ratios need the no-management runs.

    ``same_steps=False`` (a strategy that rewrites the sessions, like delegation): calls do
    not correspond, so tokens compare as totals and step time as the mean per call.
    """
    runs = pair.runs
    limit = Budget.for_window(window).prompt_limit
    util = [u for r in runs for u in utilization(r.prompt_tokens, window)]
    lives = [calls_before_overflow(r.prompt_tokens, limit) for r in runs]
    ratios = [x for r in runs for x in reduction_ratios(r.prompt_tokens, r.added_tokens)]
    s_in = [t for r in runs for t in r.summary_in]
    s_out = [t for r in runs for t in r.summary_out]
    calls = sum(r.calls for r in runs)
    base = baseline.runs if baseline is not None and len(baseline.runs) == len(runs) else None
    return Metrics(
        strategy=pair.strategy,
        sessions=len(runs),
        calls=calls,
        peak_utilization=max(util, default=0.0),
        mean_utilization=_mean(util) or 0.0,
        overflowed=sum(life is not None for life in lives),
        longevity=min((life for life in lives if life is not None), default=None),
        reductions=len(ratios),
        reduction_ratio=_mean(ratios),
        summaries=len(s_in),
        summary_ratio=sum(s_in) / sum(s_out) if sum(s_out) else None,
        summary_retention=_mean([x for r in runs for x in r.summary_retention]),
        entity_retention=_mean([r.entity_retention for r in runs]) or 0.0,
        probes=sum(len(r.probes) for r in runs),
        probes_kept=sum(sum(r.probes.values()) for r in runs),
        tokens_sent=sum(sum(r.prompt_tokens) for r in runs),
        summary_tokens=sum(s_in),
        extra_tokens=sum(r.extra_tokens for r in runs),
        managed_ms=1000 * sum(sum(r.managed_seconds) for r in runs) / max(calls, 1),
        step_ms=1000 * sum(sum(r.step_seconds) for r in runs) / max(calls, 1),
        step_vs_none=_vs(runs, base, "step_seconds", same_steps, per_call=True),
        tokens_vs_none=_vs(runs, base, "prompt_tokens", same_steps, per_call=False),
        checkpoint_bytes_per_call=pair.checkpoint_bytes / max(calls, 1),
        cut=sum(r.cut for r in runs),
    )


@dataclass(frozen=True)
class Longevity:
    """The long-horizon claims: when no management overflows, and what ours sustains."""

    none_overflow_call: int | None
    none_overflow_turn: int | None
    """1-based turn of the first prompt over the prompt limit."""
    none_window_turn: int | None
    """1-based turn of the first prompt over the window itself."""
    ours_turns: int
    ours_peak: float
    early_ms: float
    """Median pipeline time per call over turns 51-150."""
    late_ms: float
    """The same over the last 100 turns."""
    early_step_ms: float
    late_step_ms: float


def _turn_of(run: SessionRun, over: int) -> tuple[int | None, int | None]:
    call = calls_before_overflow(run.prompt_tokens, over)
    return call, None if call is None else run.turns[call] + 1


def longevity(none: SessionRun | None, ours: SessionRun, window: int) -> Longevity:
    limit = Budget.for_window(window).prompt_limit
    call, turn = _turn_of(none, limit) if none is not None else (None, None)
    _, window_turn = _turn_of(none, window) if none is not None else (None, None)
    last = ours.turns[-1] + 1 if ours.turns else 0

    def median_ms(values: list[float], lo: int, hi: int) -> float:
        picked = [v for v, t in zip(values, ours.turns, strict=True) if lo <= t < hi]
        return 1000 * statistics.median(picked) if picked else float("nan")

    early = (50, 150)
    late = (max(last - 100, early[1]), last)
    return Longevity(
        none_overflow_call=call,
        none_overflow_turn=turn,
        none_window_turn=window_turn,
        ours_turns=last,
        ours_peak=max(ours.prompt_tokens, default=0) / window,
        early_ms=median_ms(ours.managed_seconds, *early),
        late_ms=median_ms(ours.managed_seconds, *late),
        early_step_ms=median_ms(ours.step_seconds, *early),
        late_step_ms=median_ms(ours.step_seconds, *late),
    )
