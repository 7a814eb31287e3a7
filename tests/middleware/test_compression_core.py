"""Compression's rewrites go through the edit core: the span is one merge
operation whose summary lands after the pinned messages, the originals are
archived by the core with the summary's name, and a span that would split a tool
exchange or take a pinned message is widened or refused by the core, not by
compression's own code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from langgraph_ctx import is_summary
from langgraph_ctx.edits import apply as edits_apply
from langgraph_ctx.edits.core import EditOp, EditPlan
from langgraph_ctx.history.structure import Plan, pair_results
from langgraph_ctx.markers import SUMMARY_ID, summary_info
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.strategies.tiered import planner
from tests.middleware.test_compression import cfg, events, feed, make_graph


class ReasonArchive(InMemoryArchive):
    """Remembers the reason each message was archived with."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: dict[str, str] = {}

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        super().put(thread_id, messages, reason=reason, namespace=namespace)
        for m in messages:
            self.reasons.setdefault(str(m.id), reason)


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[EditOp], dict[str, Any]]]:
    """Every action the core plans, with the pinning it was asked for."""
    seen: list[tuple[list[EditOp], dict[str, Any]]] = []
    real = edits_apply.plan_edits

    def spy(messages: Sequence[BaseMessage], operations: Any, **kwargs: Any) -> EditPlan:
        ops = list(operations)
        seen.append((ops, kwargs))
        return real(messages, ops, **kwargs)

    monkeypatch.setattr(edits_apply, "plan_edits", spy)
    return seen


def active(graph: Any, config: Any) -> list[BaseMessage]:
    return list(graph.get_state(config).values["messages"])


def test_the_span_is_one_merge_the_core_applies_and_archives(planned: Any) -> None:
    archive = ReasonArchive()
    graph, _, _ = make_graph(archive=archive, prepare_ahead=False)
    config = cfg("merge")
    feed(graph, range(30), config)
    (first, *_) = events(graph, config, "compression")
    ops, kwargs = planned[0]
    (merge,) = ops
    summary = merge.message
    assert summary is not None and is_summary(summary) and merge.kind == "merge"
    assert (summary_info(summary) or {})["seq"] == first["seq"] == 1
    assert kwargs["rules"] == "tiers"  # compression's tiers decide what is pinned
    # Archived by the core, before the rewrite, with the summary's name.
    assert {archive.reasons[i] for i in merge.ids} == {"compressed into summary #1"}
    # The core's ledger entry carries the rationale; the span left the history.
    (edit, *_) = events(graph, config, "context_edit")
    assert edit["source"] == "compression" and edit["removed"] == list(merge.ids)
    assert edit["operations"][0]["rationale"] == "compressed into summary #1"
    assert not set(merge.ids) & {m.id for m in active(graph, config)}


@pytest.mark.slow
def test_a_meta_summary_is_one_merge_and_names_what_it_consolidated(planned: Any) -> None:
    archive = ReasonArchive()
    graph, _, _ = make_graph(archive=archive, max_summary_layers=1, prepare_ahead=False)
    config = cfg("meta")
    feed(graph, range(60), config)
    meta = next(r for r in events(graph, config, "compression") if r["meta"])
    merge = next(
        op
        for ops, _ in planned
        for op in ops
        if op.message and op.message.id.endswith(f"-{meta['seq']}")
    )
    earlier = [i for i in merge.ids if i.startswith(SUMMARY_ID)]
    assert earlier and len(merge.ids) > len(earlier)
    assert {archive.reasons[i] for i in earlier} == {f"consolidated into summary #{meta['seq']}"}
    rest = set(merge.ids) - set(earlier)
    assert {archive.reasons[i] for i in rest} == {f"compressed into summary #{meta['seq']}"}


def test_the_summary_follows_the_task_even_when_a_reply_came_before_it() -> None:
    graph, _, _ = make_graph(prepare_ahead=False)
    config = cfg("order")
    # The model answers the system message alone: a reply precedes the task.
    graph.invoke({"messages": [SystemMessage("You are an auditor.", id="sys")]}, config)
    sent = 0
    while not events(graph, config, "compression"):
        feed(graph, range(sent, sent + 1), config)
        sent += 1
    history = active(graph, config)
    assert [m.id for m in history[:2]] == ["sys", "u0"] and is_summary(history[2])


def splitting(real: Any, mutate: Any) -> Any:
    """``plan_compression`` with its span changed by ``mutate`` when there is one."""

    def plan(messages: Sequence[BaseMessage], count: Any, **kwargs: Any) -> Plan:
        p = real(messages, count, **kwargs)
        return mutate(p) if p.compress else p

    return plan


def test_a_span_that_would_split_a_tool_exchange_is_widened_by_the_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def through_a_call(p: Plan) -> Plan:
        # Take the next tool call into the span, leaving its result in the kept turns.
        k = next(i for i, m in enumerate(p.keep) if isinstance(m, AIMessage) and m.tool_calls)
        keep = p.keep[k + 1 :]
        return Plan(p.tiers, [*p.compress, *p.keep[: k + 1]], keep, min(p.protected, len(keep)))

    real = planner.plan_compression
    monkeypatch.setattr(planner, "plan_compression", splitting(real, through_a_call))
    archive = ReasonArchive()
    graph, _, _ = make_graph(archive=archive, prepare_ahead=False)
    config = cfg("split")
    feed(graph, range(30), config, tools=True)
    (edit, *_) = events(graph, config, "context_edit")
    (widened,) = edit["operations"][0]["widened"]  # the result its call left behind
    assert widened.startswith("r") and widened in archive.reasons
    history = active(graph, config)
    pairing = pair_results(history)
    assert not pairing.orphans and not pairing.missing
    assert widened not in {m.id for m in history}


def test_a_span_taking_a_pinned_message_is_refused_by_the_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def with_the_task(p: Plan) -> Plan:
        task = next(m for m in p.tiers.pinned if m.type == "human")
        return Plan(p.tiers, [task, *p.compress], p.keep, p.protected)

    real = planner.plan_compression
    monkeypatch.setattr(planner, "plan_compression", splitting(real, with_the_task))
    archive = ReasonArchive()
    graph, model, _ = make_graph(archive=archive, prepare_ahead=False)
    config = cfg("pinned")
    for i in range(40):
        feed(graph, range(i, i + 1), config)
        if events(graph, config, "edit_rejected"):
            break
    (rejected,) = events(graph, config, "edit_rejected")
    assert rejected["reason"] == "pinned" and rejected["source"] == "compression"
    # The refused action changed nothing: the task stays, never archived. (What
    # still runs is the ceiling's own compression, which leaves pinned messages
    # alone, through the same core.)
    assert "u0" in {m.id for m in active(graph, config)} and "u0" not in archive.reasons
    assert {r["path"] for r in events(graph, config, "compression")} <= {"ceiling"}
    assert len(model.calls) == i + 1  # and the call went on
