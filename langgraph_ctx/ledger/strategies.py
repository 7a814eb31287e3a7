"""The events of the strategies (PACE, ARC, AdaCoM, BACM), the think node and sub-agents."""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict  # pydantic needs these before 3.12

from langgraph_ctx.ledger.parts import Budget, Failure


class PaceScorerFailed(TypedDict):
    """``pace_scorer_failed``: PACE's relevance scorer failed; it fell back."""

    scorer: str
    """The scorer that failed."""
    error: str
    """The error."""


class PaceIndexFailed(TypedDict):
    """``pace_index_failed``: PACE could not archive steps."""

    messages: int
    """Messages that were not archived."""
    error: str
    """The exception, ``repr``."""


class PaceContext(TypedDict):
    """``pace_context``: the levels PACE showed each step at."""

    steps: int
    """Steps in the session's history."""
    scored: int
    """Steps scored for relevance (all but the most recent, always shown whole)."""
    full: int
    """Steps shown whole; the next four fields count the other levels."""
    detailed: int
    brief: int
    placeholder: int
    omitted: int
    pressure: float
    """PACE's pressure, 0 to 1: task progress or budget use, whichever is higher."""
    thresholds: list[float]
    """The relevance thresholds between levels, under this pressure."""
    scorer: str
    """The relevance scorer used."""
    scorer_fallback: NotRequired[str]
    """The scorer used while that one is not ready."""
    summaries_pending: int
    """Step summaries still being written."""
    tokens_before: int
    """Raw tokens of the steps, whole."""
    tokens_after: int
    """Raw tokens of the steps as sent."""
    budget: int
    """Raw tokens the steps could take."""
    held: NotRequired[bool]
    """The levels of the last call were kept."""
    restored: NotRequired[int]
    """Steps restored from the checkpoint (after a restart)."""


class ArcUpdateLate(TypedDict):
    """``arc_update_late``: ARC's memory update was not ready; the interaction stays raw."""

    waited: float
    """Seconds this call waited for the update."""
    raw: int
    """Messages not yet folded into the memory."""


class ArcUpdateFailed(TypedDict):
    """``arc_update_failed``."""

    reason: Literal["timeout", "error"]
    """``timeout`` or ``error``."""
    seconds: NotRequired[float]
    """How long the update ran (``timeout``)."""
    error: NotRequired[str]
    """The exception (``error``)."""


class ArcReflection(TypedDict):
    """``arc_reflection``: ARC rewrote its memory and checklist."""

    arc: str
    """``reflection``."""
    turn: int
    """The turn it ran at."""
    triggers: list[str]
    """The signals that set it off."""
    rationale: str
    """The model's reason for the new memory and checklist."""
    replaced: list[str]
    """Ids of the memory and the checklist it replaced."""
    by: list[str | None]
    """Ids of the messages that replaced them."""


class ManagerFailed(Failure):
    """``manager_failed``: AdaCoM's manager failed; the view went on unchanged."""

    round: int
    """The manager's round in this session."""
    triggers: list[str]
    """What triggered the call."""


class ManagerUnchanged(TypedDict):
    """``manager_unchanged``: AdaCoM's manager proposed nothing."""

    round: int
    """The manager's round in this session."""
    triggers: list[str]
    """What triggered the call."""
    manager_seconds: float
    """How long the manager took."""


class Fold(TypedDict):
    """``fold``: a BACM fold, by the agent or the policy."""

    by: Literal["agent", "policy"]
    """Whether the agent called the fold tool or the policy decided."""
    kind: str
    """The fold's kind, or ``refused``."""
    commits: NotRequired[list[str]]
    """Ids of the blocks folded."""
    reason: NotRequired[str]
    """Why it was refused."""
    used: NotRequired[int]
    """BACM's budget line at the fold (see :class:`~langgraph_ctx.ledger.parts.Budget`)."""
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
    """The compression that ran instead."""


class Thought(TypedDict):
    """``thought``: the think node's step."""

    confidence: float
    """The thought's confidence, 0 to 1."""
    tokens: int
    """Tokens the thought took (0 when the model was not called)."""
    round: int
    """The thought's number in this step."""
    model_call: bool
    """Whether the model was called for it."""


class Delegation(TypedDict):
    """``delegation``: a sub-agent's run."""

    agent: str
    """The sub-agent."""
    status: str
    """``ok``, ``failed``, ``depth_exceeded`` or ``step_limit``."""
    steps: int
    """Steps the sub-agent ran."""
    tokens_consumed: int
    """Tokens the sub-agent used."""
    result_tokens: int
    """Tokens of the result returned to the parent."""
    boundary_ratio: float
    """``tokens_consumed / result_tokens``: what the delegation kept out of context."""


FoldRecorded = FoldApplied | FoldApplyRefused | FoldRefused
"""What a recorder passes for ``fold`` (read it as :class:`Fold`)."""
