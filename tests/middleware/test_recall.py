"""Memory recall: budget, level boost, ephemerality, timeout, scopes, warming, observations."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import Op, Result
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore

from langgraph_ctx import (
    Budget,
    CallContext,
    ConfigurationError,
    ContextState,
    Pipeline,
    PreflightCheck,
    TieredCompression,
    TokenCounter,
    UsageReport,
    View,
    as_middleware,
    call_llm_node,
)
from langgraph_ctx.markers import KEY, RECALL_PREFIX, is_ephemeral, is_summary, summary_body
from langgraph_ctx.middleware.recall import RECALL_END, MemoryRecall, insert_at, query_of
from langgraph_ctx.middleware.summary_observer import SummaryObserver
from langgraph_ctx.retrieval.memory import MemoryBank
from langgraph_ctx.state import LedgerEntry
from langgraph_ctx.testing import ScriptedChatModel
from tests.test_memory import FACTS, HashEmbeddings


class Graph:
    """One node under pre-flight, recall (+ compression, observer); the model says 'ok'."""

    def __init__(
        self,
        bank: MemoryBank,
        *,
        window: int = 16_000,
        compress: bool = False,
        observe: bool = False,
        budget: Budget | None = None,
        **options: Any,
    ) -> None:
        self.model = ScriptedChatModel(default="ok", report_usage=False)
        self.usage: list[UsageReport] = []
        layers: list[Any] = [PreflightCheck(), MemoryRecall(bank, **options), self._spy()]
        if compress:
            layers.append(TieredCompression())
        if observe:
            layers.append(SummaryObserver(bank))
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(self.model))
        builder.add_edge(START, "call_llm")
        self.log: list[tuple[str, LedgerEntry]] = []  # every event (the ledger keeps 64)
        pipeline = Pipeline(layers, budget=budget or Budget.for_window(window), events=self)
        self.graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())

    def write(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None:
        self.log += [(thread_id, e) for e in entries]

    async def awrite(self, thread_id: str, namespace: str, entries: Sequence[LedgerEntry]) -> None:
        self.write(thread_id, namespace, entries)

    def _spy(self) -> Any:
        # Runs after recall: sees the usage report recall left behind.
        @as_middleware(priority=50, nodes=["call_llm"])
        def spy(view: View, ctx: CallContext, call_next: Any) -> Any:
            assert ctx.usage is not None
            self.usage.append(ctx.usage)
            return call_next(view)

        return spy

    def ask(self, text: str, *, thread: str = "t", **configurable: Any) -> None:
        self.graph.invoke({"messages": [HumanMessage(text)]}, cfg(thread, **configurable))

    async def aask(self, text: str, *, thread: str = "t", **configurable: Any) -> None:
        await self.graph.ainvoke({"messages": [HumanMessage(text)]}, cfg(thread, **configurable))

    def sent(self) -> list[BaseMessage]:
        return list(self.model.calls[-1].messages)

    def block(self) -> SystemMessage | None:
        blocks = [m for m in self.sent() if m.text.startswith(RECALL_PREFIX)]
        assert len(blocks) <= 1
        return blocks[0] if blocks else None  # type: ignore[return-value]

    def events(self, thread: str, kind: str) -> list[dict[str, Any]]:
        return [e["data"] for t, e in self.log if t == thread and e["kind"] == kind]

    def checkpointed(self, thread: str) -> list[BaseMessage]:
        return list(self.graph.get_state(cfg(thread)).values["messages"])


def cfg(thread: str, **configurable: Any) -> Any:
    return {"configurable": {"thread_id": thread, **configurable}}


def bank_with(facts: Iterable[str], user: str = "alice", **options: Any) -> MemoryBank:
    bank = MemoryBank(**options)
    for fact in facts:
        bank.remember((user,), fact)
    return bank


def items(block: BaseMessage) -> list[str]:
    return [line for line in block.text.splitlines() if line.startswith("- [")]


# -- injection -----------------------------------------------------------------


def test_recall_block_reaches_the_model_but_never_the_checkpoint() -> None:
    g = Graph(bank_with(FACTS))
    g.graph.invoke(
        {"messages": [SystemMessage("You are a billing agent.", id="sys"), HumanMessage("hi")]},
        cfg("t", user_id="alice"),
    )
    g.ask("Which currency do my invoices use?", user_id="alice")
    block = g.block()
    assert block is not None and is_ephemeral(block)
    assert block.text.endswith(RECALL_END)
    assert f"- [observation] {FACTS[0]}" in items(block)
    assert block.additional_kwargs[KEY]["recall"]["keys"]
    sent = g.sent()
    assert sent[0].id == "sys" and sent[1] is block  # after the system prompt, before the talk
    stored = g.checkpointed("t")
    assert not any(RECALL_PREFIX in m.text for m in stored)
    assert not any(is_ephemeral(m) for m in stored)
    assert [m.text for m in stored[-2:]] == ["Which currency do my invoices use?", "ok"]
    (event,) = g.events("t", "recall")[-1:]
    assert event["items"] == len(items(block)) and event["tokens"] > 0
    assert event["latency_ms"] >= 0 and event["mode"] == "lexical"


async def test_async_recall_is_the_same() -> None:
    g = Graph(bank_with(FACTS))
    await g.aask("Which currency do my invoices use?", user_id="alice")
    block = g.block()
    assert block is not None and f"- [observation] {FACTS[0]}" in items(block)
    state = await g.graph.aget_state(cfg("t"))
    assert not any(RECALL_PREFIX in m.text for m in state.values["messages"])


def test_block_goes_after_summaries_and_before_the_conversation() -> None:
    summary = SystemMessage("[Conversation Summary] #1", additional_kwargs={KEY: {"summary": {}}})
    msgs: list[BaseMessage] = [
        SystemMessage("sys"),
        HumanMessage("pinned task"),
        summary,
        HumanMessage("latest"),
    ]
    assert insert_at(msgs) == 3
    assert insert_at([SystemMessage("a"), SystemMessage("b"), HumanMessage("c")]) == 2
    assert insert_at([HumanMessage("c")]) == 0


def test_query_is_latest_user_message_plus_current_hypothesis() -> None:
    msgs = [HumanMessage("old", id="h1"), AIMessage("x"), HumanMessage("new", id="h2")]
    current = {"turn": "h2", "hypothesis": "needs the EUR rate"}
    assert query_of(View({"messages": msgs, "thoughts": [current]})) == "new\nneeds the EUR rate"
    stale = {"turn": "h1", "hypothesis": "old idea"}
    assert query_of(View({"messages": msgs, "thoughts": [stale]})) == "new"


# -- budget --------------------------------------------------------------------


def numbered(n: int) -> list[str]:
    # Same length in words and tokens; relevance to "invoice" falls with i.
    return [f"fact {i:02d}: " + "invoice " * (n - i) + "ledger " * i + "noted" for i in range(n)]


def test_greedy_inclusion_fills_its_max_tokens_exactly() -> None:
    facts = numbered(12)
    bank = bank_with(facts)
    budget = Budget.for_window(16_000)
    g = Graph(bank, budget=budget, max_tokens=140)
    g.ask("invoice", user_id="alice")
    block = g.block()
    assert block is not None
    ranking = bank.search(("alice",), "invoice")
    chosen = items(block)
    assert 0 < len(chosen) < len(ranking)  # tight: only some fit
    assert chosen == [f"- [{m.level}] {m.text}" for m in ranking[: len(chosen)]]  # the top ones
    counter = TokenCounter()
    tokens = counter.count_message(block)
    event = g.events("t", "recall")[-1]
    assert event["budget"] == 140 and event["tokens"] == tokens <= 140
    # Greedy: the next-best memory would not have fitted.
    nxt = ranking[len(chosen)]
    bigger = block.text.replace(RECALL_END, f"- [{nxt.level}] {nxt.text}\n{RECALL_END}")
    assert counter.count_message(SystemMessage(bigger)) > 140
    # Exact accounting: what recall injected is now auxiliary usage.
    after = g.usage[-1]
    assert after.used["auxiliary"] == tokens
    assert after.remaining("auxiliary") == budget.auxiliary - tokens


def test_an_oversized_memory_is_skipped_and_smaller_ones_still_fit() -> None:
    bank = bank_with(["invoice " * 300 + "giant", "invoice totals are in EUR"])
    g = Graph(bank, max_tokens=200)
    g.ask("invoice", user_id="alice")
    block = g.block()
    assert block is not None and items(block) == ["- [observation] invoice totals are in EUR"]


def test_budget_shrinks_when_the_history_is_large() -> None:
    bank = bank_with(numbered(40), candidates=40)
    g = Graph(bank, window=8_000)
    g.ask("invoice", user_id="alice", thread="short")
    short = g.events("short", "recall")[-1]
    filler = [HumanMessage("older talk about shipping schedules " * 60) for _ in range(20)]
    g.graph.invoke({"messages": filler}, cfg("long", user_id="alice"))
    g.ask("invoice", user_id="alice", thread="long")
    long = g.events("long", "recall")[-1]
    # The room the prompt leaves under the red line, not the auxiliary share alone
    # (1,250 at 8K, where recall used to leave most of the room unused).
    assert 0 < long["budget"] < Budget.for_window(8_000).auxiliary < short["budget"]
    assert 0 < long["items"] < short["items"]


def test_recall_never_pushes_the_prompt_past_the_red_line() -> None:
    """A pinned policy far over the system share is not covered by rebalancing: the
    auxiliary allocation alone would let recall overflow the prompt limit."""
    budget = Budget.for_window(6_000)
    g = Graph(bank_with(numbered(40), candidates=40), budget=budget)
    policy = SystemMessage("Refunds need a receipt and a reason. " * 150)
    history = [HumanMessage("older talk about shipping schedules " * 80) for _ in range(7)]
    g.graph.invoke({"messages": [policy, *history]}, cfg("t", user_id="alice"))
    g.ask("invoice", user_id="alice")
    counter = TokenCounter()
    sent = counter.count_messages(g.sent())
    event = g.events("t", "recall")[-1]
    assert event["tokens"] > 0  # recall did add something...
    assert sent <= budget.red_line  # ...and the prompt stays under the line
    assert counter.count_messages([policy]) > budget.system  # the policy is over its share


def test_a_summary_still_in_the_history_is_not_recalled_again() -> None:
    bank = MemoryBank()
    g = Graph(bank, window=4_000, compress=True, observe=True)
    long_session(g, "a1", "alice", "ALC", turns=24)
    assert g.events("a1", "observe")
    g.ask("What happened with invoice ALC-0003 and the others settled?", thread="a1",
          user_id="alice")  # fmt: skip
    active = {summary_body(m) for m in g.sent() if is_summary(m)}
    assert active  # a summary is in the prompt, and the bank holds it as an observation
    assert any(m.text in active for m in bank.search(("alice",), "invoice ALC-0003 settled"))
    block = g.block()
    assert block is None or not any(line[len("- [observation] "):] in active
                                     for line in items(block))  # fmt: skip


def test_max_tokens_caps_recall_below_the_auxiliary_budget() -> None:
    g = Graph(bank_with(numbered(20)), max_tokens=80)
    g.ask("invoice", user_id="alice")
    event = g.events("t", "recall")[-1]
    assert event["budget"] == 80 and 0 < event["tokens"] <= 80


# -- level boost ---------------------------------------------------------------


def test_level_boost_puts_a_slightly_less_relevant_principle_first() -> None:
    observation = "the refund window in our refund policy is thirty days"
    principle = "refund policy: confirm the window first"

    def order(boosts: dict[str, float] | None) -> list[str]:
        bank = bank_with(["shipping takes five days", "invoices are due monthly"], boosts=boosts)
        bank.remember(("alice",), observation, level="observation")
        bank.remember(("alice",), principle, level="principle")
        relevance = {m.text: m.relevance for m in bank.search(("alice",), question)}
        assert 1 / 1.3 < relevance[principle] / relevance[observation] < 1  # close, but second
        g = Graph(bank)
        g.ask(question, user_id="alice")
        block = g.block()
        assert block is not None
        return [line.split("]")[0] for line in items(block)]

    question = "what is the refund policy window"
    flat = {"observation": 1.0, "pattern": 1.0, "principle": 1.0, "framework": 1.0}
    assert order(flat) == ["- [observation", "- [principle"]
    assert order(None) == ["- [principle", "- [observation"]  # default boost 1.3
    small = {"pattern": 1.01, "principle": 1.02, "framework": 1.03}
    assert order(small) == ["- [observation", "- [principle"]


# -- timeout and failure -------------------------------------------------------


class SlowStore(InMemoryStore):
    """Slow to read (a lexical search reads the memories its index found by key)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if any(type(op).__name__ in ("SearchOp", "GetOp") for op in ops):
            time.sleep(self.delay)
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if any(type(op).__name__ in ("SearchOp", "GetOp") for op in ops):
            await asyncio.sleep(self.delay)
        return await super().abatch(ops)


class BrokenStore(InMemoryStore):
    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("memory service unreachable")

    async def asearch(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("memory service unreachable")


def stocked(store: InMemoryStore) -> MemoryBank:
    bank = MemoryBank(store)
    for fact in FACTS:
        bank.remember(("alice",), fact)
    return bank


@pytest.mark.slow
def test_a_slow_store_times_out_and_the_call_goes_on() -> None:
    g = Graph(stocked(SlowStore(delay=3.0)), timeout=0.2)
    start = time.perf_counter()
    g.ask("Which currency do my invoices use?", user_id="alice")
    assert time.perf_counter() - start < 1.5
    assert g.block() is None
    assert g.checkpointed("t")[-1].text == "ok"
    (event,) = g.events("t", "recall_timeout")
    assert event["timeout_s"] == 0.2 and 150 <= event["latency_ms"] < 1500
    assert g.events("t", "recall") == []


@pytest.mark.slow
async def test_a_slow_store_times_out_under_ainvoke() -> None:
    g = Graph(stocked(SlowStore(delay=3.0)), timeout=0.2)
    start = time.perf_counter()
    await g.aask("Which currency do my invoices use?", user_id="alice")
    assert time.perf_counter() - start < 1.5
    assert g.block() is None
    assert len(g.events("t", "recall_timeout")) == 1


def test_a_store_just_under_the_timeout_still_recalls() -> None:
    g = Graph(stocked(SlowStore(delay=0.05)), timeout=2.0)
    g.ask("Which currency do my invoices use?", user_id="alice")
    assert g.block() is not None
    assert g.events("t", "recall")[-1]["latency_ms"] >= 50


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_failing_store_is_recorded_and_the_call_goes_on(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    g = Graph(MemoryBank(BrokenStore()))
    if mode == "sync":
        g.ask("Which currency?", user_id="alice")
    else:
        asyncio.run(g.aask("Which currency?", user_id="alice"))
    assert g.block() is None and g.checkpointed("t")[-1].text == "ok"
    (event,) = g.events("t", "recall_error")
    assert "ConnectionError: memory service unreachable" in event["error"]
    assert "recall_error" in caplog.text


def test_no_scope_skips_recall_and_says_why() -> None:
    g = Graph(bank_with(FACTS))
    g.ask("Which currency do my invoices use?")
    assert g.block() is None
    assert g.events("t", "recall_skipped")[-1]["reason"] == "no scope in config"


def test_recall_needs_preflight_and_a_valid_timeout() -> None:
    with pytest.raises(ConfigurationError, match="timeout"):
        MemoryRecall(MemoryBank(), timeout=0)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok")))
    builder.add_edge(START, "call_llm")
    with pytest.raises(ConfigurationError, match="needs PreflightCheck"):  # at wiring
        Pipeline([MemoryRecall(MemoryBank())]).attach(builder)


# -- scopes --------------------------------------------------------------------


def test_one_user_never_recalls_anothers_memories() -> None:
    bank = MemoryBank()
    bank.remember(("alice",), "alice's locker code is 4711")
    bank.remember(("bob",), "bob's locker code is 1234")
    g = Graph(bank)
    g.ask("what is my locker code?", user_id="alice", thread="a")
    alice = g.block()
    g.ask("what is my locker code?", user_id="bob", thread="b")
    bob = g.block()
    assert alice is not None and "4711" in alice.text and "1234" not in alice.text
    assert bob is not None and "1234" in bob.text and "4711" not in bob.text


# -- warming -------------------------------------------------------------------


def test_a_new_session_on_the_same_task_starts_warm() -> None:
    bank = bank_with(FACTS)
    bank.finish_session(
        ("alice",), "q1-audit", "Reconciled 40 invoices; INV-0007 disputed.", thread_id="s1"
    )
    g = Graph(bank)
    g.ask("Where were we with the audit?", thread="s2", user_id="alice", task_key="q1-audit")
    block = g.block()
    assert block is not None
    assert items(block)[0] == "- [previous session] Reconciled 40 invoices; INV-0007 disputed."
    assert g.events("s2", "recall")[-1]["warm"] is True
    for thread, user, task in [("s3", "alice", "other"), ("s4", "bob", "q1-audit")]:
        g.ask("Where were we with the audit?", thread=thread, user_id=user, task_key=task)
        assert g.block() is None or "INV-0007" not in g.block().text  # type: ignore[union-attr]
    # The session that wrote the summary is not warmed with it.
    g.ask("anything else on the audit?", thread="s1", user_id="alice", task_key="q1-audit")
    assert g.block() is None or "INV-0007" not in g.block().text  # type: ignore[union-attr]


def test_warming_comes_first_and_is_trimmed_to_the_budget() -> None:
    bank = bank_with(numbered(10))
    bank.finish_session(("alice",), "audit", "long summary of invoices " * 200)
    g = Graph(bank, max_tokens=120)
    g.ask("invoice", user_id="alice", task_key="audit")
    block = g.block()
    assert block is not None
    first = items(block)[0]
    assert first.startswith("- [previous session] long summary") and first.endswith("[...]")
    assert TokenCounter().count_message(block) <= 120


def test_task_key_can_come_from_the_session_state() -> None:
    bank = MemoryBank()
    bank.finish_session(("alice",), "audit", "Closed 3 invoices.")
    g = Graph(bank)
    g.graph.invoke(
        {"messages": [HumanMessage("go on")], "session": {"task_key": "audit"}},
        cfg("t", user_id="alice"),
    )
    block = g.block()
    assert block is not None and "Closed 3 invoices." in block.text


# -- the automatic observation path ----------------------------------------------

FILLER = "Cross-checked the ledger entries and shipping schedule for the quarter. " * 10


def long_session(g: Graph, thread: str, user: str, tag: str, turns: int = 30) -> None:
    for i in range(turns):
        g.ask(f"Turn {i}: invoice {tag}-{i:04d} is settled. {FILLER}", thread=thread, user_id=user)


@pytest.mark.slow
def test_compression_summaries_become_observations_in_the_same_scope_only() -> None:
    bank = MemoryBank()
    g = Graph(bank, window=4_000, compress=True, observe=True)
    long_session(g, "a1", "alice", "ALC")
    long_session(g, "b1", "bob", "BOB")
    assert g.events("a1", "compression") and g.events("a1", "observe")
    alice_obs = bank.search(("alice",), "invoice settled ALC-0003 BOB-0003")
    bob_obs = bank.search(("bob",), "invoice settled ALC-0003 BOB-0003")
    assert alice_obs and all(m.source == "compression" for m in alice_obs)
    assert all("BOB-" not in m.text for m in alice_obs)
    assert bob_obs and all("ALC-" not in m.text for m in bob_obs)
    # A new session of alice's gets the compressed-away detail back; bob's never does.
    g.ask("What happened with invoice ALC-0003?", thread="a2", user_id="alice")
    block = g.block()
    assert block is not None and "ALC-0003" in block.text
    g.ask("What happened with invoice ALC-0003?", thread="b2", user_id="bob")
    block = g.block()
    assert block is None or "ALC-" not in block.text


@pytest.mark.slow
def test_observations_are_written_once_per_summary() -> None:
    bank = MemoryBank()
    g = Graph(bank, window=4_000, compress=True, observe=True)
    long_session(g, "a1", "alice", "ALC", turns=40)
    compressions = g.events("a1", "compression")
    keys = [k for e in g.events("a1", "observe") for k in e["keys"]]
    assert len(keys) == len(set(keys)) == len(compressions)


async def test_observations_under_ainvoke() -> None:
    bank = MemoryBank()
    g = Graph(bank, window=4_000, compress=True, observe=True)
    for i in range(30):
        await g.aask(f"Turn {i}: invoice ALC-{i:04d} is settled. {FILLER}", user_id="alice")
    assert bank.search(("alice",), "ALC-0002 settled")


# -- Postgres + pgvector ---------------------------------------------------------


def test_recall_on_postgres_with_pgvector(postgres_db: str) -> None:
    index: Any = {"embed": HashEmbeddings(), "dims": 64, "fields": ["text"]}
    with PostgresStore.from_conn_string(postgres_db, index=index) as store:
        store.setup()
        bank = MemoryBank(store)
        for fact in FACTS:
            bank.remember(("alice",), fact)
        bank.remember(("alice",), "Quote invoice currency codes in full", level="principle")
        bank.remember(("bob",), "bob's preferred currency for invoices is USD")
        bank.finish_session(("alice",), "audit", "Audit half done: March open.", thread_id="s0")
        g = Graph(bank)
        g.ask("preferred currency for invoices", user_id="alice", task_key="audit")
        block = g.block()
        assert block is not None
        lines = items(block)
        assert lines[0] == "- [previous session] Audit half done: March open."
        assert f"- [observation] {FACTS[0]}" in lines and "- [principle]" in block.text
        assert "USD" not in block.text
        assert g.events("t", "recall")[-1]["mode"] == "semantic"
        asyncio.run(g.aask("preferred currency for invoices", thread="t2", user_id="bob"))
        bob = g.block()
        assert bob is not None and "USD" in bob.text and FACTS[0] not in bob.text
        assert not any(RECALL_PREFIX in m.text for m in g.checkpointed("t"))
