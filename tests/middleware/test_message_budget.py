"""A message budget that means what it says; no message moves; summaries fit the count."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    ConfigurationError,
    ContextState,
    Pipeline,
    PreflightCheck,
    TieredCompression,
    TokenCounter,
    call_llm_node,
    is_summary,
)
from langgraph_ctx.markers import is_recall_block
from langgraph_ctx.middleware.recall import MemoryRecall
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import generate_session


def graph(
    budget: Budget, counter: TokenCounter | None = None, **compression: Any
) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(default="ok", report_usage=False)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    layers = [PreflightCheck(), TieredCompression(**compression)]
    pipeline = Pipeline(layers, budget=budget, counter=counter)
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver()), model


def test_for_messages_is_a_hard_cap_that_is_never_lent_surplus() -> None:
    budget = Budget.for_messages(2_000)
    assert budget.messages == 2_000 and budget.messages_cap and budget.window == 128_000
    assert (
        Budget.for_messages(2_000, window=32_000).auxiliary == Budget.for_window(32_000).auxiliary
    )
    with pytest.raises(ConfigurationError, match=r"Budget\.messages"):
        Budget.for_messages(0)
    with pytest.raises(ConfigurationError, match=r"Budget\.messages_cap"):
        Budget(messages_cap="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("cap", [1_000, 2_000])
@pytest.mark.slow
def test_every_call_stays_within_the_message_budget_on_a_long_session(cap: int) -> None:
    agent, model = graph(Budget.for_messages(cap))
    config: Any = {"configurable": {"thread_id": "t"}}
    script = generate_session(400, seed=3, tool_rate=0.0)
    for turn in script.turns:
        agent.invoke({"messages": [HumanMessage(turn.user, id=f"u{turn.index}")]}, config)
    counter = TokenCounter()
    sizes = [counter.count_messages(list(call.messages)) for call in model.calls]
    assert max(sizes) <= cap, max(sizes)
    ledger = agent.get_state(config).values["context_ledger"]
    compressions = [e for e in ledger if e["kind"] == "compression"]
    # Trigger and target alike: compression leaves room for many turns, not one.
    assert 0 < len(compressions) <= len(model.calls) // 8


def test_system_messages_keep_their_order_and_their_place() -> None:
    agent, _ = graph(Budget.for_messages(600), min_protected_turns=1)
    config: Any = {"configurable": {"thread_id": "t"}}
    sent: list[BaseMessage] = [SystemMessage("You are terse.", id="sys")]
    for i in range(60):
        turn: list[BaseMessage] = [
            HumanMessage(f"Question {i} about pallets and docks.", id=f"u{i}")
        ]
        if i % 7 == 3:
            turn.append(SystemMessage(f"Policy note {i}: weigh pallets.", id=f"s{i}"))
        agent.invoke({"messages": [*(sent if i == 0 else []), *turn]}, config)
        sent = sent + turn if i else [*sent, *turn]
        history = agent.get_state(config).values["messages"]
        survivors = [m.id for m in history if not is_summary(m)]
        order = {m.id: k for k, m in enumerate(sent)}
        assert [order[i] for i in survivors if i in order] == sorted(
            order[i] for i in survivors if i in order
        )
        assert history[0].id == "sys"  # the system prompt leads, always
        # A later system message sits in its turn, after the summaries, never ahead of them.
        last_summary = max((k for k, m in enumerate(history) if is_summary(m)), default=-1)
        assert all(
            k > last_summary
            for k, m in enumerate(history)
            if m.type == "system" and k and not is_summary(m)
        )


class Wordy:
    """A summarizer that writes twice what it is asked for, by any count."""

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        return "\n".join(f"- kept line {i} about pallets" for i in range(max_tokens))

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        return self.summarize(messages, max_tokens=max_tokens)


@pytest.mark.parametrize("summarizer", [None, Wordy()], ids=["extractive", "overrunning"])
@pytest.mark.slow
def test_summaries_fit_what_the_pipeline_counts(summarizer: Any) -> None:
    counter = TokenCounter("o200k_base")  # not the summarizer's own cl100k
    agent, _ = graph(Budget.for_messages(1_200), counter=counter, summarizer=summarizer)
    config: Any = {"configurable": {"thread_id": "t"}}
    for i in range(80):
        text = f"Turn {i}: shipment SHP-{i:04d} to dock {i % 9}, weight {i * 13} kg, priority high."
        agent.invoke(
            {"messages": [HumanMessage(text, id=f"u{i}"), AIMessage("ok", id=f"a{i}")]}, config
        )
    ledger = agent.get_state(config).values["context_ledger"]
    asked = [e["data"] for e in ledger if e["kind"] == "compression"]
    assert asked
    # Every summary is at most what compression asked for, by the pipeline's counter.
    assert all(d["tokens_after"] <= d["max_tokens"] for d in asked), asked
    for summary in (m for m in agent.get_state(config).values["messages"] if is_summary(m)):
        assert counter.count_text(summary.text.partition("\n")[2]) <= max(
            d["max_tokens"] for d in asked
        )


@pytest.mark.parametrize("b", [1_000, 2_000])
@pytest.mark.slow
def test_messages_and_the_recall_block_stay_within_b_as_the_provider_counts(b: int) -> None:
    # The messages get 3B/4, recall's block B/4, and the prompt limit is B: the
    # block stands among the messages yet is reported as auxiliary. Counted twice
    # by the ceiling, a block that fitted was left out and the prompt reported
    # unsent, so calibration learnt a ratio under 1 from a provider that counts
    # exactly as we do, and later calls went over B.
    archive = InMemoryArchive()
    spare = math.ceil(b / 0.85) - b
    budget = Budget(
        window=b + spare,
        system=0,
        messages=b - b // 4,
        tools=0,
        auxiliary=b // 4,
        output_reserve=spare - spare // 3,
        safety_margin=spare // 3,
        messages_cap=True,
    )
    model = ScriptedChatModel(default="ok")  # reports usage with our counter
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    layers = [PreflightCheck(), TieredCompression(archive=archive), MemoryRecall(archive=archive)]
    agent = Pipeline(layers, budget=budget).attach(builder).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    for turn in generate_session(300, seed=3, tool_rate=0.0).turns:
        agent.invoke({"messages": [HumanMessage(turn.user, id=f"u{turn.index}")]}, config)
    counter = TokenCounter()
    sizes = [counter.count_messages(list(call.messages)) for call in model.calls]
    recalled = [c for c in model.calls if any(is_recall_block(m) for m in c.messages)]
    assert len(recalled) > len(model.calls) // 2  # recall filled its share most calls
    assert max(sizes) <= b, max(sizes)
