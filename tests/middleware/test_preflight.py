"""Pre-flight: the usage report, the ledger, the stream, calibration."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    BudgetExceededError,
    ContextState,
    Pipeline,
    PreflightCheck,
    TokenCounter,
    UsageReport,
    View,
    as_middleware,
    call_llm_node,
)
from langgraph_ctx.testing import ScriptedChatModel

COUNTER = TokenCounter()


@tool
def lookup_order(order_id: str, include_history: bool = False) -> str:
    """Look up an order by its id and return status, amount and shipping address."""
    return "{}"


def graph_with(
    model: ScriptedChatModel,
    *,
    window: int = 8_000,
    later: list[Any] | None = None,
    system_prompt: str | None = None,
    saver: Any = None,
) -> Any:
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model, system_prompt=system_prompt))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline(
        [PreflightCheck(), *(later or [])],
        budget=Budget.for_window(window),
        tools=[lookup_order],
        system_prompt=system_prompt,
    )
    return pipeline.attach(builder).compile(checkpointer=saver or InMemorySaver())


def reports_seen() -> tuple[list[UsageReport], Any]:
    seen: list[UsageReport] = []

    @as_middleware(priority=50)
    def spy(view: View, ctx: Any, call_next: Any) -> Any:
        seen.append(ctx.usage)  # later middleware reads what pre-flight wrote
        return call_next(view)

    return seen, spy


def test_report_measures_every_component() -> None:
    seen, spy = reports_seen()
    model = ScriptedChatModel(default="ok", report_usage=False)
    graph = graph_with(model, later=[spy], system_prompt="You are a careful auditor.")
    msgs = [
        SystemMessage("Policy: never refund twice.", id="s"),
        HumanMessage("Where is order ORD-1?", id="h"),
    ]
    graph.invoke(
        # The turn's thought (of the latest user message): the one call_llm sends.
        {
            "messages": msgs,
            "thoughts": [{"hypothesis": "user wants status", "confidence": 0.5, "turn": "h"}],
        },
        {"configurable": {"thread_id": "a"}},
    )
    (report,) = seen
    # The node's system prompt is sent as a message of its own: its overhead counts.
    prompt = SystemMessage("You are a careful auditor.")
    assert report.used["system"] == COUNTER.count_message(msgs[0]) + COUNTER.count_message(prompt)
    assert report.used["messages"] == COUNTER.count_message(msgs[1])
    assert report.used["tools"] == COUNTER.count_tool(lookup_order) > 20
    sent = SystemMessage('[Current thought] {"hypothesis":"user wants status","confidence":0.5}')
    assert report.used["auxiliary"] == COUNTER.count_message(sent)
    assert report.total == sum(report.used.values())
    assert report.utilization == report.total / 8_000
    assert report.zone == "green"


def test_red_zone_and_rebalanced_allocation() -> None:
    seen, spy = reports_seen()
    graph = graph_with(ScriptedChatModel(default="ok"), window=4_000, later=[spy])
    big = HumanMessage("audit line item 42 amount $1,234.56 " * 400, id="big")
    with pytest.raises(BudgetExceededError):  # the task alone is over the prompt limit
        graph.invoke({"messages": [big]}, {"configurable": {"thread_id": "b"}})
    (report,) = seen
    assert report.zone == "red"
    assert "messages" in report.over  # still over after borrowing every surplus
    budget = Budget.for_window(4_000)
    assert report.allocation["messages"] > budget.messages  # it borrowed
    assert sum(report.allocation.values()) == budget.allocated_total


def test_ledger_and_custom_stream_get_one_entry_per_call() -> None:
    graph = graph_with(ScriptedChatModel(default="ok"))
    config: Any = {"configurable": {"thread_id": "c"}}
    events = [
        c["langgraph_ctx"]
        for c in graph.stream({"messages": [HumanMessage("hi")]}, config, stream_mode="custom")
    ]
    graph.invoke({"messages": [HumanMessage("again")]}, config)
    ledger = graph.get_state(config).values["context_ledger"]
    assert [e["kind"] for e in events] == ["utilization"]
    assert [e["kind"] for e in ledger] == ["utilization", "utilization"]
    assert [e["seq"] for e in ledger] == [0, 1]
    assert ledger[1]["data"]["total"] > ledger[0]["data"]["total"]
    assert ledger[0]["data"]["actual_input"] > 0  # the provider's count, recorded after the call


def test_calibration_learns_from_usage_and_survives_resume() -> None:
    seen, spy = reports_seen()
    model = ScriptedChatModel(default="ok", usage_scale=1.5)  # the provider counts 1.5x ours
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "d"}}
    graph = graph_with(model, later=[spy], saver=saver)
    for i in range(3):
        graph.invoke({"messages": [HumanMessage(f"question {i} " * 20)]}, config)
    assert seen[0].calibration == 1.0
    last = seen[-1]
    assert 1.3 <= last.calibration <= 1.7
    assert last.total > last.raw_total  # estimates are scaled up

    # A new process (new pipeline, empty caches) resumes the thread from its checkpoint.
    seen2, spy2 = reports_seen()
    graph2 = graph_with(ScriptedChatModel(default="ok", usage_scale=1.5), later=[spy2], saver=saver)
    graph2.invoke({"messages": [HumanMessage("after restart")]}, config)
    assert 1.3 <= seen2[0].calibration <= 1.7


def test_async_path_writes_the_same_report() -> None:
    import asyncio

    seen, spy = reports_seen()
    graph = graph_with(ScriptedChatModel(default=AIMessage("ok")), later=[spy])
    asyncio.run(
        graph.ainvoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "e"}})
    )
    assert seen[0].used["messages"] == COUNTER.count_message(HumanMessage("hi"))


@pytest.mark.slow
def test_long_session_recounts_nothing_old() -> None:
    model = ScriptedChatModel(default="ok")
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck()], budget=Budget())
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "f"}}
    for i in range(40):
        graph.invoke({"messages": [HumanMessage(f"turn {i}")]}, config)
    session = next(iter(pipeline._sessions.values()))
    # 40 user + 40 assistant messages, each tokenized once, however long the history grew.
    assert session.cache.counted <= 80 + 1


def test_calibration_compares_the_provider_with_what_was_sent() -> None:
    from langgraph_ctx import TieredCompression

    # The provider counts exactly as we do; after a compression it sees the
    # smaller prompt. Learning against the pre-compression count would drag
    # the ratio well under 1 and make the red line fire late.
    model = ScriptedChatModel(default="ok", usage_scale=1.0)
    graph = graph_with(model, window=3_000, later=[TieredCompression()])
    config: Any = {"configurable": {"thread_id": "cal"}}
    for i in range(40):
        graph.invoke({"messages": [HumanMessage(f"note {i}: invoice INV-{i:04d} " * 6)]}, config)
    ledger = graph.get_state(config).values["context_ledger"]
    assert any(e["kind"] == "compression" for e in ledger)
    ratios = [e["data"]["calibration"] for e in ledger if e["kind"] == "utilization"]
    assert all(0.97 <= r <= 1.03 for r in ratios), ratios  # dipped to 0.91 before the fix


@pytest.mark.slow
async def test_streamed_events_are_the_checkpointed_ledger_entries() -> None:
    from langgraph_ctx import TieredCompression

    # Pre-flight fills in the provider's count after the call, and compression
    # lowers what is finally sent: a consumer that forwards each event as it
    # arrives must get the entry the ledger keeps, not an earlier draft of it.
    graph = graph_with(ScriptedChatModel(default="ok"), window=3_000, later=[TieredCompression()])
    config: Any = {"configurable": {"thread_id": "s"}}
    streamed: list[Any] = []
    for i in range(40):
        turn = {"messages": [HumanMessage(f"note {i}: invoice INV-{i:04d} " * 6)]}
        async for chunk in graph.astream(turn, config, stream_mode="custom"):
            streamed.append(copy.deepcopy(chunk["langgraph_ctx"]))  # as sent on, at receipt
    ledger = (await graph.aget_state(config)).values["context_ledger"]
    assert any(e["kind"] == "compression" for e in streamed)
    assert len(streamed) > len(ledger)  # the ledger keeps only the last entries
    assert streamed[-len(ledger) :] == ledger
    used = [e["data"] for e in streamed if e["kind"] == "utilization"]
    assert all(u["actual_input"] > 0 for u in used)
    assert any(u["sent_utilization"] < u["utilization"] for u in used)  # after compression


def test_preflight_completes_its_own_entry_whatever_was_recorded_before_it() -> None:
    @as_middleware(priority=1, writes=["context_ledger"])
    def outer(view: View, ctx: Any, call_next: Any) -> Any:
        ctx.record("outer", {"note": "recorded before pre-flight's"})
        return call_next(view)

    graph = graph_with(ScriptedChatModel(default="ok"), later=[outer])
    config: Any = {"configurable": {"thread_id": "own"}}
    graph.invoke({"messages": [HumanMessage("hi")]}, config)
    outer_entry, used = graph.get_state(config).values["context_ledger"]
    assert (outer_entry["kind"], used["kind"]) == ("outer", "utilization")
    assert used["data"]["actual_input"] > 0
    assert outer_entry["data"] == {"note": "recorded before pre-flight's"}


def test_kept_recall_lines_give_way_before_a_call_is_refused() -> None:
    # The recall lines kept for the prompt cache at the head of a user message (and
    # a kept block after the summaries) are recall's, not the user's: over the limit
    # with nothing else left to cut, they go, rather than refuse a call that recall
    # off would make (tau-bench at 4K raised BudgetExceededError with recall on).
    from langgraph_ctx.markers import KEY, RECALL_PREFIX

    task = "Reconcile the ledger for account 7. " * 150  # pinned: the task
    lines = RECALL_PREFIX + " earlier:\n" + "- [observation] account 7 had a refund. " * 40
    kept_block = SystemMessage(
        RECALL_PREFIX + " kept\n- account 7 was audited.", additional_kwargs={KEY: {"recall": {}}}
    )

    @as_middleware(priority=500)
    def kept_lines(view: View, ctx: Any, call_next: Any) -> Any:
        [user] = view["messages"]
        placed = user.model_copy(update={"content": lines + "\n\n" + user.text})
        # Measured, as recall's placement measures what it adds.
        added = COUNTER.count_messages([kept_block, placed]) - COUNTER.count_messages([user])
        ctx.adjust_usage("messages", added)
        return call_next(view.replace(messages=[kept_block, placed]))

    model = ScriptedChatModel(responses=["Done."])
    window = 2_048
    size = COUNTER.count_messages([HumanMessage(task)]) + COUNTER.count_tool(lookup_order)
    assert size < Budget.for_window(window).prompt_limit < size + COUNTER.count_text(lines)
    graph = graph_with(model, window=window, later=[kept_lines])
    graph.invoke({"messages": [HumanMessage(task, id="u0")]}, {"configurable": {"thread_id": "t"}})
    [sent] = model.calls
    assert RECALL_PREFIX not in sent.text  # the lines and the kept block gave way
    assert sent.messages[-1].text == task  # the user's own message, whole
