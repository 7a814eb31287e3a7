"""The token budget: settings, zones, rebalancing and the usage report.

``C_max = system + messages + tools + auxiliary + output reserve + safety margin``
(paper, eq. 1). Allocations are soft targets: the pre-flight check compares
what each component uses against them, lends an under-used component's surplus
to the ones over their share, and classifies the prompt into a zone: red at
or over :attr:`Budget.red_line`, otherwise by utilization (total / window).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.parts import Usage

Zone = Literal["green", "yellow", "red"]
Component = Literal["system", "messages", "tools", "auxiliary"]

COMPONENTS: tuple[Component, ...] = ("system", "messages", "tools", "auxiliary")
REBALANCE_ORDER: tuple[Component, ...] = ("messages", "auxiliary", "tools")
"""Who receives surplus first. The system prompt is never grown: it is fixed."""

_REFERENCE_WINDOW = 128_000
_REFERENCE = {
    "system": 4_000,
    "messages": 70_000,
    "tools": 12_000,
    "auxiliary": 20_000,
    "output_reserve": 16_000,
    "safety_margin": 6_000,
}


@dataclass(frozen=True, kw_only=True)
class Zones:
    """Utilization thresholds (estimated prompt tokens / window), per model.

    A budget caps the red threshold at its prompt limit: see :attr:`Budget.red_line`.
    """

    yellow: float = 0.70
    """At or above this, compression candidates are marked (advisory)."""
    red: float = 0.85
    """At or above this, compression runs before the call proceeds (mandatory)."""

    def __post_init__(self) -> None:
        for name in ("yellow", "red"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigurationError(f"Zones.{name}", f"expected a number, got {value!r}")
        if not 0.0 < self.yellow < self.red <= 1.0:
            bad = "yellow" if not 0.0 < self.yellow < 1.0 else "red"
            raise ConfigurationError(
                f"Zones.{bad}",
                f"thresholds must satisfy 0 < yellow < red <= 1, "
                f"got yellow={self.yellow}, red={self.red}",
            )

    def classify(self, utilization: float) -> Zone:
        if utilization >= self.red:
            return "red"
        if utilization >= self.yellow:
            return "yellow"
        return "green"


@dataclass(frozen=True, kw_only=True)
class Budget:
    """How the context window is split. Defaults are the paper's 128K table.

    Use :meth:`for_window` to scale the default shares to another window, or
    :meth:`from_model` to read the window from a chat model's profile.
    """

    window: int = _REFERENCE_WINDOW
    """Total context capacity of the model, C_max, in tokens."""
    system: int = _REFERENCE["system"]
    """System prompt allocation."""
    messages: int = _REFERENCE["messages"]
    """Message history allocation: exceeding it (after rebalancing) calls for compression."""
    tools: int = _REFERENCE["tools"]
    """Bound tool schemas allocation: exceeding it (after rebalancing) calls for eviction."""
    auxiliary: int = _REFERENCE["auxiliary"]
    """Recalled memory, retrieved knowledge, the current thought."""
    output_reserve: int = _REFERENCE["output_reserve"]
    """Room kept for the model's answer. Never lent to other components."""
    safety_margin: int = _REFERENCE["safety_margin"]
    """Buffer against counting error. Never lent to other components."""
    zones: Zones = field(default_factory=Zones)
    """Utilization thresholds for this model."""
    messages_cap: bool = False
    """Whether ``messages`` is a hard cap rather than a share: never lent other
    components' surplus, so compression starts when the messages pass it and
    brings them well under it (see :meth:`for_messages`)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "zones":
                if not isinstance(value, Zones):
                    raise ConfigurationError("Budget.zones", f"expected Zones, got {value!r}")
                continue
            if f.name == "messages_cap":
                if not isinstance(value, bool):
                    raise ConfigurationError(
                        "Budget.messages_cap", f"expected a bool, got {value!r}"
                    )
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigurationError(f"Budget.{f.name}", f"expected an int, got {value!r}")
            least = 1 if f.name == "window" else 0
            if value < least:
                raise ConfigurationError(f"Budget.{f.name}", f"must be >= {least}, got {value}")
        allocated = self.allocated_total + self.output_reserve + self.safety_margin
        if allocated > self.window:
            raise ConfigurationError(
                "Budget.window",
                f"allocations sum to {allocated} tokens, more than the window of "
                f"{self.window} (system={self.system}, messages={self.messages}, "
                f"tools={self.tools}, auxiliary={self.auxiliary}, "
                f"output_reserve={self.output_reserve}, safety_margin={self.safety_margin})",
            )

    @classmethod
    def for_window(cls, window: int, **overrides: Any) -> Budget:
        """The default shares scaled to ``window``; keyword overrides win."""
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ConfigurationError("Budget.window", f"must be a positive int, got {window!r}")
        scaled = {k: window * v // _REFERENCE_WINDOW for k, v in _REFERENCE.items()}
        return cls(window=window, **{**scaled, **overrides})

    @classmethod
    def for_messages(
        cls, messages: int, *, window: int = _REFERENCE_WINDOW, **overrides: Any
    ) -> Budget:
        """The conversation gets ``messages`` tokens, recall included, and that is
        what it gets.

        What the model receives of the conversation, the messages and whatever
        recall brings back into the prompt (archived snippets, memories, the
        blocks kept from earlier turns), stays within ``messages``: the system
        prompt and the bound tool schemas are the only other parts of the prompt
        (their own shares, :meth:`for_window`'s for ``window``, like the output
        reserve and the safety margin). ``messages`` is a hard cap
        (:attr:`messages_cap`): it is both the trigger (compression runs once the
        messages and the recall kept with them pass it, whatever the other
        components leave unused) and the target (compression brings the messages
        to its ``target_utilization`` share of it, so many turns fit before the
        next); recall fills at most what the messages leave of it. The
        ``auxiliary`` share is then not recall's room on top: it no longer adds
        to the cap (with recall, ``Budget.for_messages(2_000)`` used to send up
        to 20,000 tokens more).
        """
        if isinstance(messages, bool) or not isinstance(messages, int) or messages <= 0:
            raise ConfigurationError("Budget.messages", f"must be a positive int, got {messages!r}")
        return cls.for_window(window, **{**overrides, "messages": messages, "messages_cap": True})

    @classmethod
    def from_model(
        cls, model: Any, *, default_window: int = _REFERENCE_WINDOW, **overrides: Any
    ) -> Budget:
        """Scale to the window in ``model.profile['max_input_tokens']`` when it has
        one, else to ``default_window`` (:func:`model_window` says whether it has)."""
        window = model_window(model)
        return cls.for_window(window if window is not None else default_window, **overrides)

    @property
    def allocated_total(self) -> int:
        """Tokens allocated to the prompt: everything but reserve and margin."""
        return self.system + self.messages + self.tools + self.auxiliary

    @property
    def prompt_limit(self) -> int:
        """The most tokens the prompt may take and still leave reserve and margin."""
        return self.window - self.output_reserve - self.safety_margin

    @property
    def red_line(self) -> int:
        """Prompt tokens at which the zone turns red.

        ``min(int(zones.red * window), prompt_limit)``: the red threshold is a
        share of the whole window, but a prompt past
        :attr:`prompt_limit` would eat the output reserve and safety margin, so
        the limit caps it. With the default shares the cap wins: 106,000 of a
        128,000 window (0.828), under 0.85.
        """
        return min(int(self.zones.red * self.window), self.prompt_limit)

    def zone(self, total: int) -> Zone:
        """The zone of a prompt of ``total`` tokens: red at or over :attr:`red_line`,
        otherwise yellow or green by utilization (``total / window``)."""
        if total >= self.red_line:
            return "red"
        return self.zones.classify(total / self.window)

    def allocation(self) -> dict[Component, int]:
        return {c: getattr(self, c) for c in COMPONENTS}


def model_window(model: Any) -> int | None:
    """The context window in ``model.profile['max_input_tokens']``; ``None`` if the
    model does not say (a local model behind an OpenAI-compatible URL, say)."""
    profile = getattr(model, "profile", None)
    window = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    known = isinstance(window, int) and not isinstance(window, bool) and window > 0
    return window if known else None


def rebalance(
    allocation: Mapping[Component, int],
    used: Mapping[Component, int],
    receivers: tuple[Component, ...] = REBALANCE_ORDER,
) -> dict[Component, int]:
    """Lend under-used components' surplus to the ones over their share.

    Receivers are served in ``receivers`` order (:data:`REBALANCE_ORDER`), each
    up to its deficit.
    Donors give in proportion to their surplus, so the total stays the same.
    Reserve and margin are not part of ``allocation`` and so are never touched.
    """
    surplus = {
        c: allocation[c] - used.get(c, 0) for c in allocation if used.get(c, 0) < allocation[c]
    }
    pool = sum(surplus.values())
    result = dict(allocation)
    lent = 0
    for c in receivers:
        deficit = used.get(c, 0) - allocation[c]
        if deficit > 0 and pool > lent:
            take = min(deficit, pool - lent)
            result[c] += take
            lent += take
    if lent:
        # Proportional draw, rounded down, with the remainder taken from the
        # largest donors so that the books balance to the token.
        draws = {c: lent * s // pool for c, s in surplus.items()}
        short = lent - sum(draws.values())
        for c in sorted(surplus, key=lambda c: surplus[c] - draws[c], reverse=True)[:short]:
            draws[c] += 1
        for c, d in draws.items():
            result[c] -= d
    return result


@dataclass(frozen=True)
class UsageReport:
    """What pre-flight measured for one pending LLM call.

    Written into the call context; compression, eviction and recall read it.
    """

    used: Mapping[Component, int]
    """Tokens per component (calibrated)."""
    allocation: Mapping[Component, int]
    """Allocations after rebalancing."""
    total: int
    """Sum of ``used``."""
    window: int
    utilization: float
    """``total / window``."""
    zone: Zone
    """:meth:`Budget.zone` of ``total``: red at or over the red line, which the
    prompt limit caps, even when ``utilization`` is under ``zones.red``."""
    prompt_limit: int
    """``window - output_reserve - safety_margin``."""
    calibration: float = 1.0
    """The factor applied to raw counts (1.0 until the provider reports usage)."""
    raw_total: int = 0
    """``total`` before calibration: what calibration compares with the provider."""

    @property
    def over(self) -> tuple[Component, ...]:
        """Components using more than their (rebalanced) allocation."""
        return tuple(c for c in COMPONENTS if self.used.get(c, 0) > self.allocation[c])

    def remaining(self, component: Component) -> int:
        """Tokens ``component`` may still take within its rebalanced allocation."""
        return max(0, self.allocation[component] - self.used.get(component, 0))

    def as_dict(self) -> Usage:
        return {
            "used": {c: n for c, n in self.used.items()},
            "allocation": {c: n for c, n in self.allocation.items()},
            "total": self.total,
            "window": self.window,
            "utilization": round(self.utilization, 4),
            "zone": self.zone,
            "calibration": round(self.calibration, 4),
        }


def measure(
    budget: Budget,
    used: Mapping[Component, int],
    *,
    calibration: float = 1.0,
    raw_total: int | None = None,
) -> UsageReport:
    """Build the usage report for ``used`` tokens under ``budget``."""
    total = sum(used.values())
    utilization = total / budget.window
    return UsageReport(
        used=dict(used),
        allocation=rebalance(budget.allocation(), used, _receivers(budget)),
        total=total,
        window=budget.window,
        utilization=utilization,
        zone=budget.zone(total),
        prompt_limit=budget.prompt_limit,
        calibration=calibration,
        raw_total=total if raw_total is None else raw_total,
    )


def _receivers(budget: Budget) -> tuple[Component, ...]:
    if budget.messages_cap:  # a hard cap is never lent surplus
        return tuple(c for c in REBALANCE_ORDER if c != "messages")
    return REBALANCE_ORDER
