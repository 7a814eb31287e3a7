"""PACE (arXiv "Predictive Adaptive Context Extraction"): which representation each
past step gets in the next call.

Every step (chunk) has four representations: full, a detailed summary, a brief
1-2 sentence summary, and a placeholder (its id and a few words). With relative
weights ``w`` from the scorer (:mod:`~langgraph_ctx.strategies.pace.scorer`):

- pressure ``P = min(1, max(t / T_max, |C_{t-1}| / B))`` (eq. 6): steps so far
  against the expected task length, and the previous context against the budget;
- thresholds ``(alpha, beta, gamma) * (1 + lambda * P)``;
- select (eq. 7): full if ``w > gamma``, detailed if ``w > beta``, brief if
  ``w > alpha``, placeholder otherwise;
- a summary not made yet falls back to full (section 3.4), and then
- :func:`fit` keeps the whole within the message budget: the least relevant step
  first goes down one available level at a time, then the next; when every step
  is a placeholder and it is still over, the least relevant placeholders are left
  out (their ids stay in sequence, so ``glimpse`` still reaches them).

Only the decision lives here (numbers in, levels out); the middleware
(:class:`langgraph_ctx.strategies.PredictiveExtraction`) gathers the numbers and
assembles the messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from langgraph_ctx._checks import check_int, check_number
from langgraph_ctx.errors import ConfigurationError

FULL, DETAILED, BRIEF, PLACEHOLDER, OMITTED = range(5)
LEVELS = ("full", "detailed", "brief", "placeholder", "omitted")


@dataclass(frozen=True, kw_only=True)
class PaceSettings:
    """PACE's parameters; the defaults are the paper's but for ``query_steps``,
    ``pressure_budget``, ``condense_when_fits`` and ``headroom``, which
    :meth:`paper` (``preset="paper"``) sets as the paper has them."""

    recent: int = 2
    """N: the last steps always shown in full (and left out of scoring)."""
    temperature: float = 0.3
    """tau of the softmax: low, so weight concentrates on the top steps."""
    thresholds: tuple[float, float, float] = (0.4, 0.8, 1.5)
    """(alpha, beta, gamma) at zero pressure: brief, detailed, full above them."""
    adaptation: float = 0.5
    """lambda: thresholds grow by ``1 + lambda * P`` (appendix C.2; 0.7-1.0 for
    sessions of thousands of steps)."""
    expected_steps: int = 100
    """T_max: the expected task length in steps (the paper uses the 95th percentile
    of its validation tasks)."""
    detailed_tokens: int = 200
    """Budget of a detailed summary."""
    brief_tokens: int = 40
    """Budget of a brief one (1-2 sentences)."""
    text_chars: int = 2_000
    """L_max: characters of a step (and of each part of the query) given to the
    encoder; MiniLM reads about the first 1,000 anyway."""
    summary_timeout: float = 60.0
    """Seconds a background summary may take before it is given up (the step then
    stays at full or placeholder)."""
    condense_when_fits: bool = False
    """Whether to condense low-relevance steps while the whole history fits the
    message budget. The paper always does; by default we send a history that fits
    as it is, since nothing needs to give way yet (at a small window the paper's
    rule dropped values the task needed that every other strategy kept: see
    benchmarks/RESULTS.md)."""
    query_steps: int = 1
    """Steps whose text joins the query besides the task and the latest user message:
    the latest one by default, as the step now under way is what the next one
    continues; the paper's query is the task and the last ``N`` (= ``recent``)
    steps in full."""
    pressure_budget: int | None = None
    """B_max of eq. 6, in tokens: ``None``, the message room of the call (the
    budget the steps must fit, so pressure tracks the window the agent runs in);
    the paper fixes it at 128K whatever the window."""
    scorer_timeout: float | None = 10.0
    """Seconds the query and new keys may take to encode; past them the call is
    made with every step at equal weight."""
    headroom: float = 0.2
    """Share of the message budget a re-selection leaves free. Between re-selections
    the levels chosen stay as they were and new steps join whole, so each prompt
    extends the previous one (a provider's prompt cache serves it); a new selection
    comes when the steps added no longer fit, or a step that must be whole (the
    user's latest message) was condensed. ``0``: a new selection every call, by
    relevance to that call's step (the paper's rule; nothing cacheable past the
    head once the history outgrows the budget). With ``condense_when_fits`` every
    call is a new selection too: that setting asks for one by relevance."""

    def __post_init__(self) -> None:
        check_int("recent", self.recent, least=1)
        check_number("temperature", self.temperature, above=0.0)
        check_number("adaptation", self.adaptation, least=0.0)
        check_int("expected_steps", self.expected_steps, least=1)
        check_int("detailed_tokens", self.detailed_tokens, least=10)
        check_int("brief_tokens", self.brief_tokens, least=5)
        check_int("text_chars", self.text_chars, least=100)
        check_number("summary_timeout", self.summary_timeout, above=0.0)
        check_int("query_steps", self.query_steps, least=1)
        if self.pressure_budget is not None:
            check_int("pressure_budget", self.pressure_budget, least=1)
        if not isinstance(self.condense_when_fits, bool):
            raise ConfigurationError(
                "condense_when_fits", f"expected a bool, got {self.condense_when_fits!r}"
            )
        check_number("headroom", self.headroom, least=0.0)
        if self.headroom >= 1:
            raise ConfigurationError("headroom", f"must be below 1, got {self.headroom}")
        if self.scorer_timeout is not None:
            check_number("scorer_timeout", self.scorer_timeout, above=0.0)
        t = self.thresholds
        if len(t) != 3 or not all(isinstance(x, (int, float)) and x > 0 for x in t):
            raise ConfigurationError("thresholds", f"expected 3 positive numbers, got {t!r}")
        if not t[0] < t[1] < t[2]:
            raise ConfigurationError("thresholds", f"must increase (alpha < beta < gamma), got {t}")

    @classmethod
    def paper(cls, **overrides: Any) -> PaceSettings:
        """The settings as the paper runs PACE (``preset="paper"``): the query is the
        task and the last two steps, pressure is against a fixed 128K, every call
        selects anew by relevance (no headroom held), and a history that fits is
        condensed as one that does not; ``overrides`` win."""
        return cls(**{**PAPER, **overrides})


PAPER: dict[str, Any] = {
    "query_steps": 2,
    "pressure_budget": 128_000,
    "condense_when_fits": True,
    "headroom": 0.0,
}
"""What :meth:`PaceSettings.paper` changes from the defaults."""


def pressure(steps: int, expected_steps: int, previous_tokens: int, budget: int) -> float:
    """Eq. 6, clipped to [0, 1]: task progress or budget use, whichever is higher."""
    fill = previous_tokens / budget if budget > 0 else 1.0
    return min(1.0, max(steps / expected_steps, fill, 0.0))


def thresholds(settings: PaceSettings, p: float) -> tuple[float, float, float]:
    """The thresholds under pressure ``p``."""
    scale = 1.0 + settings.adaptation * p
    alpha, beta, gamma = settings.thresholds
    return alpha * scale, beta * scale, gamma * scale


def select(weights: np.ndarray, limits: tuple[float, float, float]) -> np.ndarray:
    """Eq. 7: the level of each step from its relative weight."""
    alpha, beta, gamma = limits
    levels = np.full(weights.shape, PLACEHOLDER, dtype=np.int8)
    levels[weights > alpha] = BRIEF
    levels[weights > beta] = DETAILED
    levels[weights > gamma] = FULL
    return levels


def fit(levels: np.ndarray, tokens: np.ndarray, weights: np.ndarray, budget: int) -> np.ndarray:
    """Levels whose total fits ``budget``, lowered from the least relevant step first.

    ``tokens[i, level]`` is what step ``i`` costs at each level, ``-1`` where that
    representation does not exist yet (a summary still being made): such a level
    is skipped, and a step selected at it is shown in full if that fits.

    The least relevant step goes down one available level at a time until the
    whole fits, then the next; once every step is a placeholder, the least
    relevant are left out. Array arithmetic over the steps (prefix sums find the
    step where it fits), so the cost per call is C-speed O(steps), not a Python
    loop over thousands of them.
    """
    levels = levels.astype(np.int8)  # a copy
    rows = np.arange(len(levels))
    levels[tokens[rows, levels] < 0] = FULL  # the paper's fallback: full, or lower if over
    cost = tokens[rows, levels]
    over = int(cost.sum()) - budget
    if over <= 0:
        return levels
    order = np.argsort(weights, kind="stable")  # least relevant first
    placeholder = tokens[order, PLACEHOLDER]
    freed = np.cumsum(cost[order] - placeholder)  # every step up to k a placeholder
    before = np.concatenate(([0], freed[:-1]))  # freed by the steps before k
    # The cheapest level each step can reach from where it is (a missing one skipped):
    # the first step whose own lowering can close the gap is where the walk stops.
    reachable = np.where(
        (np.arange(OMITTED) >= levels[order, None]) & (tokens[order, :OMITTED] >= 0),
        tokens[order, :OMITTED],
        np.iinfo(np.int64).max,
    ).min(axis=1)
    stops = np.flatnonzero(before + cost[order] - reachable >= over)
    if stops.size:
        k = int(stops[0])
        levels[order[:k]] = PLACEHOLDER
        step, remaining = int(order[k]), over - int(before[k])
        row, level = tokens[step], int(levels[step])
        while remaining > 0:  # down one available level at a time, as far as it must
            lower = next(x for x in range(level + 1, OMITTED) if row[x] >= 0)
            remaining -= int(row[level] - row[lower])
            level = lower
        levels[step] = level
        return levels
    levels[:] = PLACEHOLDER  # every step a placeholder, still over: leave some out
    left = over - int(freed[-1])
    out = int(np.searchsorted(np.cumsum(placeholder), left))  # first prefix that frees enough
    levels[order[: out + 1]] = OMITTED
    return levels
