"""The thought a ``call_llm`` call carries: one definition for the node that sends it
and for pre-flight, which measures it.

With think on, ``call_llm`` shows the model the turn's latest thought, for that call
only. Pre-flight must count exactly that message: when it counted something else
(every thought of the turn, as JSON), the prompt it measured was not the prompt sent,
and calibration, learning actual / measured from the provider's usage report, took
the difference for a tokenizer's and under-measured the calls after it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.core import is_edited
from langgraph_ctx.markers import KEY, is_view_only

THOUGHT_PREFIX = "[Current thought] "

THINK_PROMPT = (
    "Before acting, think about the conversation so far. State your hypothesis about what "
    "the user needs, your confidence (0-1), the information you are missing, whether you "
    "need another thought before acting, and your suggested next actions ranked by expected "
    "utility: a tool call (name the tool), a clarifying question, or a direct response."
)
EARLIER_PREFIX = "Your latest thought this turn:\n"


def turn_id(messages: Sequence[BaseMessage]) -> str:
    """The id of the user's latest message. Not a user message a strategy made: ARC's
    checklist and memory and AdaCoM's working note follow it in the history and get a
    new id at each edit (the turn would change under its own thoughts), and PACE's
    condensed blocks are in no state."""
    for m in reversed(messages):
        if m.type == "human" and not (is_view_only(m) or is_note(m) or is_edited(m)):
            return str(m.id)
    return ""


def turn_thoughts(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """This turn's thoughts (older ones belong to earlier turns and are ignored)."""
    turn = turn_id(state.get("messages") or ())
    return [t for t in state.get("thoughts") or () if t.get("turn") == turn]


def carried_thought(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The thought a call carries: this turn's latest, without its turn id."""
    thoughts = turn_thoughts(state)
    return {k: v for k, v in thoughts[-1].items() if k != "turn"} if thoughts else None


def thought_message(state: Mapping[str, Any]) -> SystemMessage | None:
    """The ephemeral message that shows the model the carried thought, or ``None``
    if the agent did not think this turn. ``state``: the graph's (the router's)."""
    thought = carried_thought(state)
    if thought is None:
        return None
    text = THOUGHT_PREFIX + json.dumps(thought, separators=(",", ":"), ensure_ascii=False)
    return SystemMessage(text, additional_kwargs={KEY: {"ephemeral": True}})


def think_notes(state: Mapping[str, Any]) -> list[SystemMessage]:
    """The ephemeral messages a ``think`` call adds after the history: the thinking
    instructions, and the turn's latest thought if it has one.

    Only the latest: a turn of many tool rounds thinks once a round, and showing
    every earlier thought grew the prompt by a thought a round until it no longer
    fitted the window. Each earlier thought's action and reason stay in the history
    as its ``[plan]`` trace. ``state``: the graph's (the router's)."""
    notes = [SystemMessage(THINK_PROMPT, additional_kwargs={KEY: {"ephemeral": True}})]
    latest = carried_thought(state)
    if latest is not None:
        text = EARLIER_PREFIX + json.dumps(latest)
        notes.append(SystemMessage(text, additional_kwargs={KEY: {"ephemeral": True}}))
    return notes
