"""PACE's glimpse (section 3.4, appendix D): a condensed step's full original, by id.

Two parts, kept apart so that a general glimpse over the archive can take the
first one as one more source:

- :class:`StepSource`: resolves a step id (``"s12"``) to the step's messages as a
  transcript, from one history; ``None`` for an id it does not know. The history
  is the graph state's, which PACE never rewrites: every step is there.
- :func:`glimpse_tool`: the agent's tool. At most ``limit`` (3) steps per agent
  step, counted over all its glimpse calls in that message; what it returns is a
  tool result, so it is in the latest step, always shown in full: the next
  call's budget counts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.prebuilt import InjectedState

from langgraph_ctx._checks import check_int
from langgraph_ctx.compression import transcript
from langgraph_ctx.strategies.pace_steps import step_bounds, step_number

GLIMPSE = "glimpse"
GLIMPSE_LIMIT = 3
"""Steps one agent step may glimpse (the paper's bound on context growth)."""


class StepSource:
    """The steps of one history, by id."""

    def __init__(self, messages: Sequence[BaseMessage]) -> None:
        self.messages = messages

    def resolve(self, ref: str) -> str | None:
        """Step ``ref``'s full original, or ``None`` if there is no such step."""
        number = step_number(ref)
        bounds = None if number is None else step_bounds(self.messages, number)
        if bounds is None:
            return None
        return transcript(self.messages[bounds[0] : bounds[1]])


def _already_asked(message: BaseMessage | None, call_id: str) -> int:
    """Steps requested by the glimpse calls of ``message`` before ``call_id``."""
    asked = 0
    for call in getattr(message, "tool_calls", None) or ():
        if call.get("id") == call_id:
            break
        if call["name"] == GLIMPSE:
            ids = call["args"].get("ids")
            asked += len(ids) if isinstance(ids, list) else 1
    return asked


def glimpse_tool(limit: int = GLIMPSE_LIMIT) -> BaseTool:
    """The ``glimpse`` tool, for a PACE agent (the prebuilt adds it with ``strategy="pace"``)."""
    check_int("limit", limit, least=1)

    @tool(GLIMPSE)
    def glimpse(
        ids: list[str],
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> str:
        """Return the full original of earlier steps shown condensed, by id (e.g. ["s12"]).
        At most 3 steps per turn."""
        messages: list[BaseMessage] = list(state.get("messages") or ())
        caller = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        left = max(0, limit - _already_asked(caller, tool_call_id))
        source = StepSource(messages)
        parts = []
        for k, ref in enumerate(ids):
            if k >= left:
                parts.append(f"[{ref}] not returned: at most {limit} steps per turn")
                continue
            found = source.resolve(str(ref))
            parts.append(f"[{ref}]\n{found}" if found is not None else f"[{ref}] no such step")
        return "\n\n".join(parts) or "no ids given"

    return glimpse
