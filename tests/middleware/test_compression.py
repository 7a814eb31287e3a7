"""Tiered compression: tiers, placement, increments, meta-summaries, fallbacks, nothing lost."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Annotated, Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from typing_extensions import TypedDict

from langgraph_ctx import (
    Budget,
    ContextState,
    Pipeline,
    PreflightCheck,
    TieredCompression,
    call_llm_node,
    is_summary,
    pin,
)
from langgraph_ctx.markers import SUMMARY_PREFIX, is_compacted, summary_info
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

COUNTER = TokenCounter()
FILLER = (
    "Reviewed the vendor contract clauses and the shipping schedule for the next quarter, "
    "cross-checking invoice totals against the ledger entries recorded by finance. "
) * 2


def turn(i: int, *, tools: bool = False) -> list[BaseMessage]:
    """One user turn with a planted id, optionally with a tool exchange."""
    out: list[BaseMessage] = [
        HumanMessage(f"Turn {i}: check invoice INV-{i:04d}. " + FILLER, id=f"u{i}")
    ]
    if tools:
        out.append(
            AIMessage(
                "",
                id=f"c{i}",
                tool_calls=[
                    {"name": "lookup", "args": {"invoice": f"INV-{i:04d}"}, "id": f"call{i}"}
                ],
            )
        )
        out.append(
            ToolMessage(
                f'{{"invoice": "INV-{i:04d}", "amount": {i * 100}.25}} ' + FILLER,
                tool_call_id=f"call{i}",
                id=f"r{i}",
            )
        )
    out.append(AIMessage(f"Invoice INV-{i:04d} is settled. " + FILLER, id=f"a{i}"))
    return out


def make_graph(*, window: int = 4_000, archive: Any = None, **options: Any) -> tuple[Any, Any, Any]:
    model = ScriptedChatModel(default="ok", report_usage=False)
    compression = TieredCompression(archive=archive or InMemoryArchive(), **options)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck(), compression], budget=Budget.for_window(window))
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver()), model, compression


def feed(graph: Any, turns: range, config: Any, *, tools: bool = False) -> list[BaseMessage]:
    """Send each turn's messages as input (the model answers 'ok' after each)."""
    sent: list[BaseMessage] = []
    for i in turns:
        msgs = turn(i, tools=tools and i % 2 == 0)
        sent += msgs
        graph.invoke({"messages": msgs}, config)
    return sent


def events(graph: Any, config: Any, kind: str) -> list[dict[str, Any]]:
    return [
        e["data"] for e in graph.get_state(config).values["context_ledger"] if e["kind"] == kind
    ]


def cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


@pytest.mark.slow
def test_red_zone_compresses_and_the_model_sees_the_summary() -> None:
    graph, model, _ = make_graph()
    config = cfg("red")
    feed(graph, range(30), config)
    compressions = events(graph, config, "compression")
    assert compressions, "a 30-turn session in a 4K window must compress"
    sent = model.calls[-1].messages
    assert any(is_summary(m) for m in sent)
    assert "u5" not in {m.id for m in sent}  # an early turn is gone from the prompt...
    assert "INV-0005" in model.calls[-1].text  # ...but its identifier survives in a summary
    assert all(c["ratio"] >= 2 for c in compressions)
    peak = max(
        e["data"]["utilization"]
        for e in graph.get_state(config).values["context_ledger"]
        if e["kind"] == "utilization"
    )
    assert peak < 1.0


@pytest.mark.slow
def test_order_is_pinned_then_summaries_then_protected_window() -> None:
    graph, _model, _ = make_graph()
    config = cfg("order")
    graph.invoke({"messages": [SystemMessage("You are an auditor.", id="sys")]}, config)
    feed(graph, range(40), config)
    active = graph.get_state(config).values["messages"]
    kinds = [
        "system"
        if m.id == "sys"
        else "task"
        if m.id == "u0"
        else "summary"
        if is_summary(m)
        else "rest"
        for m in active
    ]
    first_rest = kinds.index("rest")
    assert kinds[:2] == ["system", "task"]  # the task is pinned by default
    assert set(kinds[2:first_rest]) == {"summary"}
    assert "summary" not in kinds[first_rest:]
    seqs = [summary_info(m)["seq"] for m in active if is_summary(m)]  # type: ignore[index]
    assert seqs == sorted(seqs)
    # The last three turns are verbatim.
    tail_ids = [m.id for m in active[-10:]]
    for i in (37, 38, 39):
        assert f"u{i}" in tail_ids and f"a{i}" in tail_ids


@pytest.mark.slow
def test_compression_is_incremental() -> None:
    archive = InMemoryArchive()
    graph, _, _ = make_graph(archive=archive, max_summary_layers=10)
    config = cfg("incr")
    feed(graph, range(45), config)
    runs = events(graph, config, "compression")
    assert len(runs) >= 2
    covered: list[set[str]] = []
    ids = [m.id for m in archive.list("incr")]
    assert len(ids) == len(set(ids))  # no message compressed twice
    # Each summary covers through a later message than the one before.
    throughs = [r["through"] for r in runs]
    order = {f"{p}{i}": i for i in range(45) for p in "uac"}
    assert [order[t] for t in throughs] == sorted(order[t] for t in throughs)
    del covered


@pytest.mark.slow
def test_meta_summary_consolidates_layers() -> None:
    archive = InMemoryArchive()
    graph, _model, _ = make_graph(archive=archive, max_summary_layers=2)
    config = cfg("meta")
    feed(graph, range(70), config)
    runs = events(graph, config, "compression")
    assert any(r["meta"] for r in runs)
    active = graph.get_state(config).values["messages"]
    summaries = [m for m in active if is_summary(m)]
    assert len(summaries) <= 2
    assert any(m.text.startswith(SUMMARY_PREFIX) for m in summaries)
    # Consolidated layers are archived, not lost.
    archived_summaries = [m for m in archive.list("meta") if is_summary(m)]
    assert archived_summaries


@pytest.mark.slow
def test_nothing_is_lost_active_plus_archive_equals_everything_added() -> None:
    archive = InMemoryArchive()
    graph, _, _ = make_graph(archive=archive, max_summary_layers=2)
    config = cfg("lossless")
    sent = feed(graph, range(60), config, tools=True)
    state = graph.get_state(config).values["messages"]
    archived = archive.list("lossless")
    everything = {m.id: m.text for m in [*state, *archived]}
    for m in sent:
        assert everything.get(m.id) == m.text, f"lost {m.id}"
    # Every model reply ever added is there too.
    added_by_model = [m for m in [*state, *archived] if m.type == "ai" and m.text == "ok"]
    assert len(added_by_model) == 60


@pytest.mark.slow
def test_tool_pairs_survive_compression_in_a_live_graph() -> None:
    graph, model, _ = make_graph()
    config = cfg("pairs")
    feed(graph, range(40), config, tools=True)
    for call in model.calls:
        assert_no_orphans(list(call.messages))


def assert_no_orphans(messages: list[BaseMessage]) -> None:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert calls == results, f"orphan calls {calls - results}, orphan results {results - calls}"


@pytest.mark.slow
def test_pinned_messages_are_never_compressed() -> None:
    graph, model, _ = make_graph()
    config = cfg("pin")
    feed(graph, range(3), config)
    graph.invoke({"messages": [pin(HumanMessage("Never ship to PO boxes.", id="rule"))]}, config)
    feed(graph, range(3, 40), config)
    assert events(graph, config, "compression")
    assert "Never ship to PO boxes." in [m.text for m in model.calls[-1].messages]


@pytest.mark.slow
def test_task_pinning_can_be_turned_off() -> None:
    graph, model, _ = make_graph(pin_task=False)
    config = cfg("nopin")
    feed(graph, range(40), config)
    assert "u0" not in {m.id for m in model.calls[-1].messages}


@pytest.mark.slow
def test_yellow_zone_marks_candidates_once() -> None:
    graph, _, _ = make_graph(window=7_000)
    config = cfg("yellow")
    feed(graph, range(40), config)
    ledger = graph.get_state(config).values["context_ledger"]
    zones = [e["data"]["zone"] for e in ledger if e["kind"] == "utilization"]
    candidates = [e for e in ledger if e["kind"] == "compression_candidates"]
    assert "yellow" in zones
    assert 1 <= len(candidates) <= len([e for e in ledger if e["kind"] == "compression"]) + 1


def test_giant_pinned_message_is_reported_not_dropped(caplog: pytest.LogCaptureFixture) -> None:
    graph, model, _ = make_graph(window=4_000)
    config = cfg("giant")
    giant = pin(HumanMessage("Contract text: " + FILLER * 50, id="giant"))
    graph.invoke({"messages": [giant]}, config)
    feed(graph, range(1, 8), config)
    assert events(graph, config, "budget_unreachable")
    assert "giant" in {m.id for m in model.calls[-1].messages}
    assert "pinned content is kept" in caplog.text


class BrokenModel(BaseChatModel):
    mode: str = "error"

    @property
    def _llm_type(self) -> str:
        return "broken"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if self.mode == "error":
            raise RuntimeError("summarizer down")
        if self.mode == "slow":
            time.sleep(3.0)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(""))])


@pytest.mark.parametrize(
    ("mode", "reason"), [("error", "error"), ("slow", "timeout"), ("empty", "empty")]
)
@pytest.mark.slow
def test_summarizer_failure_falls_back_and_is_recorded(mode: str, reason: str) -> None:
    graph, model, _ = make_graph(summarizer=BrokenModel(mode=mode), summarizer_timeout=0.2)
    config = cfg(f"fallback-{mode}")
    feed(graph, range(30), config)
    fallbacks = events(graph, config, "summarizer_fallback")
    assert fallbacks and all(f["reason"].startswith(reason) for f in fallbacks)
    assert "INV-0003" in model.calls[-1].text  # the extractive fallback kept the id


def test_async_path_compresses_the_same_way() -> None:
    graph, model, _ = make_graph()
    config = cfg("async")

    async def run() -> None:
        for i in range(30):
            await graph.ainvoke({"messages": turn(i)}, config)

    asyncio.run(run())
    assert events(graph, config, "compression")
    assert any(is_summary(m) for m in model.calls[-1].messages)


def test_original_returns_any_compressed_message() -> None:
    graph, _, compression = make_graph()
    config = cfg("orig")
    sent = feed(graph, range(30), config)
    original = compression.original("orig", "a4")
    assert original is not None and original.text == next(m.text for m in sent if m.id == "a4")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("target_utilization", 1.5),
        ("min_protected_turns", 0),
        ("expected_ratio", 0.5),
        ("summary_tokens", (10, 5)),
        ("max_summary_layers", 0),
    ],
)
def test_bad_options_fail_naming_the_field(option: str, value: Any) -> None:
    from langgraph_ctx import ConfigurationError

    with pytest.raises(ConfigurationError) as info:
        TieredCompression(**{option: value})
    assert info.value.field == option


class CountingSummarizer:
    """The extractive summarizer, counting its calls and the budgets it is given."""

    def __init__(self) -> None:
        from langgraph_ctx.compression.summarizers import ExtractiveSummarizer

        self.inner = ExtractiveSummarizer()
        self.budgets: list[int] = []

    def summarize(self, messages: Any, *, previous: str | None = None, max_tokens: int) -> str:
        self.budgets.append(max_tokens)
        return self.inner.summarize(messages, previous=previous, max_tokens=max_tokens)

    async def asummarize(
        self, messages: Any, *, previous: str | None = None, max_tokens: int
    ) -> str:
        return self.summarize(messages, previous=previous, max_tokens=max_tokens)


@pytest.mark.slow
def test_summaries_stay_within_their_cap_and_compression_is_not_every_turn() -> None:
    summarizer = CountingSummarizer()
    # Synchronous only: a summary prepared ahead and then outgrown is one more call.
    graph, model, compression = make_graph(summarizer=summarizer, prepare_ahead=False)
    config = cfg("cap")
    feed(graph, range(120), config)
    runs = events(graph, config, "compression")
    budget = Budget.for_window(4_000)
    cap = int(compression.max_summary_share * budget.messages)
    # Meta-summaries are written to the cap, never to the budget's full size...
    assert any(r["meta"] for r in runs)
    assert all(b <= cap for b in summarizer.budgets)
    for call in model.calls:
        tokens = sum(len(m.text) // 4 for m in call.messages if is_summary(m))
        assert tokens <= cap * 1.5  # (a rough count: 4 characters a token)
    # ...so each compression frees real room: one every few turns, not every turn
    # (the ledger is bounded; sequence numbers count every compression),
    compressions = runs[-1]["seq"]
    assert compressions <= 120 // 4
    # and one summarizer call per compression: a consolidation summarizes the
    # earlier layers together with the new span.
    assert len(summarizer.budgets) == compressions


@pytest.mark.slow
def test_the_target_is_a_share_of_the_messages_room_not_of_the_window() -> None:
    # A large pinned policy: half the window. Relative to the whole window, a 0.6
    # target would leave the messages a sliver; relative to their room, they keep
    # most of it.
    window = 10_000
    policy = SystemMessage("Policy: " + "Refunds need a receipt and a reason. " * 550, id="p")
    model = ScriptedChatModel(default="ok", report_usage=False)
    compression = TieredCompression(target_utilization=0.6)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    budget = Budget.for_window(window, system=5_200, messages=3_000, tools=0, auxiliary=0)
    pipeline = Pipeline([PreflightCheck(), compression], budget=budget)
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    config = cfg("room")
    graph.invoke({"messages": [policy]}, config)
    feed(graph, range(60), config)
    ledger = graph.get_state(config).values["context_ledger"]
    runs = [e["data"] for e in ledger if e["kind"] == "compression"]
    assert runs
    used = [e["data"]["used"] for e in ledger if e["kind"] == "utilization"]
    system = used[-1]["system"]
    assert system > 0.45 * window
    room = min(0.85 * window, budget.prompt_limit) - system
    after = [r["utilization_after"] * window - system for r in runs]
    # After each compression the messages hold about 60% of their room (summaries
    # are written to what the target leaves), well under the red line.
    assert all(0.4 * room <= a <= 0.75 * room for a in after), (room, after)


def test_graphs_whose_history_cannot_be_rewritten_are_refused_at_wiring() -> None:
    from langgraph_ctx import ConfigurationError

    for schema, match in ((DeltaState, "DeltaChannel"), (NoMessages, "no 'messages'")):
        builder = StateGraph(schema)
        builder.add_node("call_llm", lambda s: {})
        builder.add_edge(START, "call_llm")
        with pytest.raises(ConfigurationError, match=match):
            Pipeline([PreflightCheck(), TieredCompression()]).attach(builder)


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]


class NoMessages(TypedDict):
    notes: list[str]


def test_large_tool_results_in_the_current_turn_are_compacted_not_overflowed() -> None:
    """One user turn with many large tool results outgrows the budget, and there is
    nothing older to summarize: the older results are compacted in place (same id,
    same call), the originals archived, the latest result left verbatim."""
    archive = InMemoryArchive()
    graph, model, compression = make_graph(archive=archive)
    config = cfg("compact")
    graph.invoke({"messages": [HumanMessage("Audit the open invoices.", id="task")]}, config)
    graph.invoke({"messages": [HumanMessage("Start with the March batch.", id="ask")]}, config)
    sent: list[BaseMessage] = []
    for i in range(12):
        rows = [{"invoice": f"INV-{i:02d}{k:02d}", "amount": 100 * k + i} for k in range(25)]
        call = {"name": "list_invoices", "args": {"page": i}, "id": f"call{i}"}
        exchange = [
            AIMessage("", tool_calls=[call], id=f"c{i}"),
            ToolMessage(json.dumps(rows), tool_call_id=f"call{i}", id=f"r{i}"),
        ]
        sent += exchange
        graph.invoke({"messages": exchange}, config)
    assert events(graph, config, "tool_results_compacted")
    assert not events(graph, config, "budget_unreachable")
    limit = Budget.for_window(4_000).prompt_limit
    for c in model.calls:
        assert_no_orphans(list(c.messages))
        assert COUNTER.count_messages(list(c.messages)) <= limit
    last = list(model.calls[-1].messages)
    assert "Start with the March batch." in [m.text for m in last]  # the request stays
    assert last[-1].id == "r11" and not is_compacted(last[-1])  # the latest result too
    state = graph.get_state(config).values["messages"]
    shrunk = [m for m in state if is_compacted(m)]
    assert shrunk and all(isinstance(m, ToolMessage) for m in shrunk)
    for m in shrunk:
        original = next(x for x in sent if x.id == m.id)
        assert m.tool_call_id == original.tool_call_id
        assert compression.original("compact", str(m.id)) == original  # nothing lost
        assert "INV-" in m.text  # the digest keeps the records' identifiers
