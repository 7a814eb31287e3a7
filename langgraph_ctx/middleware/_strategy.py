"""What every context strategy shares: compression's slot in the chain."""

from __future__ import annotations

from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.pipeline import Middleware


class ContextStrategy(Middleware):
    """The one middleware that decides what of the history the model sees:
    tiered compression, AdaCoM, ARC, BACM or PACE (``strategy=`` picks one).

    They all sit in compression's slot: after pre-flight (their trigger, and the
    room its report leaves) and tool eviction, before recall, whose ephemeral
    block must never reach a persisted rewrite, and before placement. A subclass
    narrows what differs (its nodes, what it writes).
    """

    priority = 30
    default_nodes: tuple[str, ...] | None = ("call_llm", "think")
    requires: tuple[type[Middleware] | str, ...] = (PreflightCheck,)
    reads: tuple[str, ...] = ("messages",)
    writes: tuple[str, ...] = ("messages", "context_ledger")
