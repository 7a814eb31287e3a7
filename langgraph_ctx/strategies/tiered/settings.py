"""Tiered compression's settings (:class:`TieredSettings`), one place for what each
means, its default and its valid range: :class:`~.middleware.TieredCompression`
takes them as keywords or as ``settings=``, and the planner reads them from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar, overload

from langgraph_ctx._checks import check_bool, check_int, check_number, check_timeout
from langgraph_ctx.errors import ConfigurationError

T = TypeVar("T")

DEFAULT_TARGET = 0.7
"""``target_utilization`` by default: the next compression a third of the room away."""


@dataclass(frozen=True, kw_only=True)
class TieredSettings:
    """How deep tiered compression goes, how large its summaries are, and how it
    prepares them. Checked when made: a bad value raises a
    :class:`~langgraph_ctx.errors.ConfigurationError` naming the field."""

    target_utilization: float = DEFAULT_TARGET
    """How far down a compression goes, as a share of the messages' room: the red
    line (capped by the prompt limit) minus what the system prompt, tools and
    auxiliary content use now. Relative to that room rather than to the whole
    window, so that a large pinned system prompt or many tool schemas do not squeeze
    the messages to a sliver of their budget, and so that after any compression the
    next one is ``1 - target`` of the room away. The trigger is unchanged: the red
    zone, or messages over their allocation. Between 0 and 1."""
    min_protected_turns: int = 3
    """The protected window's floor, in turns (at least 1)."""
    protected_share: float = 0.5
    """Cap of the protected window, as a share of the nominal message allocation (and
    never more than leaves the summaries their room under the target)."""
    expected_ratio: float = 5.0
    """The compression ratio to plan with (at least 1): a new summary layer gets
    ``span / expected_ratio`` tokens, within ``summary_tokens`` and the summary cap."""
    summary_tokens: tuple[int, int] = (150, 2_000)
    """``(low, high)``: bounds of any one summary, ``0 < low <= high``."""
    max_summary_layers: int = 4
    """More summaries than this are consolidated (at least 1)."""
    max_summary_share: float = 0.5
    """The summaries' cap, as a share of the nominal message allocation: above it they
    are consolidated into one meta-summary written to at most this cap (and to the
    room left under the target), so summaries never grow to fill the budget."""
    summarizer_timeout: float | None = 30.0
    """For a chat-model summarizer, seconds (``None``: no limit)."""
    prepare_ahead: bool = True
    """In the yellow zone, summarize the span the next compression will remove in the
    background (a task on the running loop for a model summarizer under ``ainvoke``,
    else a thread of the package's small pool), so that crossing the red line does
    not wait for the summarizer."""
    prepare_headroom: float = 0.0
    """The span prepared ahead is planned for messages this share of the red line
    above it, in ``[0, 1)``. 0: planned for the red line itself, so it compresses
    what the synchronous path would, less the turn that crosses the line (a span
    short by that much is still applied: ``prepared: short``). A larger headroom
    covers that turn too, but compresses more than the synchronous path would."""

    def __post_init__(self) -> None:
        check_number("expected_ratio", self.expected_ratio)
        check_int("min_protected_turns", self.min_protected_turns)
        check_int("max_summary_layers", self.max_summary_layers)
        check_bool("prepare_ahead", self.prepare_ahead)
        check_number("prepare_headroom", self.prepare_headroom)
        check_timeout("summarizer_timeout", self.summarizer_timeout)
        low_high = self.summary_tokens
        if not (isinstance(low_high, tuple) and len(low_high) == 2):
            raise ConfigurationError(
                "summary_tokens", f"expected a (low, high) pair, got {low_high!r}"
            )
        for bound in low_high:
            check_int("summary_tokens", bound)
        _check_share("target_utilization", self.target_utilization)
        _check_share("protected_share", self.protected_share)
        _check_share("max_summary_share", self.max_summary_share)
        if self.min_protected_turns < 1:
            raise ConfigurationError(
                "min_protected_turns", f"must be >= 1, got {self.min_protected_turns}"
            )
        if self.expected_ratio < 1:
            raise ConfigurationError("expected_ratio", f"must be >= 1, got {self.expected_ratio}")
        if not 0 < low_high[0] <= low_high[1]:
            raise ConfigurationError("summary_tokens", f"need 0 < low <= high, got {low_high}")
        if self.max_summary_layers < 1:
            raise ConfigurationError(
                "max_summary_layers", f"must be >= 1, got {self.max_summary_layers}"
            )
        if not 0.0 <= self.prepare_headroom < 1.0:
            raise ConfigurationError(
                "prepare_headroom", f"must be in [0, 1), got {self.prepare_headroom}"
            )


def _check_share(field: str, value: float) -> None:
    check_number(field, value)
    if not 0.0 < value < 1.0:
        raise ConfigurationError(field, f"must be between 0 and 1, got {value}")


class Shown(Generic[T]):
    """One field of its owner's ``settings``, read-only on the owner
    (``compression.target_utilization``): what the middleware was built with, with
    no second copy that could drift from the one the planner reads."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Shown[T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> T: ...
    def __get__(self, obj: object, owner: type) -> Shown[T] | T:
        if obj is None:
            return self
        value: T = getattr(obj.settings, self.name)  # type: ignore[attr-defined]
        return value

    def __set__(self, obj: Any, value: T) -> NoReturn:
        raise AttributeError(f"{self.name} is read-only: it is a field of the settings")
