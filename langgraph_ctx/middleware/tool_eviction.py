"""Tool eviction: keep bound tool schemas within capacity and the tool budget.

Independent of message compression (paper, section 6.3): growing tool needs
never squeeze the history, and a long history never evicts tools. Least
recently used first; the always-include set and ``search_tools`` are exempt,
so an evicted tool can always be found again.

By default a found tool stays bound until the tool budget is short, not until
some count of tools is reached: the schemas come first in a provider's prompt,
so each change to the set bound costs the prompt cache the whole prompt. A
small fixed capacity changes the set on a large share of calls; keeping tools
until the budget is short changes it rarely, so far more of the prompt stays
cacheable, at a fraction of the cost (see benchmarks/RESULTS.md,
prompt_cache_tools). ``capacity`` still caps the count where a user wants it.

The eviction is persistent (``"-name"`` operations on the state's
``tool_cache``), and this call binds only what is left.
"""

from __future__ import annotations

from typing import Any

from langgraph_ctx import ledger
from langgraph_ctx._checks import check_instance, check_int
from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.pipeline import CallContext, Middleware, View
from langgraph_ctx.tools import ToolRegistry


class ToolEviction(Middleware):
    """Evicts least recently used tools when over capacity or over the tool budget."""

    name = "tool_eviction"
    priority = 20
    default_nodes = ("call_llm",)
    requires = (PreflightCheck,)
    """It trims the tools to the tool budget pre-flight rebalanced."""
    writes = ("tool_cache", "context_ledger")
    """Evictions are ``-name`` operations on ``tool_cache`` (so it must exist too)."""

    def __init__(
        self, registry: ToolRegistry, *, capacity: int | None = None, **kwargs: Any
    ) -> None:
        """
        Args:
            registry: the agent's tools (its ``bound`` is the pipeline's tool provider).
            capacity: most discovered tools kept in the session cache; ``None``, as
                many as the tool budget holds.
        """
        super().__init__(**kwargs)
        check_instance("registry", registry, ToolRegistry, "a ToolRegistry")
        if capacity is not None:
            check_int("capacity", capacity, least=0)
        self.registry = registry
        self.capacity = capacity

    def evictions(self, cache: list[str], tool_budget_raw: int) -> list[str]:
        """Names to evict, least recently used first, to meet capacity and budget."""
        cost = self.registry.cost
        kept = [n for n in cache if n in cost and n not in self.registry.always]
        fixed = sum(cost[n] for n in self.registry.bound_names([]))
        total = fixed + sum(cost[n] for n in kept)
        evicted: list[str] = []
        most = len(kept) if self.capacity is None else self.capacity
        while kept and (len(kept) > most or total > tool_budget_raw):
            name = kept.pop(0)
            evicted.append(name)
            total -= cost[name]
        return evicted

    def before(self, view: View, ctx: CallContext) -> View:
        report = ctx.measured()
        cache = list(view.get("tool_cache") or ())
        budget_raw = int(report.allocation["tools"] / max(report.calibration, 1e-6))
        evicted = self.evictions(cache, budget_raw)
        if not evicted:
            return view
        ctx.persist(self.name, tool_cache=[f"-{n}" for n in evicted])
        kept = [n for n in cache if n not in evicted]
        freed = sum(self.registry.cost[n] for n in evicted)
        ctx.tools = [t for t in ctx.tools if t.name not in evicted]
        report = ctx.adjust_usage("tools", -freed)
        ctx.record(
            "eviction",
            ledger.Eviction(
                evicted=evicted,
                tokens_freed=freed,
                reason="capacity"
                if self.capacity is not None and len(cache) > self.capacity
                else "budget",
                cache=kept,
            ),
        )
        return view.replace(tool_cache=kept)
