"""BACM in a live graph: the budget line the model sees is pre-flight's count, each fold
kind lands in the checkpoint and the archive, bad folds are refused in words, the policy
folds near the line (offline or through structured output), and the guard keeps the
budget when nobody folds."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    BudgetAwareFolding,
    ContextState,
    Pipeline,
    PreflightCheck,
    call_llm_node,
)
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.strategies.bacm import policy as bacm
from langgraph_ctx.strategies.bacm.offline import OfflineFoldPolicy
from langgraph_ctx.strategies.bacm.policy import (
    FOLD_ACK,
    FOLD_TOOL,
    FoldAction,
    FoldRequest,
    block_id,
    commit_blocks,
)
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

TASK = "Audit order ORD-7731: the supplier must ship before 2026-03-01."
LINE = re.compile(
    r"\[Context budget: used ([\d,]+) of ([\d,]+) tokens, (-?[\d,]+) remaining; "
    r"pending observation ([\d,]+) tokens\."
)
counter = TokenCounter()


def make(window: int = 16_000, **options: Any) -> tuple[Any, ScriptedChatModel, Any]:
    agent = ScriptedChatModel(default="ok", report_usage=False)
    options.setdefault("decide_at", None)
    bacm = BudgetAwareFolding(**options)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(agent))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck(), bacm], budget=Budget.for_window(window))
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver()), agent, bacm


def cfg(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def step(n: int, result: str) -> list[BaseMessage]:
    call = {"name": "lookup", "args": {"n": n}, "id": f"call{n}"}
    return [
        AIMessage("", id=f"a{n}", tool_calls=[call]),
        ToolMessage(result, tool_call_id=f"call{n}", id=f"r{n}"),
    ]


def history(steps: int = 3) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("You audit orders.", id="sys")]
    out.append(HumanMessage(TASK, id="task"))
    for n in range(1, steps + 1):
        out += step(n, f"Supplier S-{n} quotes ${400 + n}, ships 2026-02-{10 + n}. " * 4)
    return out


def fold_call(commit_ids: Any, merged: str = "", n: int = 9) -> list[BaseMessage]:
    args = {"commit_ids": commit_ids, "merged": merged}
    return [
        AIMessage("", id=f"a{n}", tool_calls=[{"name": FOLD_TOOL, "args": args, "id": f"f{n}"}]),
        ToolMessage(FOLD_ACK, tool_call_id=f"f{n}", id=f"r{n}"),
    ]


def kinds(graph: Any, thread: str = "t") -> list[str]:
    return [e["kind"] for e in graph.get_state(cfg(thread)).values["context_ledger"]]


def events(graph: Any, kind: str, thread: str = "t") -> list[dict[str, Any]]:
    ledger = graph.get_state(cfg(thread)).values["context_ledger"]
    return [e["data"] for e in ledger if e["kind"] == kind]


def test_the_budget_line_is_pre_flights_own_count() -> None:
    graph, agent, _ = make()
    graph.invoke({"messages": history(2)}, cfg())
    prompt = agent.calls[-1].messages
    observation = prompt[-1]
    assert isinstance(observation, ToolMessage) and observation.tool_call_id == "call2"
    # The observation as it was, then the line in a block of its own: the next call
    # sends the message without it, and the blocks before it stay the same bytes.
    *kept, line = observation.content
    assert [b["text"] for b in kept] == [history(2)[-1].content]  # type: ignore[index]
    used, limit, remaining, pending = (
        int(x.replace(",", ""))
        for x in LINE.match(line["text"]).groups()  # type: ignore[index,union-attr]
    )
    (measured,) = events(graph, "utilization")
    assert used + pending == measured["total"]
    assert pending == counter.count_message(history(2)[-1])  # the observation, uncalibrated
    assert limit == Budget.for_window(16_000).red_line and remaining == limit - used
    # Every step is tagged; the task and the system prompt are not steps.
    assert [m.text.split("\n")[0] for m in prompt if m.type == "ai"] == [
        f"[step {block_id('a1')}]",
        f"[step {block_id('a2')}]",
    ]
    assert not any("[step" in m.text for m in prompt if m.type in ("system", "human"))
    # Ephemeral: the checkpoint keeps the messages as they were.
    state = graph.get_state(cfg()).values["messages"]
    assert "[step" not in state[2].text and "Context budget" not in state[5].text


def test_a_partial_fold_merges_the_named_steps_and_archives_them() -> None:
    graph, agent, bacm = make()
    ids = [block_id("a1"), block_id("a2")]
    graph.invoke({"messages": [*history(3), *fold_call(ids, "S-1 $401; S-2 $402")]}, cfg())
    state = graph.get_state(cfg()).values["messages"]
    folded = [m for m in state if m.type == "system" and "Folded steps" in m.text]
    assert len(folded) == 1 and "S-1 $401; S-2 $402" in folded[0].text
    live = {str(m.id) for m in state}
    assert not live & {"a1", "r1", "a2", "r2"} and {"a3", "r3", "task", "sys"} <= live
    for mid in ("a1", "r1", "a2", "r2"):
        assert bacm.original("t", mid) is not None
    ack = next(m for m in state if getattr(m, "tool_call_id", "") == "f9")
    assert ack.text.startswith(f"Folded steps {ids[0]}, {ids[1]}")
    (fold,) = events(graph, "fold")
    assert fold["by"] == "agent" and fold["kind"] == "partial" and fold["commits"] == ids
    # The model saw the folded block, not the originals.
    assert "ships 2026-02-11" not in agent.calls[-1].text and "S-1 $401" in agent.calls[-1].text


def test_a_full_fold_keeps_the_pinned_messages_and_the_current_step() -> None:
    graph, _, _ = make()
    graph.invoke({"messages": [*history(3), *fold_call("ALL", "all three quoted")]}, cfg())
    state = graph.get_state(cfg()).values["messages"]
    assert [str(m.id) for m in state if m.type != "system" or m.id == "sys"][:2] == [
        "sys",
        "task",
    ]
    assert not {"a1", "a2", "a3"} & {str(m.id) for m in state}
    assert "a9" in {str(m.id) for m in state}  # the fold's own step is the current one
    (fold,) = events(graph, "fold")
    assert fold["kind"] == "full" and len(fold["commits"]) == 3


def test_a_null_fold_changes_nothing_but_its_answer() -> None:
    graph, _, _ = make()
    sent = [*history(2), *fold_call("NONE")]
    graph.invoke({"messages": sent}, cfg())
    state = graph.get_state(cfg()).values["messages"]
    assert [m.text for m in state[:-2]] == [m.text for m in sent[:-1]]
    assert state[-2].text == "Nothing folded (NONE)."
    assert events(graph, "fold")[0]["kind"] == "null"


@pytest.mark.parametrize(
    ("commit_ids", "merged", "why"),
    [
        (["c00000"], "x", "no past step has id 'c00000'; the foldable steps are "),
        ([block_id("a9")], "x", "is the current step"),
        ([block_id("a1"), block_id("a1")], "x", "is named twice"),
        ([], "x", 'use "NONE"'),
        ([block_id("a1")], "  ", "'merged' is empty"),
        ("SOME", "x", 'commit_ids must be "NONE", "ALL" or a list'),
    ],
)
def test_an_invalid_fold_is_refused_in_the_tools_answer(
    commit_ids: Any, merged: str, why: str
) -> None:
    graph, agent, bacm = make()
    sent = [*history(2), *fold_call(commit_ids, merged)]
    graph.invoke({"messages": sent}, cfg())
    state = graph.get_state(cfg()).values["messages"]
    assert [str(m.id) for m in state[:-2]] == [str(m.id) for m in sent[:-1]]
    assert state[-2].text.startswith("Fold refused:") and why in state[-2].text
    assert why in agent.calls[-1].text  # the model is told why
    assert bacm.original("t", "a1") is None
    (fold,) = events(graph, "fold")
    assert fold["kind"] == "refused" and why in fold["reason"]


def test_the_offline_policy_folds_oldest_unreferenced_first() -> None:
    messages: list[BaseMessage] = [HumanMessage(TASK, id="task")]
    messages += step(1, "Order ORD-1111 found in warehouse W-7. " * 20)
    messages += step(2, "Order ORD-2222 found in warehouse W-9. " * 20)
    messages += [AIMessage("Checking ORD-1111 again.", id="a3")]
    messages += step(4, "Carrier DHL confirmed.")
    blocks = commit_blocks(messages, counter.count_message)
    policy = OfflineFoldPolicy(keep_last=1)

    def request(excess: int) -> FoldRequest:
        from langgraph_ctx.strategies.bacm.policy import BudgetState

        state = BudgetState(used=500, pending=50, limit=600)
        return FoldRequest(blocks=blocks, current=block_id("a4"), state=state, excess=excess)

    assert policy.decide(request(0)).commit_ids == "NONE"
    # ORD-1111 is referenced by step 3: step 2 goes first although step 1 is older.
    assert policy.decide(request(1)).commit_ids == [block_id("a2")]
    both = policy.decide(request(blocks[1].tokens))
    assert both.commit_ids == [block_id("a1"), block_id("a2")]
    assert policy.decide(request(10_000)).commit_ids == "ALL"
    assert "ORD-2222" in policy.decide(request(1)).merged


def test_the_policy_folds_near_the_line_before_the_observation_is_shown() -> None:
    graph, _, bacm = make(window=4_000, decide_at=0.3, target=0.25)
    big = "Row R-9: part P-123 costs $9. " * 100
    graph.invoke({"messages": [*history(4)[:-2], *step(4, big)]}, cfg())
    (fold,) = events(graph, "fold")
    assert fold["by"] == "policy" and fold["kind"] in ("partial", "full")
    assert fold["used"] + fold["pending"] >= 0.3 * fold["limit"]
    state = graph.get_state(cfg()).values["messages"]
    assert state[-2].text == big  # the pending observation itself is never folded
    assert bacm.original("t", "r1") is not None
    assert "fold_guard" not in kinds(graph)


def test_a_chat_model_policy_answers_through_structured_output() -> None:
    def decide(messages: list[BaseMessage]) -> dict[str, Any]:
        ids = re.findall(r"\[step (c[0-9a-f]{5})\] \d+ tokens\n", messages[-1].text)
        return {"commit_ids": ids[:1], "merged": "S-1 quoted $401"}

    policy = ScriptedChatModel(structured_default=decide)
    graph, _, bacm = make(window=4_000, policy=policy, decide_at=0.1, target=0.05)
    big = "Row R-9: part P-123 costs $9. " * 30
    graph.invoke({"messages": [*history(2), *step(3, big)]}, cfg())
    (asked,) = policy.calls
    assert asked.structured == FoldAction.__name__
    assert "R-9" not in asked.text  # the policy decides before the observation is loaded
    assert "CURRENT" in asked.text
    assert events(graph, "fold")[0]["commits"] == [block_id("a1")]
    assert bacm.original("t", "a1") is not None


def test_the_guard_compresses_when_nobody_folds() -> None:
    graph, _, _ = make(window=4_000)  # decide_at=None: the policy never runs
    big = "Row R-9: part P-123 costs $9, lead time 3 days. " * 250
    graph.invoke({"messages": [*history(3), *step(4, big)]}, cfg())
    (guard,) = events(graph, "fold_guard")
    assert guard["used"] + guard["pending"] >= guard["limit"]
    assert guard["fallback"] == "TieredCompression"
    assert {"compression", "tool_results_compacted"} & set(kinds(graph))
    (measured,) = events(graph, "utilization")
    assert measured["sent_utilization"] * 4_000 < Budget.for_window(4_000).red_line


def test_bad_settings_fail_when_built() -> None:
    with pytest.raises(ConfigurationError) as caught:
        BudgetAwareFolding(decide_at=1.5)
    assert caught.value.field == "decide_at"
    with pytest.raises(ConfigurationError) as caught:
        BudgetAwareFolding(decide_at=0.5, target=0.8)
    assert caught.value.field == "target"
    with pytest.raises(ConfigurationError):
        OfflineFoldPolicy(keep_last=-1)


def test_the_current_question_is_never_folded_away_from_the_end() -> None:
    """A second turn's question, then tool steps answering it: a policy fold near the
    line took the question (a block before the agent's last step) into its digest,
    placed before the task's steps; the model, its question gone, did the task again.
    The question stays a user message, the last one, in every prompt."""
    graph, agent, _ = make(window=4_000, decide_at=0.3, target=0.25)
    question = HumanMessage("Now, which supplier ships before 2026-02-12?", id="q2")
    graph.invoke({"messages": history(3)}, cfg())
    graph.invoke({"messages": [question]}, cfg())
    big = "Row R-9: supplier S-1 ships 2026-02-11 for part P-123. " * 40
    for n in range(4, 8):
        graph.invoke({"messages": step(n, big)}, cfg())
    assert any(f["by"] == "policy" and f["kind"] != "null" for f in events(graph, "fold"))
    for call in agent.calls[3:]:  # every call after the question was asked
        humans = [m for m in call.messages if m.type == "human"]
        assert humans[-1].id == "q2" and question.text in humans[-1].text
        assert not any(m.type == "system" and question.text in m.text for m in call.messages)
    state = graph.get_state(cfg()).values["messages"]
    assert [m for m in state if m.type == "human"][-1].id == "q2"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["user", "step", "step"]), min_size=1, max_size=12))
def test_no_fold_takes_the_last_user_message(shape: list[str]) -> None:
    """Whatever the history, an "ALL" fold (agent's or policy's) never names the
    block of the current turn's question."""
    from langgraph_ctx.strategies.bacm.middleware import _current

    messages: list[BaseMessage] = [HumanMessage(TASK, id="task")]
    for n, kind in enumerate(shape):
        messages += [HumanMessage(f"question {n}", id=f"q{n}")] if kind == "user" else step(n, "r")
    blocks = commit_blocks(messages, counter.count_message)
    try:
        ops, _ = bacm.fold_ops(
            FoldAction(commit_ids="ALL", merged="m"), blocks, _current(blocks, messages), by="t"
        )
    except bacm.FoldRefused:
        return
    folded = {x for op in ops for x in op.ids}
    last = [m for m in messages if m.type == "human"][-1]
    assert last.id not in folded


def test_recalls_kept_blocks_never_set_off_the_guard() -> None:
    """Recall's blocks kept from earlier turns (reserved, counted as system) give way at
    placement when the prompt would pass the red line with them; counted by the guard,
    a history that fit was compressed for them on every call, BACM's fold digests and
    the facts folded into them with it (issue 31: recall on kept fewer answers)."""
    graph, _, _ = make(window=4_000)  # decide_at=None: only the guard could act
    kept = {"placement.recall_shown": Budget.for_window(4_000).red_line}
    graph.invoke({"messages": history(3), "session": {"reserved": kept}}, cfg())
    assert events(graph, "fold_guard") == []
    assert "compression" not in kinds(graph)
    graph.invoke({"messages": step(4, "Row R-9: part P-123 costs $9. " * 400)}, cfg())
    assert events(graph, "fold_guard")  # the history itself over the line: the guard acts
