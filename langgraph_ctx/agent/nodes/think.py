"""The ``think`` node: structured thinking with confidence tracking (paper, section 3).

The model fills a typed :class:`Thought`. The agent acts when confidence
reaches ``tau`` and no further thought is needed, or after ``max_rounds``
thoughts in a turn. After a tool result, the last thought's confidence is
raised by ``alpha * gain * (1 - confidence)``, where the gain is the share of
its information gaps the result addresses; if that reaches ``tau``, no new
thought (and no model call) is needed.

Thoughts are ephemeral: they live in the ``thoughts`` field for the current
turn and never enter ``messages``. ``call_llm`` shows the current thought to
the model for that call only, and adds to the history just a compact note of
the chosen action and why, a few dozen tokens, next to its answer (not before
the call: a trailing assistant message would read as a prefill). Thought
tokens and answer tokens are tallied in ``session`` for the reasoning
overhead ratio.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import BaseModel, Field

from langgraph_ctx._checks import check_bool, check_int, check_number
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.history.breakpoints import TAIL, is_anthropic, mark_breakpoints
from langgraph_ctx.ledger import strategies as events
from langgraph_ctx.markers import KEY
from langgraph_ctx.middleware.placement import (
    Placement,
    check_placement,
    final_placement,
    place_messages,
)
from langgraph_ctx.middleware.thought import (
    carried_thought,
    think_notes,
    turn_thoughts,
)
from langgraph_ctx.middleware.thought import turn_id as _turn_id
from langgraph_ctx.pipeline.context import current_context
from langgraph_ctx.retrieval.text import content_words
from langgraph_ctx.tokens import TokenCounter


class SuggestedAction(BaseModel):
    kind: Literal["tool_call", "clarify", "respond"]
    detail: str = Field(description="the tool to call, the question, or the gist of the answer")
    expected_utility: float = Field(ge=0.0, le=1.0)


class Thought(BaseModel):
    """One structured thought."""

    hypothesis: str
    confidence: float = Field(ge=0.0, le=1.0)
    gaps: list[str] = Field(default_factory=list, description="information still missing")
    next_thought_needed: bool = False
    actions: list[SuggestedAction] = Field(default_factory=list, description="best first")


@dataclass(frozen=True, kw_only=True)
class ThinkSettings:
    """When the agent stops thinking and acts."""

    tau: float = 0.7
    """Confidence needed to act."""
    max_rounds: int = 3
    """Most thoughts per turn; the agent acts after the last one whatever its confidence."""
    alpha: float = 0.5
    """How much a tool result that fills every gap raises confidence (0-1)."""

    def __post_init__(self) -> None:
        for name in ("tau", "alpha"):
            value = check_number(f"ThinkSettings.{name}", getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"ThinkSettings.{name}", f"must be in [0, 1], got {value}")
        check_int("ThinkSettings.max_rounds", self.max_rounds, least=1)


def update_confidence(confidence: float, gain: float, alpha: float) -> float:
    """``confidence + alpha * gain * (1 - confidence)``: never above 1, never down."""
    return confidence + alpha * max(0.0, min(1.0, gain)) * (1.0 - confidence)


def open_gaps(gaps: Sequence[str], text: str) -> list[str]:
    """The ``gaps`` that ``text`` leaves open. A gap is filled when at least half of its
    content words appear in ``text``; function words ("the", "what") fill nothing."""
    found = set(content_words(text))  # once: a tool result can be long, gaps are few

    def filled(gap: str) -> bool:
        wanted = set(content_words(gap))
        return bool(wanted) and len(wanted & found) * 2 >= len(wanted)

    return [g for g in gaps if not filled(g)]


def information_gain(gaps: Sequence[str], text: str) -> float:
    """The share of ``gaps`` that ``text`` fills."""
    return _gain(gaps, open_gaps(gaps, text))


def _gain(gaps: Sequence[str], still_open: Sequence[str]) -> float:
    return (len(gaps) - len(still_open)) / len(gaps) if gaps else 0.0


def graph_state(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """The node's input as LangGraph gave it. Under a pipeline the node is handed a
    view that middleware rewrote for this call (PACE condenses the turn's question
    into a block of its own), while the router after ``think`` reads the graph's
    state: the turn a thought belongs to must be read where the router reads it,
    or the router never finds this turn's thoughts and ``think`` runs again and
    again (GraphRecursionError)."""
    ctx = current_context()
    return ctx.state if ctx is not None else state


def ready_to_act(state: Mapping[str, Any], settings: ThinkSettings) -> bool:
    thoughts = turn_thoughts(state)
    if not thoughts:
        return False
    last = thoughts[-1]
    confident = last["confidence"] >= settings.tau and not last["next_thought_needed"]
    return confident or len(thoughts) >= settings.max_rounds


def route_after_think(
    settings: ThinkSettings, *, act: str = "fetch_tools"
) -> Callable[[Mapping[str, Any]], str]:
    """Conditional edge: ``think`` again, or go on to ``act``."""

    def route(state: Mapping[str, Any]) -> str:
        return act if ready_to_act(state, settings) else "think"

    return route


def think_node(
    model: BaseChatModel,
    settings: ThinkSettings | None = None,
    *,
    system_prompt: str | None = None,
    placement: Placement | None = None,
    cache_breakpoints: bool = True,
) -> Runnable[Any, dict[str, Any]]:
    """A graph node (sync and async) producing one :class:`Thought` per run.

    ``system_prompt``: the agent's, sent first as ``call_llm`` sends it, so that
    both nodes' prompts share one prefix (what a provider's prompt cache serves).
    ``placement``: as for :func:`~langgraph_ctx.agent.nodes.call_llm_node`; the
    thinking instructions are per-call context, placed in the last user message.
    ``cache_breakpoints``: with an Anthropic model, the prompt marks the cache's
    breakpoints as ``call_llm``'s does (a thought is a call with the whole history).
    """
    settings = settings or ThinkSettings()
    if placement is not None:
        check_placement(placement, "think_node.placement")
    check_bool("think_node.cache_breakpoints", cache_breakpoints)
    marked = cache_breakpoints and is_anthropic(model)
    extra: dict[str, Any] = dict(TAIL) if marked else {}
    counter = TokenCounter()
    structured = model.with_structured_output(Thought)

    def after_tools(state: Mapping[str, Any]) -> Thought | None:
        # Raise the last thought's confidence by what the tool results filled in
        # (read from the graph's state: the view may show them condensed).
        state = graph_state(state)
        messages = state.get("messages") or []
        thoughts = turn_thoughts(state)
        if not thoughts or not messages or messages[-1].type != "tool":
            return None
        results = []
        for m in reversed(messages):
            if m.type != "tool":
                break
            results.append(m.text)
        last = Thought.model_validate({k: v for k, v in thoughts[-1].items() if k != "turn"})
        still_open = open_gaps(last.gaps, "\n".join(results))
        gain = _gain(last.gaps, still_open)
        return last.model_copy(
            update={
                "confidence": update_confidence(last.confidence, gain, settings.alpha),
                "gaps": still_open,
            }
        )

    def prompt(state: Mapping[str, Any]) -> list[BaseMessage]:
        # Ephemeral: they change every call, so placement keeps them after the history.
        notes = think_notes(graph_state(state))
        head = [SystemMessage(system_prompt)] if system_prompt else []
        messages = [*head, *(state.get("messages") or []), *notes]
        mode = final_placement(placement)
        placed = place_messages(messages, mode) if mode is not None else messages
        return mark_breakpoints(placed) if marked else placed

    def finish(state: Mapping[str, Any], thought: Thought, *, called: bool) -> dict[str, Any]:
        state = graph_state(state)  # the turn as the router will read it
        record = {**thought.model_dump(), "turn": _turn_id(state.get("messages") or [])}
        thoughts = [*turn_thoughts(state), record]
        update: dict[str, Any] = {"thoughts": thoughts}
        tokens = counter.count_text(json.dumps(record)) if called else 0
        session = dict(state.get("session") or {})
        update["session"] = {"reasoning_tokens": int(session.get("reasoning_tokens", 0)) + tokens}
        ctx = current_context()
        if ctx is not None:
            ctx.record(
                "thought",
                events.Thought(
                    confidence=round(thought.confidence, 3),
                    tokens=tokens,
                    round=len(thoughts),
                    model_call=called,
                ),
            )
        return update

    def run(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        updated = after_tools(state)
        if updated is not None and updated.confidence >= settings.tau:
            return finish(state, updated, called=False)
        reply = structured.invoke(prompt(state), config, **extra)
        return finish(state, _as_thought(reply), called=True)

    async def arun(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        updated = after_tools(state)
        if updated is not None and updated.confidence >= settings.tau:
            return finish(state, updated, called=False)
        reply = await structured.ainvoke(prompt(state), config, **extra)
        return finish(state, _as_thought(reply), called=True)

    return RunnableLambda(run, afunc=arun, name="think")


def _as_thought(value: Any) -> Thought:
    return value if isinstance(value, Thought) else Thought.model_validate(value)


def note(thought: Thought) -> AIMessage:
    """The compact trace of a thought that enters the history: action and why."""
    action = thought.actions[0] if thought.actions else None
    chosen = f"{action.kind}: {action.detail}" if action else "respond"
    why = thought.hypothesis[:160]
    text = f"[plan] {chosen[:160]} (because: {why}; confidence {thought.confidence:.2f})"
    return AIMessage(text, name="think", additional_kwargs={KEY: {"note": True}})


def current_thought(state: Mapping[str, Any]) -> Thought | None:
    """The latest thought of this turn, if the agent thought at all: the one
    ``call_llm`` shows (:func:`~langgraph_ctx.middleware.thought.carried_thought`)."""
    thought = carried_thought(state)
    return None if thought is None else Thought.model_validate(thought)


def reasoning_overhead(state: Mapping[str, Any]) -> float:
    """Reasoning tokens / actionable tokens so far in the session (0 if no answers yet)."""
    session = state.get("session") or {}
    actionable = int(session.get("actionable_tokens", 0))
    return int(session.get("reasoning_tokens", 0)) / actionable if actionable else 0.0
