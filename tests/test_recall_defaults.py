"""What ``create_context_agent(recall=True)`` gives with its defaults, at small windows.

A seeded session (:func:`~langgraph_ctx.testing.workloads.generate_session`) states
facts once and asks about them many turns later, in other words, with long tool
results in between so that compression archives them. A fact is *kept* when its
value is in the prompt of the question's call (the turn's first model call).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx import Budget, ConfigurationError
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.demo import workload_tools
from langgraph_ctx.markers import RECALL_PREFIX
from langgraph_ctx.middleware.recall import RECALL_END
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import NO_CONTEXT, Workload, generate_session
from langgraph_ctx.tokens import TokenCounter


class Events:
    """Every ledger event the agent writes."""

    def __init__(self) -> None:
        self.entries: list[Any] = []

    def write(self, thread_id: str, namespace: str, entries: Sequence[Any]) -> None:
        self.entries += entries

    async def awrite(self, thread_id: str, namespace: str, entries: Sequence[Any]) -> None:
        self.write(thread_id, namespace, entries)

    @property
    def kinds(self) -> Counter[str]:
        return Counter(e["kind"] for e in self.entries)


def responder(workload: Workload) -> Any:
    """The turn's reply: found by the last user message that ends with a turn's text
    (recall may lead it with its block), else by a tool result's call id."""
    by_call = {s.call_id: t for t in workload.turns for s in t.tool_steps}

    def respond(messages: Sequence[BaseMessage]) -> AIMessage:
        for m in reversed(messages):
            if isinstance(m, ToolMessage) and m.tool_call_id in by_call:
                return AIMessage(by_call[m.tool_call_id].answer)
            if isinstance(m, HumanMessage):
                turn = next((t for t in workload.turns if m.text.endswith(t.user)), None)
                if turn is None:
                    break
                if not turn.tool_steps:
                    return AIMessage(turn.answer)
                calls = [
                    {"name": s.name, "args": s.args, "id": s.call_id, "type": "tool_call"}
                    for s in turn.tool_steps
                ]
                return AIMessage("", tool_calls=calls)
        return AIMessage(NO_CONTEXT)

    return respond


def session(
    budget: Budget | None,
    recall: bool,
    *,
    turns: int = 60,
    seed: int = 3,
    model_window: int | None = 128_000,
    **options: Any,
) -> tuple[list[tuple[str, Any]], Events, list[Any]]:
    """Run the seeded session; returns each probe's value with its question call, the
    events, and every call's prompt."""
    workload = generate_session(turns, seed=seed)
    model = ScriptedChatModel(default=responder(workload), window=model_window)
    if budget is not None:
        options["budget"] = budget
    events = Events()
    agent = create_context_agent(
        model,
        workload_tools(workload),
        recall=recall,
        think=False,
        always_include=list(workload.tool_names),
        events=events,
        **options,
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    asked: list[tuple[str, Any]] = []
    for turn in workload.turns:
        first = len(model.calls)
        agent.invoke({"messages": [HumanMessage(turn.user, id=f"u{turn.index}")]}, config)
        if turn.probe is not None:
            asked.append((turn.probe.value, model.calls[first]))
    return asked, events, model.calls


def kept(asked: list[tuple[str, Any]]) -> int:
    return sum(value in call.text for value, call in asked)


def _question_block(call: Any) -> list[str]:
    """The lines of the recall block the question's own user message leads with."""
    last = call.messages[-1].text
    if not last.startswith(RECALL_PREFIX):
        return []
    return [line for line in last[: last.index(RECALL_END)].split("\n")[1:] if line]


@pytest.mark.parametrize("window", [2_048, 4_096])
@pytest.mark.slow
def test_recall_at_a_small_window_reaches_its_target_and_shows_the_archived_facts(
    window: int,
) -> None:
    """Compression with recall once aimed at 0.1 of the room, below what the protected
    turns need at these windows: every compression ended budget_unreachable. And a
    new question added at most 2.5% of recall's limit to the prompt: one line.
    Compressions now aim where they do with recall off (recall only fills the room
    they leave): at 4K that room holds what the question needs; at 2K it holds a
    line or two, so recall must bring back more than off keeps, not 70%."""
    asked, events, _ = session(Budget.for_window(window), recall=True)
    assert events.kinds["compression"] > 5  # the facts asked about were archived
    assert events.kinds["budget_unreachable"] == 0
    several = [call for _, call in asked if len(_question_block(call)) > 1]
    assert several, "a new question is shown several of the lines recall found"
    off, _, _ = session(Budget.for_window(window), recall=False)
    assert kept(asked) >= kept(off) + 1
    if window >= 4_096:
        assert kept(asked) >= 0.7 * len(asked)


@pytest.mark.slow
def test_recall_on_keeps_at_least_what_recall_off_keeps_at_8k() -> None:
    on, _, _ = session(Budget.for_window(8_192), recall=True, turns=80, seed=1)
    off, _, _ = session(Budget.for_window(8_192), recall=False, turns=80, seed=1)
    assert kept(on) >= kept(off)


@pytest.mark.parametrize("window", [4_096])
@pytest.mark.slow
def test_strategy_none_with_recall_keeps_at_least_what_it_keeps_without(window: int) -> None:
    """``strategy="none"``: the history fills the room on every call. Recall's glimpse
    schema once pushed one more old turn out of each prompt, and then a cut made
    deeper to give recall room left out turns that word search could not find
    again: either way recall on kept fewer answers than off. The prompt's history
    is now cut exactly as with recall off (strategies/recall_room.py)."""
    on, _, _ = session(Budget.for_window(window), recall=True, seed=1, strategy="none")
    off, _, _ = session(Budget.for_window(window), recall=False, seed=1, strategy="none")
    assert kept(on) >= kept(off)


@pytest.mark.parametrize("strategy", ["none", "tiered"])
def test_recall_never_changes_the_history_a_prompt_shows(strategy: str) -> None:
    """Recall gives way to the history: with recall on, every ``call_llm`` prompt shows
    the same messages of the history as with recall off, recall's block aside (the
    block leads the last user message). Cut deeper to make room for recall, or cut
    again by pre-flight's guard because recall's block did not fit, the prompt left
    out turns that word search could not find again. A chat without tools, every
    id fixed, so that the two runs can be compared message for message."""
    filler = (
        "The pallet manifest was reviewed by quality assurance after the Monday sync, "
        "finance approved the freight schedule, and the regional office filed the customs "
        "paperwork pending a second signature from procurement."
    )
    facts = [
        f"Note {i}: the shipment code for order {i} is SC-{1000 + i}. {filler}" for i in range(40)
    ]

    def run(recall: bool) -> tuple[list[list[str]], int]:
        replies = [AIMessage(f"Noted, order {i}.", id=f"a{i}") for i in range(len(facts) + 8)]
        model = ScriptedChatModel(responses=replies)
        events = Events()
        agent = create_context_agent(
            model,
            [],
            budget=Budget.for_window(2_048),
            strategy=strategy,
            recall=recall,
            think=False,
            events=events,
        )
        config = {"configurable": {"thread_id": "t"}}
        said = [*facts, *(f"What is the shipment code for order {i}?" for i in (2, 5, 9, 14))]
        for i, text in enumerate(said):
            agent.invoke({"messages": [HumanMessage(text, id=f"u{i}")]}, config)
        shown = [[str(m.id) for m in c.messages if m.type != "system"] for c in model.calls]
        shown_by_recall = sum(
            1 for e in events.entries if e["kind"] == "recall" and e["data"].get("items")
        )
        return shown, shown_by_recall

    on, blocks = run(True)
    off, _ = run(False)
    assert on == off
    if strategy != "none":  # none fills the window: recall has no room left there
        assert blocks > 0, "recall showed something: the comparison is not vacuous"


def asked_blocks(asked: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """Each probe's value with the text of its question call's recall blocks."""
    return [
        (value, "".join(m.text for m in call.messages if RECALL_PREFIX in m.text))
        for value, call in asked
    ]


@pytest.mark.slow
def test_for_messages_bounds_the_messages_and_recall_together() -> None:
    """``Budget.for_messages(B)``: what the model receives of the conversation, recall
    included, stays within B (it used to get recall's 20,000-token share on top)."""
    cap = 1_500
    _, events, calls = session(Budget.for_messages(cap), recall=True, turns=40)
    counter = TokenCounter()
    # The prompt less the system prompt (none here) and the tool schemas (not in
    # the messages): the messages with the recall blocks in them.
    sizes = [counter.count_messages(list(call.messages)) for call in calls]
    assert any(RECALL_PREFIX in call.text for call in calls)
    assert max(sizes) <= 1.05 * cap  # (each message's framing is counted apart)
    assert events.kinds["compression"] > 0


def test_a_model_whose_window_is_unknown_is_refused_unless_one_is_given() -> None:
    unknown = ScriptedChatModel(window=None)  # a local model: no max_input_tokens
    with pytest.raises(ConfigurationError, match=r"window=.*Budget.for_window"):
        create_context_agent(unknown)
    agent = create_context_agent(unknown, window=8_192, think=False)
    assert agent is not None
    create_context_agent(unknown, budget=Budget.for_window(8_192), think=False)
    with pytest.raises(ConfigurationError, match="not both"):
        create_context_agent(unknown, window=8_192, budget=Budget.for_window(8_192))
    with pytest.raises(ConfigurationError, match="window"):
        create_context_agent(unknown, window=0)


@pytest.mark.slow
def test_the_window_given_is_the_one_the_prompt_keeps_to() -> None:
    """An 8K model's prompt stays within 8K, where the guessed 128K window let it grow
    past 100K."""
    _, _, calls = session(None, recall=True, turns=40, model_window=None, window=8_192)
    counter = TokenCounter()
    sizes = [counter.count_messages(list(call.messages)) for call in calls]
    assert 4_000 < max(sizes) <= Budget.for_window(8_192).red_line
