"""The events of the strategies (PACE, ARC, AdaCoM, BACM), the think node and sub-agents."""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict  # pydantic needs these before 3.12

from langgraph_ctx.ledger.parts import Budget, Failure


class PaceScorerFailed(TypedDict):
    """``pace_scorer_failed``: PACE's relevance scorer failed; it fell back."""

    scorer: str
    error: str


class PaceIndexFailed(TypedDict):
    """``pace_index_failed``: PACE could not archive steps."""

    messages: int
    error: str


class PaceContext(TypedDict):
    """``pace_context``: the levels PACE showed each step at."""

    steps: int
    scored: int
    full: int  # Steps shown whole; the next four fields count the other levels.
    detailed: int
    brief: int
    placeholder: int
    omitted: int
    pressure: float
    thresholds: list[float]
    scorer: str
    scorer_fallback: NotRequired[str]
    summaries_pending: int
    tokens_before: int
    tokens_after: int
    budget: int
    held: NotRequired[bool]  # The levels of the last call were kept.
    restored: NotRequired[int]  # Steps restored from the checkpoint (after a restart).


class ArcUpdateLate(TypedDict):
    """``arc_update_late``: ARC's memory update was not ready; the interaction stays raw."""

    waited: float
    raw: int


class ArcUpdateFailed(TypedDict):
    """``arc_update_failed``."""

    reason: Literal["timeout", "error"]
    seconds: NotRequired[float]
    error: NotRequired[str]


class ArcReflection(TypedDict):
    """``arc_reflection``: ARC rewrote its memory and checklist."""

    arc: str
    turn: int
    triggers: list[str]
    rationale: str
    replaced: list[str]
    by: list[str | None]  # Ids of the messages that replaced them.


class ManagerFailed(Failure):
    """``manager_failed``: AdaCoM's manager failed; the view went on unchanged."""

    round: int
    triggers: list[str]


class ManagerUnchanged(TypedDict):
    """``manager_unchanged``: AdaCoM's manager proposed nothing."""

    round: int
    triggers: list[str]
    manager_seconds: float


class Fold(TypedDict):
    """``fold``: a BACM fold, by the agent or the policy."""

    by: Literal["agent", "policy"]
    kind: str  # The fold's kind, or ``refused``.
    commits: NotRequired[list[str]]
    reason: NotRequired[str]  # Why it was refused.
    used: NotRequired[int]
    pending: NotRequired[int]
    limit: NotRequired[int]
    remaining: NotRequired[int]


class FoldApplied(Budget):
    """``fold`` as recorded for a fold decided (by the agent or the policy)."""

    by: Literal["agent", "policy"]
    kind: str
    commits: list[str]


class FoldApplyRefused(FoldApplied):
    """``fold`` as recorded for the agent's fold the edit core refused."""

    reason: str


class FoldRefused(TypedDict):
    """``fold`` as recorded for the policy's fold refused before any edit."""

    by: Literal["agent", "policy"]
    kind: str
    reason: str


class FoldFailed(Failure):
    """``fold_failed``: BACM's policy failed."""


class FoldGuard(Budget):
    """``fold_guard``: over the red line after folding; the fallback runs."""

    fallback: str


class Thought(TypedDict):
    """``thought``: the think node's step."""

    confidence: float
    tokens: int
    round: int
    model_call: bool


class Delegation(TypedDict):
    """``delegation``: a sub-agent's run."""

    agent: str
    status: str
    steps: int
    tokens_consumed: int
    result_tokens: int
    boundary_ratio: float
    """``tokens_consumed / result_tokens``: what the delegation kept out of context."""


FoldRecorded = FoldApplied | FoldApplyRefused | FoldRefused
"""What a recorder passes for ``fold`` (read it as :class:`Fold`)."""
