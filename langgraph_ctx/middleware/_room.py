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
        """Tokens left under the red line by the prompt as measured so far, the
        recall blocks kept from earlier calls (reserved) included, as they are
        given up for what this call brings back if both do not fit (placement,
        :mod:`~langgraph_ctx.middleware._recall_refresh`): a new question is
        shown what recall finds for it before lines other questions asked for.
        Under a hard message cap (:meth:`~langgraph_ctx.budget.Budget.for_messages`),
        also within what the messages leave of the cap: what is brought back
        shares it with the conversation."""
        report = ctx.measured()
        kept = ctx.session.calibration.apply(sum(ctx.session.reserved.values()))
        room = ctx.budget.red_line - report.total + kept
        if ctx.budget.messages_cap:
            room = min(room, ctx.budget.messages - report.used.get("messages", 0))
        return max(0, room)
