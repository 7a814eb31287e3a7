"""The hard ceiling: the prompt sent never exceeds the budget's prompt limit.

Before it, a 22,119-token tool result in a 4,000-token window went out as a
4,420-token digest (tokens / expected ratio, never compacted again): over the
whole window, a call the provider must refuse.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    BudgetExceededError,
    ContextState,
    Pipeline,
    PreflightCheck,
    call_llm_node,
    pin,
)
from langgraph_ctx.compression.ceiling import CUT_MARKER
from langgraph_ctx.markers import is_compacted, is_summary
from langgraph_ctx.state import with_keys
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.strategies.registry import STRATEGIES, strategy_middleware
from langgraph_ctx.strategies.tiered.summaries import summary_message
from langgraph_ctx.testing import ScriptedChatModel
from tests.middleware.test_compression import COUNTER, FILLER, cfg, events, make_graph

LIMIT = Budget.for_window(4_000).prompt_limit


def big_result(call_id: str, rows: int) -> list[BaseMessage]:
    records = [
        {"invoice": f"INV-{k:05d}", "amount": 100 * k, "vendor": f"V{k}"} for k in range(rows)
    ]
    return [
        AIMessage("", tool_calls=[{"name": "list", "args": {}, "id": call_id}], id=f"c-{call_id}"),
        ToolMessage(json.dumps(records), tool_call_id=call_id, id=f"r-{call_id}"),
    ]


@pytest.mark.parametrize("rows", [900, 2_300])
@pytest.mark.slow
def test_a_result_larger_than_the_window_is_reduced_until_the_prompt_fits(rows: int) -> None:
    graph, model, compression = make_graph(window=4_000)
    config = cfg(f"ceiling-{rows}")
    graph.invoke({"messages": [HumanMessage("Audit the open invoices.", id="task")]}, config)
    exchange = big_result("call_0", rows)
    assert COUNTER.count_message(exchange[1]) > 4_000 * 5  # the 22K and more
    graph.invoke({"messages": exchange}, config)
    for call in model.calls:
        assert COUNTER.count_messages(list(call.messages)) <= LIMIT
    sent = list(model.calls[-1].messages)
    result = next(m for m in sent if m.id == "r-call_0")
    assert is_compacted(result) and result.tool_call_id == "call_0"
    assert "INV-0" in result.text  # what is left still names records
    assert compression.original(f"ceiling-{rows}", "r-call_0") == exchange[1]  # nothing lost
    [entry] = events(graph, config, "ceiling_enforced")
    assert entry["ids"] == ["r-call_0"] and entry["total_after"] <= LIMIT
    if entry["cut"]:
        assert CUT_MARKER in result.text


def test_pinned_content_that_cannot_fit_raises_before_the_model_is_called() -> None:
    graph, model, _ = make_graph(window=4_000)
    config = cfg("giant-raise")
    graph.invoke({"messages": [HumanMessage("Read the contract.", id="task")]}, config)
    before = graph.get_state(config).values["messages"]
    calls = len(model.calls)
    giant = pin(HumanMessage("Contract text: " + FILLER * 80, id="giant"))
    with pytest.raises(BudgetExceededError) as info:
        graph.invoke({"messages": [giant]}, config)
    assert info.value.needed > info.value.available == LIMIT
    assert len(model.calls) == calls  # never sent
    # LangGraph keeps the input; nothing of the failed call is persisted.
    assert graph.get_state(config).values["messages"] == [*before, giant]


def graph_with(strategy: str | None, *, window: int = 4_000) -> tuple[Any, Any, InMemoryArchive]:
    """A graph with pre-flight and ``strategy`` from the agent's registry (``None``: no
    strategy at all, pre-flight alone)."""
    model = ScriptedChatModel(default="ok", report_usage=False)
    archive = InMemoryArchive()
    layers: list[Any] = [PreflightCheck()]
    state: type[Any] = ContextState
    if strategy is not None:
        layer = strategy_middleware(strategy, archive=archive)
        layers.append(layer)
        # A strategy with keys of its own (PACE's pace_chunks) declares them: the
        # graph's state takes them as create_context_agent's does.
        if (schema := getattr(layer, "state_schema", None)) is not None:
            state = with_keys(ContextState, schema)
    builder = StateGraph(state)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline(layers, budget=Budget.for_window(window))
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver()), model, archive


@pytest.mark.parametrize("strategy", [*STRATEGIES, None])
@pytest.mark.slow
def test_whatever_the_strategy_the_prompt_sent_stays_within_the_limit(strategy: str | None) -> None:
    """Before, the ceiling lived in TieredCompression: with no strategy, a result
    larger than the window went out whole (18K tokens to a 4K window)."""
    graph, model, archive = graph_with(strategy)
    thread = f"any-{strategy}"
    config = cfg(thread)
    graph.invoke({"messages": [HumanMessage("Audit the open invoices.", id="task")]}, config)
    exchange = big_result("call_0", 900)
    assert COUNTER.count_message(exchange[1]) > 4 * 4_000
    graph.invoke({"messages": exchange}, config)
    for call in model.calls:
        assert COUNTER.count_messages(list(call.messages)) <= LIMIT
    sent = list(model.calls[-1].messages)
    assert next(m.id for m in sent if m.type == "human") == "task"
    [result] = [m for m in sent if isinstance(m, ToolMessage)]
    assert result.tool_call_id == "call_0"  # reduced (digest, extraction), still paired
    # Nothing lost: the original is in the history, or archived under its id.
    state = {m.id: m for m in graph.get_state(config).values["messages"]}
    kept = state.get("r-call_0")
    assert kept == exchange[1] or archive.get(thread, "r-call_0") == exchange[1]


def test_without_a_strategy_the_prompt_is_fitted_and_the_history_kept_whole() -> None:
    graph, model, _ = graph_with(None)
    config = cfg("none-history")
    graph.invoke({"messages": [HumanMessage("Audit the open invoices.", id="task")]}, config)
    for k in range(6):  # an old exchange per turn, then one too large
        graph.invoke({"messages": [HumanMessage(f"Turn {k}: " + FILLER * 3, id=f"u{k}")]}, config)
    graph.invoke({"messages": big_result("call_0", 900)}, config)
    sent = list(model.calls[-1].messages)
    assert COUNTER.count_messages(sent) <= LIMIT
    [entry, *_] = events(graph, config, "ceiling_enforced")
    assert entry["scope"] == "prompt" and entry["total_after"] <= LIMIT
    history = graph.get_state(config).values["messages"]
    assert "r-call_0" in {m.id for m in history}
    whole = next(m for m in history if m.id == "r-call_0")
    assert not is_compacted(whole)  # the checkpoint keeps what the tool returned
    assert all(m.id in {h.id for h in history} for m in sent if m.id)  # nothing invented


def test_an_unpinned_message_larger_than_the_window_is_cut_for_the_call_not_refused() -> None:
    """Before, this raised BudgetExceededError: the ceiling reduced tool results
    only, and the current turn's own text was over the limit (a needless refusal:
    nothing in it was pinned)."""
    graph, model, _ = make_graph(window=4_000)
    config = cfg("huge-user")
    graph.invoke({"messages": [HumanMessage("Read the contract.", id="task")]}, config)
    huge = HumanMessage("Contract text: " + FILLER * 80, id="huge")
    assert COUNTER.count_message(huge) > 4_000
    graph.invoke({"messages": [huge]}, config)
    sent = list(model.calls[-1].messages)
    assert COUNTER.count_messages(sent) <= LIMIT
    cut = next(m for m in sent if m.id == "huge")
    assert CUT_MARKER in cut.text and cut.text.startswith("Contract text:")
    [entry] = events(graph, config, "ceiling_enforced")
    assert entry["scope"] == "prompt" and entry["cut"] == ["huge"]
    history = graph.get_state(config).values["messages"]
    assert next(m for m in history if m.id == "huge") == huge  # whole in the history


def test_summaries_too_large_for_the_call_are_cut_for_it_not_refused() -> None:
    """Before, this raised BudgetExceededError: with every unpinned message cut to
    its header, the summaries counted as what could not give way. tau-bench at 4K
    (a 1,252-token policy, a turn of three tool rounds, 1,000 tokens of summaries)
    ended its turn there. The summary is cut in the prompt only: the history keeps
    it whole (and the archive its originals)."""
    graph, model, _ = graph_with(None)
    config = cfg("huge-summary")
    summary = summary_message(
        "The customer's open invoices: " + FILLER * 80, 1, "u0", covers=["u0"]
    )
    task = HumanMessage("Audit the open invoices.", id="task")
    graph.invoke({"messages": [task, summary, HumanMessage("Go on.", id="u1")]}, config)
    assert COUNTER.count_message(summary) > LIMIT
    sent = list(model.calls[-1].messages)
    assert COUNTER.count_messages(sent) <= LIMIT
    shown = next(m for m in sent if m.id == summary.id)
    assert is_summary(shown) and CUT_MARKER in shown.text
    assert shown.text.startswith(summary.text.splitlines()[0])  # its header: what it covers
    assert [m.id for m in sent] == ["task", summary.id, "u1"]  # the task and the turn whole
    [entry] = events(graph, config, "ceiling_enforced")
    assert entry["cut"] == [summary.id]
    history = graph.get_state(config).values["messages"]
    assert next(m for m in history if m.id == summary.id) == summary


def test_pinned_content_over_the_limit_is_refused_without_a_strategy_too() -> None:
    graph, model, _ = graph_with(None)
    config = cfg("none-pinned")
    graph.invoke({"messages": [HumanMessage("Read the contract.", id="task")]}, config)
    before = graph.get_state(config).values["messages"]
    giant = pin(HumanMessage("Contract text: " + FILLER * 80, id="giant"))
    with pytest.raises(BudgetExceededError) as info:
        graph.invoke({"messages": [giant]}, config)
    assert info.value.available == LIMIT and len(model.calls) == 1
    assert graph.get_state(config).values["messages"] == [*before, giant]


def test_a_compression_that_leaves_the_history_over_compresses_again() -> None:
    """Planned with an optimistic ratio (20) right under the line (target 0.99),
    the first pass expects its summary to take span / 20 tokens; the smallest
    summary is 150, so the history stays over the prompt limit. There is no tool
    result to reduce: the ceiling compresses everything before the current turn
    again into one meta-summary, and the history itself fits (pre-flight's
    last-line guard has nothing to cut)."""
    graph, model, compression = make_graph(
        window=4_000, target_utilization=0.99, expected_ratio=20.0
    )
    config = cfg("compress-again")
    turns: list[BaseMessage] = [HumanMessage("Audit the open invoices.", id="task")]
    for k in range(10):
        turns += [
            HumanMessage(f"Notes {k}: INV-{k:04d} " + FILLER * 8, id=f"u{k}"),
            AIMessage(f"Noted INV-{k:04d}.", id=f"a{k}"),
        ]
    turns.append(HumanMessage("Which invoices are still open?", id="now"))
    assert COUNTER.count_messages(turns) > LIMIT
    graph.invoke({"messages": turns}, config)
    first, again = events(graph, config, "compression")
    assert first["path"] == "synchronous" and again["path"] == "ceiling" and again["meta"]
    history = graph.get_state(config).values["messages"]
    assert COUNTER.count_messages(history[:-1]) <= LIMIT  # the history fits, not only the call
    task, summary, now, _reply = history  # everything between is in the meta-summary
    assert (task.id, now.id) == ("task", "now") and is_summary(summary)
    assert not [e for e in events(graph, config, "ceiling_enforced") if e["scope"] == "prompt"]
    [call] = model.calls
    assert COUNTER.count_messages(list(call.messages)) <= LIMIT
    assert compression.original("compress-again", "u9") == turns[19]  # archived, not lost
