"""Parts several kinds of event share (the ``as_dict()`` forms of reports)."""

from __future__ import annotations

from typing import Any

from typing_extensions import NotRequired, TypedDict  # pydantic needs these before 3.12


class Usage(TypedDict):
    """A usage report as ``UsageReport.as_dict()`` writes it: the fields of
    :class:`~langgraph_ctx.budget.UsageReport`, which documents them (components
    by name, ratios to 4 decimals)."""

    used: dict[str, int]
    """Tokens per component (``system``, ``messages``, ``tools``, ``auxiliary``)."""
    allocation: dict[str, int]
    """Each component's allocation, rebalanced to what the others leave."""
    total: int
    """The prompt's tokens."""
    window: int
    """The model's context window."""
    utilization: float
    """``total / window``."""
    zone: str
    """``green``, ``yellow`` or ``red`` (red at or over the red line)."""
    calibration: float
    """Provider tokens per counted token, as learned so far."""


class Fitted(TypedDict):
    """What fitting messages into a limit did (``Fitted.as_dict()``)."""

    ids: list[str]
    """Tool results reduced (compacted again, then cut)."""
    cut: list[str]
    """Those of them cut with a marker."""
    omitted: list[str]
    """Messages left out of this prompt (still in the history)."""
    tokens_before: int
    """Raw tokens of what was fitted, before."""
    tokens_after: int
    """Raw tokens of it after the fit."""


class Budget(TypedDict):
    """BACM's budget line (``BudgetState.as_dict()``): pre-flight's counts, calibrated."""

    used: int
    """Prompt tokens without the pending observation."""
    pending: int
    """Tokens of the observation the agent has not seen yet."""
    limit: int
    """The red line."""
    remaining: int
    """``limit - used``."""


class Failure(TypedDict):
    """A model-backed call that failed (``consult``'s second result)."""

    reason: str
    """``timeout`` or ``error``."""
    error: str
    """The exception, as ``Type: message``."""


class EditNote(TypedDict, total=False):
    """What a strategy adds to its edits' entries (``context_edit``, ``edit_rejected``)."""

    round: int
    """AdaCoM: the manager's round in this session."""
    triggers: list[str]
    """AdaCoM, ARC's reflection: what triggered the call."""
    manager_seconds: float
    """AdaCoM: how long the manager took."""
    arc: str
    """ARC: ``update`` or ``reflection``."""
    turn: int
    """ARC: the turn the memory was folded at."""
    memory: dict[str, Any]
    """ARC: the memory message that grew (``grew``, ``into``, ``tokens_added``)."""


class EditOperation(TypedDict):
    """One operation of an applied edit."""

    kind: str
    """``delete``, ``replace``, ``insert``, ..."""
    ids: list[str]
    """The messages it named."""
    widened: list[str]
    """Messages added so no tool call is split from its result."""
    role: str | None
    """The role it gave the message it wrote (``None``: the role kept, or nothing written)."""
    rationale: str
    """Why, in the strategy's words."""
    new_id: str | None
    """The message it wrote, if any."""


class EditRecord(TypedDict):
    """An applied edit (``EditPlan.ledger()``)."""

    operations: list[EditOperation]
    """Its operations, in the order applied."""
    removed: list[str]
    """Ids of the messages it removed (archived first)."""


class IOFailed(TypedDict):
    """A memory call that timed out or failed; the call went on without it."""

    latency_ms: float
    """How long the call ran before it timed out or failed."""
    timeout_s: float | None
    """The timeout it ran under."""
    error: NotRequired[str]
    """The exception (``*_error`` kinds only)."""


class Collision(TypedDict):
    """An original archived under another key, its id's being taken by other content."""

    id: str
    """The message's id."""
    archived_as: str
    """The key it was archived under (``<id>~<n>``)."""
