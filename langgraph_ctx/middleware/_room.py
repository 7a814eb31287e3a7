"""What recall and glimpse share: they bring back what a strategy set aside,
sized to the room it left."""

from __future__ import annotations

from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.pipeline import CallContext, Middleware


class RoomFiller(Middleware):
    """Brings archived or remembered text back to the agent's call, within the
    room the prompt leaves under the red line."""

    priority = 40
    """After the strategy (30): the room is what it leaves, as pre-flight's report
    stands once history is compressed, not the room before."""
    default_nodes: tuple[str, ...] | None = ("call_llm",)
    requires: tuple[type[Middleware] | str, ...] = (PreflightCheck,)

    @staticmethod
    def room(ctx: CallContext) -> int:
        """Tokens left under the red line by the prompt as measured so far."""
        return max(0, ctx.budget.red_line - ctx.measured().total)
