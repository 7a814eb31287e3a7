"""Property tests of compression in a live graph: random tool-heavy sessions under a
small window never produce an orphan call or result, never lose a message, and never
drop the pinned task, whatever mix of summaries and compacted tool results it takes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    ContextState,
    Pipeline,
    PreflightCheck,
    TieredCompression,
    call_llm_node,
    is_compacted,
)
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

COUNTER = TokenCounter()
LIMIT = Budget.for_window(3_000).prompt_limit

# A step is a user message, or a tool exchange: (parallel calls, result sizes in
# records, whether the results come back in reverse order).
user_step = st.tuples(st.just("user"), st.integers(5, 80))
tool_step = st.tuples(
    st.just("tools"), st.lists(st.integers(0, 60), min_size=1, max_size=3), st.booleans()
)
sessions = st.lists(st.one_of(user_step, tool_step), min_size=4, max_size=30)


def _messages(step: Any, n: int) -> list[BaseMessage]:
    if step[0] == "user":
        return [HumanMessage(f"Request {n}: " + "check the ledger entry " * step[1], id=f"u{n}")]
    _, sizes, reverse = step
    calls = [{"name": "rows", "args": {"page": k}, "id": f"call{n}.{k}"} for k in range(len(sizes))]
    results: list[BaseMessage] = [
        ToolMessage(
            json.dumps([{"id": f"ROW-{n}-{k}-{r}", "amount": r} for r in range(size)]),
            tool_call_id=f"call{n}.{k}",
            id=f"r{n}.{k}",
        )
        for k, size in enumerate(sizes)
    ]
    return [AIMessage("", tool_calls=calls, id=f"c{n}"), *(results[::-1] if reverse else results)]


def ledger_of(graph: Any, config: Any) -> list[Any]:
    return list(graph.get_state(config).values.get("context_ledger") or ())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions)
@pytest.mark.slow
def test_random_sessions_keep_pairs_whole_and_lose_nothing(steps: list[Any]) -> None:
    archive = InMemoryArchive()
    model = ScriptedChatModel(default="ok", report_usage=False)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    compression = TieredCompression(archive=archive)
    pipeline = Pipeline([PreflightCheck(), compression], budget=Budget.for_window(3_000))
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "p"}}
    task = HumanMessage("The task: reconcile the ledger.", id="task")
    sent: list[BaseMessage] = [task]
    graph.invoke({"messages": [task]}, config)
    for n, step in enumerate(steps):
        messages = _messages(step, n)
        sent += messages
        before = max((e["seq"] for e in ledger_of(graph, config)), default=-1)
        graph.invoke({"messages": messages}, config)
        prompt = list(model.calls[-1].messages)
        if COUNTER.count_messages(prompt) > LIMIT:  # never silently: it says so, at that call
            new = [e["kind"] for e in ledger_of(graph, config) if e["seq"] > before]
            assert "budget_unreachable" in new

    for call in model.calls:
        prompt = list(call.messages)
        calls = {c["id"] for m in prompt if isinstance(m, AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in prompt if isinstance(m, ToolMessage)}
        assert calls == results, (calls - results, results - calls)
        assert prompt[0].id == "task" and prompt[0].text == task.text  # pinned, verbatim
    state = graph.get_state(config).values["messages"]
    kinds = {e["kind"] for e in graph.get_state(config).values["context_ledger"]}
    event(f"compressed: {'compression' in kinds}, compacted: {'tool_results_compacted' in kinds}")
    originals = {m.id: m for m in archive.list("p")}
    for m in state:
        if is_compacted(m):
            assert m.id in originals  # archived before it was shrunk
        elif m.id not in originals:
            originals[m.id] = m
    for m in sent:
        assert m.id in originals and originals[m.id].text == m.text, f"lost {m.id}"
