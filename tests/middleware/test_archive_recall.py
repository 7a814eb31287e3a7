"""Recall from the archive: what compression took out comes back when the question needs it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    ContextState,
    Pipeline,
    PreflightCheck,
    TieredCompression,
    call_llm_node,
)
from langgraph_ctx.markers import KEY, RECALL_PREFIX, is_summary
from langgraph_ctx.middleware.recall import MemoryRecall, searches
from langgraph_ctx.retrieval.memory import MemoryBank
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive
from langgraph_ctx.testing import ScriptedChatModel

FACT = "The vault code for the Lisbon office is ZX-4471."
QUESTION = "What is the vault code for the Lisbon office?"


def filler(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"Turn {i}: please log shipment {i} for route {i % 37}.", id=f"u{i}"),
        AIMessage(f"Logged shipment {i} on route {i % 37}.", id=f"a{i}"),
    ]


class Agent:
    """Pre-flight, compression, recall over compression's archive; the model says 'ok'."""

    def __init__(
        self,
        *,
        budget: Budget | None = None,
        bank: MemoryBank | None = None,
        archive: MessageArchive | None = None,
        **recall: Any,
    ) -> None:
        self.archive = archive if archive is not None else InMemoryArchive()
        self.model = ScriptedChatModel(default="ok", report_usage=False)
        layers = [
            PreflightCheck(),
            TieredCompression(archive=self.archive),
            MemoryRecall(bank, archive=self.archive, **recall),
        ]
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(self.model))
        builder.add_edge(START, "call_llm")
        pipeline = Pipeline(layers, budget=budget or Budget.for_messages(1_500, window=16_000))
        self.graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())

    def send(self, messages: list[BaseMessage], thread: str = "t", **config: Any) -> None:
        configurable = {"thread_id": thread, **config}
        self.graph.invoke({"messages": messages}, {"configurable": configurable})

    def history(self, thread: str = "t") -> list[BaseMessage]:
        state = self.graph.get_state({"configurable": {"thread_id": thread}})
        return list(state.values["messages"])

    def recalled(self) -> str:
        """The recall block of the last model call ('' if none)."""
        last = self.model.calls[-1].messages
        return next((m.text for m in last if m.text.startswith(RECALL_PREFIX)), "")


@pytest.mark.slow
def test_a_fact_compressed_away_5000_turns_earlier_comes_back_when_asked() -> None:
    agent = Agent()
    agent.send([HumanMessage("Start the shipment log.", id="task"), HumanMessage(FACT, id="fact")])
    for start in range(0, 5_000, 100):  # 100 turns an invoke: the same history, faster
        agent.send([m for i in range(start, start + 100) for m in filler(i)])
    history = agent.history()
    assert "fact" not in {m.id for m in history}  # compressed away
    assert agent.archive.get("t", "fact") is not None
    agent.send([HumanMessage(QUESTION, id="q")])
    block = agent.recalled()
    assert "ZX-4471" in block and "archived fact" in block
    assert "in summary #" in block  # the summary that replaced it is named
    # Ephemeral: the model saw it, the checkpoint never did.
    assert not any(m.text.startswith(RECALL_PREFIX) for m in agent.history())


def test_what_the_history_still_holds_is_not_recalled_again() -> None:
    agent = Agent()
    agent.send([HumanMessage(FACT, id="fact")])
    agent.send([HumanMessage(QUESTION, id="q")])
    assert "ZX-4471" not in agent.recalled()  # in plain view: nothing to bring back


@pytest.mark.slow
def test_the_block_fits_the_auxiliary_budget_and_the_red_line() -> None:
    agent = Agent(max_tokens=120)
    agent.send([HumanMessage("Start.", id="task")])
    agent.send([HumanMessage(f"{FACT} " + "Padding words about vaults. " * 200, id="fact")])
    for start in range(0, 600, 100):
        agent.send([m for i in range(start, start + 100) for m in filler(i)])
    agent.send([HumanMessage(QUESTION, id="q")])
    ledger = agent.graph.get_state({"configurable": {"thread_id": "t"}}).values["context_ledger"]
    recall = [e["data"] for e in ledger if e["kind"] == "recall"][-1]
    assert 0 < recall["tokens"] <= 120 and recall["archived"] == 1
    assert "ZX-4471" in agent.recalled()  # the passage that matches, not the padding


@pytest.mark.slow
def test_without_a_user_id_the_archive_is_still_recalled_and_the_ledger_says_why() -> None:
    agent = Agent(bank=MemoryBank())
    agent.send([HumanMessage("Start.", id="task"), HumanMessage(FACT, id="fact")])
    for start in range(0, 400, 100):
        agent.send([m for i in range(start, start + 100) for m in filler(i)])
    agent.send([HumanMessage(QUESTION, id="q")])
    assert "ZX-4471" in agent.recalled()
    ledger = agent.graph.get_state({"configurable": {"thread_id": "t"}}).values["context_ledger"]
    [said] = [e["data"] for e in ledger if e["kind"] == "recall_scope"]  # once a session
    assert said == {"missing": ["user_id"], "recall": "archive recall only (thread scope)"}


@pytest.mark.slow
def test_the_best_memory_is_recalled_wherever_it_sits_among_100_000() -> None:
    planted = {
        0: ("The loading dock code is 4471.", "What is the code of the loading dock?"),
        49_999: ("The backup generator lives in room B12.", "Where is the backup generator?"),
        99_999: ("Maria prefers calls after 3 pm.", "When does Maria prefer calls?"),
    }
    texts = [f"Shift log {i}: pump {i % 89} checked on line {i % 97}." for i in range(100_000)]
    for at, (fact, _) in planted.items():
        texts[at] = fact
    bank = MemoryBank()
    bank.remember_many(("ana",), texts)
    agent = Agent(bank=bank, max_tokens=200)
    for n, (fact, question) in enumerate(planted.values()):
        agent.send([HumanMessage(question, id=f"q{n}")], user_id="ana")
        assert fact in agent.recalled()


LETTERS = st.sampled_from(["alpha", "bravo", "charlie"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    facts=st.lists(st.tuples(LETTERS, LETTERS, st.integers(0, 9_999)), min_size=1, max_size=8),
    thread=LETTERS,
    user=LETTERS,
)
def test_recall_never_crosses_a_thread_or_a_scope(
    facts: list[tuple[str, str, int]], thread: str, user: str
) -> None:
    # Every fact answers the same question, in some thread's archive and some user's
    # memories; only the asking thread's and the asking user's may come back.
    archive, bank = InMemoryArchive(), MemoryBank()
    for n, (where, who, code) in enumerate(facts):
        text = f"The vault code is {where}-{who}-{code}."
        archive.put(where, [HumanMessage(text, id=f"f{n}")], reason="compressed")
        bank.remember((who,), text)
    agent = Agent(bank=bank, archive=archive)
    agent.send([HumanMessage("What is the vault code?", id="q")], thread=thread, user_id=user)
    lines = [line for line in agent.recalled().splitlines() if "vault code is" in line]
    # What is the asker's own is found; nothing else ever is.
    assert bool(lines) == any(where == thread or who == user for where, who, _ in facts)
    for line in lines:
        where, who, _ = line.rsplit(" ", 1)[1].rstrip(".").split("-")
        if line.startswith("- [archived"):
            assert where == thread, (line, thread)
        else:
            assert line.startswith("- [observation]") and who == user, (line, user)


def test_recall_of_the_same_turn_is_stable_and_searches_once() -> None:
    calls: list[str] = []

    class Counting(InMemoryArchive):
        def search(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(kwargs.get("within", ""))
            return super().search(*args, **kwargs)

    agent = Agent(archive=Counting())
    agent.archive.put("t", [HumanMessage(FACT, id="old")], reason="compressed into summary #1")
    agent.send([HumanMessage(QUESTION, id="q")])
    first = agent.recalled()
    agent.send([AIMessage("", id="a", tool_calls=[]), SystemMessage("tool done", id="s")])
    # One round: the question, then it within the name in it ("Lisbon"); none for the
    # second call.
    assert agent.recalled() == first and calls == ["", "Lisbon"]


@pytest.mark.slow
def test_a_snippet_names_the_summary_that_replaced_it() -> None:
    agent = Agent()
    agent.send([HumanMessage("Start.", id="task"), HumanMessage(FACT, id="fact")])
    for start in range(0, 300, 100):
        agent.send([m for i in range(start, start + 100) for m in filler(i)])
    hit = agent.archive.search("t", QUESTION)[0]
    assert hit.message_id == "fact" and hit.reason.startswith("compressed into summary #")
    seq = int(hit.reason.rsplit("#", 1)[1])
    # That summary names it: in the history still, or archived when a meta-summary took it.
    summary = next((m for m in agent.history() if m.id == f"lgctx-summary-{seq}"), None)
    summary = summary or agent.archive.get("t", f"lgctx-summary-{seq}")
    assert summary is not None and is_summary(summary)
    assert "fact" in summary.additional_kwargs[KEY]["summary"]["covers"]


def test_a_long_tool_result_whose_one_line_answers_beats_short_lookalike_questions() -> None:
    # Earlier questions about other offices, short and in the question's own words,
    # outrank the result's one answering line even passage by passage ("Lisbon" is a
    # common word here). Among the candidates, by its best passage and the name asked
    # about, it comes first.
    offices = ["Lisbon", "Porto", "Faro", "Braga", "Evora", "Coimbra", "Aveiro", "Leiria"]
    lines = [
        f"INFO {offices[i % 8]} office: shelf {i} inventoried, {i % 7} boxes moved."
        for i in range(80)
    ]
    lines.insert(50, "INFO update: the vault code for the Lisbon office is ZX-4471.")
    archive = InMemoryArchive()
    shipped = [HumanMessage(f"The Lisbon office shipped crate {i}.", id=f"s{i}") for i in range(40)]
    archive.put("t", shipped, reason="compressed into summary #1")
    result = ToolMessage("\n".join(lines), tool_call_id="c1", name="search_logs", id="logs")
    archive.put("t", [result], reason="compressed into summary #2")
    asked = [
        HumanMessage(f"What is the vault code for the {city} office?", id=f"asked-{city}")
        for city in ("Madrid", "Rome", "Oslo", "Paris", "Vienna", "Prague", "Bern", "Riga")
    ]
    archive.put("t", asked, reason="compressed into summary #3")
    first = [h.message_id for h in archive.search("t", QUESTION, limit=9)]
    assert "logs" not in first[:8]  # by the index alone, below all eight questions
    agent = Agent(archive=archive, archive_hits=2)
    agent.send([HumanMessage(QUESTION, id="q")])
    block = agent.recalled()
    assert "ZX-4471" in block and "archived logs;" in block.splitlines()[1]


def test_a_fact_is_found_by_its_name_when_lookalike_questions_fill_the_search() -> None:
    # Eighty earlier questions and answers about other suppliers' invoices share every
    # word but the name with the question, and "Nakamura" is a common word here: the
    # question's own search returns only them. The search by the name finds the row,
    # and naming the supplier whole ranks it first.
    question = "What was the invoice number for the Nakamura Supply order?"
    archive = InMemoryArchive()
    for n in range(80):
        other = f"Supplier{n} Supply"
        archive.put(
            "t",
            [
                HumanMessage(f"What was the invoice number for the {other} order?", id=f"q{n}"),
                AIMessage(f"The invoice number for the {other} order is INV-{n:04d}.", id=f"a{n}"),
            ],
            reason="compressed into summary #1",
        )
    stacked = " The crate was checked, weighed and stacked." * 5
    signed = [
        HumanMessage(f"P. Nakamura signed crate {i}.{stacked}", id=f"s{i}") for i in range(200)
    ]
    archive.put("t", signed, reason="compressed into summary #1")
    note = "the warehouse team reviewed the pallet manifest after the Monday sync"
    rows = [
        f'{{"order_id": "SO-{i}", "customer": "Nakamura Supply", "note": "{note}"}}'
        for i in range(30)
    ]
    rows.insert(17, '{"order_id": "SO-99", "customer": "Nakamura Supply", "invoice": "INV-7770"}')
    result = ToolMessage("\n".join(rows), tool_call_id="c1", name="query_orders", id="orders")
    archive.put("t", [result], reason="compressed into summary #2")
    # Recall asks for 4 per snippet shown (8), plus what the history still holds.
    assert "orders" not in {h.message_id for h in archive.search("t", question, limit=40)}
    agent = Agent(archive=archive)
    agent.send([HumanMessage(question, id="q")])
    block = agent.recalled().splitlines()
    assert "archived orders;" in block[1] and "INV-7770" in block[1]


def test_a_question_naming_many_things_searches_its_first_four_names_only() -> None:
    query = "Compare Acme Corp with Globex, Initech, Umbrella Corp, Hooli and Vehement Capital."
    assert searches(query, 40, 8) == [
        ("", 40),
        ("Acme Corp", 32),
        ("Globex", 32),
        ("Initech", 32),
        ("Umbrella Corp", 32),
    ]
    assert searches("What is the vault code?", 40, 8) == [("", 40)]


def test_the_answer_is_found_among_hundreds_of_passages_that_name_the_thing_asked_about() -> None:
    # Earlier questions about other suppliers share the question's words, and hundreds
    # of short log lines name Nakamura Supply: a search by the question, or by the name
    # alone, fills with them. Among the passages that hold the name, the question's
    # other words pick the long order row that answers, and its snippet holds the value.
    question = "What was the invoice number for the Nakamura Supply order?"
    archive = InMemoryArchive()
    asked = [
        HumanMessage(f"What was the invoice number for the Supplier{n} Supply order?", id=f"q{n}")
        for n in range(80)
    ]
    logs = [
        HumanMessage(f"retrying export for Nakamura Supply (attempt {i % 5}/5)", id=f"l{i}")
        for i in range(400)
    ]
    note = "the warehouse team reviewed the pallet manifest after the Monday sync"
    rows = [
        f'{{"order_id": "SO-{i}", "customer": "Nakamura Supply", "note": "{note}", '
        f'"contact": "P. Okafor", "status": "open", "total": {i}.5, "currency": "USD"}}'
        for i in range(40)
    ]
    rows.insert(23, rows[22][:-1] + ', "invoice": "INV-2025-0417"}')
    result = ToolMessage("\n".join(rows), tool_call_id="c1", name="query_orders", id="orders")
    archive.put("t", [*asked[:40], result, *logs, *asked[40:]], reason="compressed into summary #1")
    question_hits = archive.search("t", question, limit=40)
    name_hits = archive.search("t", "Nakamura Supply", limit=32)
    assert "orders" not in {h.message_id for h in [*question_hits, *name_hits]}
    agent = Agent(archive=archive)
    agent.send([HumanMessage(question, id="q")])
    block = agent.recalled().splitlines()
    assert "archived orders;" in block[1] and "INV-2025-0417" in block[1]


def test_the_agents_plan_traces_give_way_to_the_original() -> None:
    """The think node's [plan] traces are the agent's own reasoning, not what the user
    or a tool said; a hypothesis restating BACM's budget line matched every one of
    them, and they filled the block (BACM with recall, issue 31)."""
    agent = Agent(budget=Budget.for_window(16_000), archive_hits=2)
    traces = [
        AIMessage(
            f"[plan] respond: the vault code for the Lisbon office ({i})",
            id=f"plan-{i}",
            name="think",
            additional_kwargs={KEY: {"note": True}},
        )
        for i in range(6)
    ]
    original = HumanMessage(f"By the way, for the books: {FACT}", id="fact")
    agent.archive.put("t", [original, *traces], reason="test")
    agent.send([HumanMessage("Start.", id="task"), HumanMessage(QUESTION, id="q")])
    block = agent.recalled()
    assert "archived fact;" in block, block
    assert "plan-" not in block, block


def test_the_question_is_searched_without_the_budget_line_bacm_adds_to_it() -> None:
    """BACM appends its budget line to the last user message for this call only
    (PER_CALL_TAIL); searched with the question, its words ("tokens", "fold", "steps")
    matched whatever archived message held them."""
    from langgraph_ctx.markers import PER_CALL_TAIL
    from langgraph_ctx.middleware.recall import query_of
    from langgraph_ctx.pipeline import View

    line = "[Context budget: used 4,731 of 6,625 tokens. Call fold(commit_ids, merged).]"
    asked = HumanMessage(
        [{"type": "text", "text": QUESTION}, {"type": "text", "text": line}],
        id="q",
        additional_kwargs={KEY: {PER_CALL_TAIL: True}},
    )
    assert query_of(View({"messages": [asked]})) == QUESTION
    unmarked = asked.model_copy(update={"additional_kwargs": {}})
    assert "fold" in query_of(View({"messages": [unmarked]}))  # only the marked block goes
