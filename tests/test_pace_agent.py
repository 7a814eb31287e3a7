"""PACE as ``create_context_agent(strategy="pace")`` builds it, with the agent's other
parts: ``think`` after a tool result, recall over its steps, a node that removes what
it was shown, the glimpse its blocks name, and a scorer that is not loaded yet.

PACE's summaries are made in the background, so what a call shows depends on when
they finish. Each test fixes that timing: summaries made at once (``inline``: ready
at the next call) or never (``never``: every step full or a placeholder)."""

from __future__ import annotations

import concurrent.futures
import itertools
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.markers import is_view_only
from langgraph_ctx.state import with_keys
from langgraph_ctx.strategies import PaceState, PredictiveExtraction
from langgraph_ctx.strategies.pace import middleware as pace_middleware
from langgraph_ctx.strategies.pace import scorer as pace_scorer
from langgraph_ctx.strategies.pace.policy import PaceSettings
from langgraph_ctx.strategies.pace.scorer import LexicalScorer
from langgraph_ctx.strategies.pace.summaries import SummaryJob
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.scripted import thought_about_the_question
from tests.agents import one_tool_agent

WORDS = ("ledger", "invoice", "carrier", "warehouse", "pallet", "customs", "tariff", "route")


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the records."""
    entries = (f"{w}-{topic}-{i}" for i in range(60) for w in WORDS[:2])
    return f"Records on {topic}: " + " ".join(entries)


def acting_model() -> ScriptedChatModel:
    """Calls ``lookup`` once per turn (on the question's last word), then answers;
    thinks one confident thought per turn."""
    calls = iter(range(10_000))

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(f"Found it: {messages[-1].text[:40]}")
        asked = next(m.text for m in reversed(messages) if m.type == "human")
        topic = asked.split()[-1].strip("?.")
        call = {"name": "lookup", "args": {"topic": topic}, "id": f"c{next(calls)}"}
        return AIMessage("", tool_calls=[call])

    return ScriptedChatModel(
        default=reply, structured_default=thought_about_the_question("tool_call", "lookup")
    )


@pytest.fixture(params=["inline", "never"])
def summary_timing(request: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """PACE's background summaries made at once, or never (held until the test ends)."""
    real = pace_middleware.start

    def start(summarizer: Any, messages: Any, detailed: int, brief: int) -> SummaryJob:
        if request.param == "never":
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            return SummaryJob(future)  # never done; given up after the timeout
        job = real(summarizer, messages, detailed, brief)
        job.future.result(timeout=30)  # made before the call goes on
        return job

    monkeypatch.setattr(pace_middleware, "start", start)
    monkeypatch.setattr(pace_middleware, "default_scorer", LexicalScorer)
    yield request.param


def config(thread: str = "t", limit: int = 40) -> Any:
    return {"configurable": {"thread_id": thread}, "recursion_limit": limit}


def question(i: int) -> HumanMessage:
    topic = WORDS[i % len(WORDS)]
    return HumanMessage(f"Question {i}: what do the records say about {topic}?", id=f"q{i}")


@pytest.mark.slow
def test_think_after_a_tool_result_acts_whatever_pace_shows_of_the_question(
    summary_timing: str,
) -> None:
    # The turn's question sits in a step PACE may condense once the history outgrows
    # the budget; the router must still find the turn's thought, so each turn is one
    # thought, one tool call, a confidence update without a model call, one answer.
    model = acting_model()
    agent = one_tool_agent(model, lookup, "pace", 4_000)
    condensed = 0
    for i in range(14):
        out = agent.invoke({"messages": [question(i)]}, config())
        assert out["messages"][-1].text.startswith("Found it")
        thoughts = [c for c in model.calls if c.structured]
        assert len(thoughts) == i + 1  # one model-made thought a turn, never a loop
        pace = [e["data"] for e in out["context_ledger"] if e["kind"] == "pace_context"]
        condensed += sum(1 for d in pace[-3:] if d["full"] < d["scored"])
    assert condensed > 0  # the budget made PACE condense while the agent thought


def test_a_node_that_removes_what_it_was_shown_as_ours_keeps_its_step() -> None:
    # A node that tidies away our messages (summaries, say) is shown PACE's condensed
    # blocks too. They are in no state: removing one must not fail the step (LangGraph:
    # "Attempting to delete a message with an ID that doesn't exist"), and what the
    # node removes of the state's own messages is still removed.
    shown: list[list[BaseMessage]] = []

    def tidy(state: dict[str, Any]) -> dict[str, Any]:
        messages = state["messages"]
        shown.append(messages)
        ours = [m for m in messages if m.additional_kwargs.get("lgctx")]
        first = [m for m in messages if m.id == "q0"]
        doomed = [RemoveMessage(id=str(m.id)) for m in [*ours, *first]]
        return {"messages": [*doomed, AIMessage(f"tidied {len(ours)}", id=f"a{len(shown)}")]}

    pace = PredictiveExtraction(
        scorer=LexicalScorer(), settings=PaceSettings(condense_when_fits=True), nodes=["tidy"]
    )
    builder = StateGraph(with_keys(ContextState, PaceState))
    builder.add_node("tidy", tidy)
    builder.add_edge(START, "tidy")
    pipeline = Pipeline([PreflightCheck(nodes=["tidy"]), pace], budget=Budget.for_window(16_000))
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    for i in range(8):
        graph.invoke({"messages": [question(i)]}, config())
    assert any(is_view_only(m) for m in shown[-1])  # it was shown a block
    state = graph.get_state(config()).values["messages"]
    assert [m.id for m in state if m.id == "q0"] == []  # its own removals still happen
    assert not any(is_view_only(m) for m in state)
    assert state[-1].text.startswith("tidied")


def test_a_glimpse_called_as_the_block_title_says_returns_the_step() -> None:
    # The title tells the model how to call glimpse; a call written that way (the
    # argument name included) must reach the step, not fail the tool's validation.
    asked: dict[str, Any] = {}

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("read it")
        block = next((m.text for m in messages if m.text.startswith("[Earlier steps")), None)
        if block is None or asked:
            return AIMessage(f"answer {len(messages)}")
        argument = re.search(r"glimpse\((\w+)", block)
        assert argument is not None, block.splitlines()[0]
        asked[argument.group(1)] = "s1"
        call = {"name": "glimpse", "args": dict(asked), "id": "g1"}
        return AIMessage("", tool_calls=[call])

    model = ScriptedChatModel(default=reply)
    pace = PredictiveExtraction(
        scorer=LexicalScorer(), settings=PaceSettings(condense_when_fits=True), nodes=["call_llm"]
    )
    agent = create_context_agent(model, think=False, strategy=pace, budget=Budget.for_window(8_000))
    for i in range(8):
        out = agent.invoke({"messages": [question(i)]}, config())
    assert asked, "no condensed block was shown"
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert result.status != "error", result.text
    assert result.text.startswith("[s1]") and "answer" in result.text


class GatedEmbeddings(Embeddings):
    """An embedding model that loads (its first call) only once ``gate`` is set, or
    fails to load."""

    def __init__(self, gate: threading.Event, *, fails: bool = False) -> None:
        self.gate = gate
        self.fails = fails
        self.name = "gated-model"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.gate.wait()
        if self.fails:
            raise OSError("weights not found")
        return [float(text.count(w)) for w in WORDS] + [0.01]


@pytest.mark.parametrize("fails", [False, True])
def test_a_default_scorer_still_loading_never_fails_a_call_and_the_ledger_says_why(
    fails: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default scorer's model (MiniLM) can take longer to load than a call waits
    # for its scorer (21 s cold on a loaded machine, against 10 s): stood in for by a
    # model that loads when the test says so.
    gate = threading.Event()
    made: list[Any] = []
    monkeypatch.setattr(pace_scorer, "minilm_available", lambda: True)
    monkeypatch.setattr(pace_scorer, "MiniLMEmbeddings", lambda: GatedEmbeddings(gate, fails=fails))
    monkeypatch.setattr(
        pace_middleware,
        "default_scorer",
        lambda: made.append(pace_scorer.default_scorer()) or made[-1],
    )
    model = ScriptedChatModel(default="noted")
    agent = create_context_agent(
        model, think=False, strategy="pace", budget=Budget.for_window(8_000)
    )
    try:
        for i in range(4):  # not loaded: every call is made at once, scored lexically
            agent.invoke({"messages": [question(i)]}, config())
    finally:
        gate.set()
    entries = agent.get_state(config()).values["context_ledger"]
    pace_entries = [e["data"] for e in entries if e["kind"] == "pace_context"]
    assert pace_entries and all(d["scorer"] == "lexical" for d in pace_entries)
    assert pace_entries[-1]["scorer_fallback"] == "gated-model still loading"
    assert not any(e["kind"] == "pace_scorer_failed" for e in entries)
    assert made[0].wait(timeout=60)
    agent.invoke({"messages": [question(4)]}, config())
    entries = agent.get_state(config()).values["context_ledger"]
    last = next(e["data"] for e in reversed(entries) if e["kind"] == "pace_context")
    if fails:
        assert last["scorer"] == "lexical"
        assert last["scorer_fallback"].startswith("gated-model failed to load: OSError")
    else:
        assert last["scorer"] == "gated-model" and "scorer_fallback" not in last


VAULT = "The vault code for the Lisbon warehouse is ZX-4471."


@tool
def records(topic: str) -> str:
    """Read the records on a topic."""
    # The one with the fact is longer than the room PACE has for old steps: never
    # shown whole again, however relevant.
    n = 400 if topic == "access" else 50
    filler = " ".join(f"{w}-{topic}-{i}" for i in range(n) for w in WORDS[2:4])
    fact = f" {VAULT}" if topic == "access" else ""
    return f"Records on {topic}:{fact} {filler}"


@pytest.mark.slow
def test_recall_brings_back_a_fact_from_a_step_pace_condensed(summary_timing: str) -> None:
    # PACE never archives (nothing leaves the history); with recall on, its steps are
    # what recall searches. A fact read in turn 0, condensed away by turn 12, comes
    # back for a question about it in other words.
    # The topic is the turn's, not read from the prompt: recall's lines quote earlier
    # requests ("Read the records on access"), and a model reading the last of them
    # would ask for the fact's records again.
    turn = {"topic": ""}

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("Noted.")
        topic = turn["topic"]
        call = {"name": "records", "args": {"topic": topic}, "id": f"c-{topic}"}
        return AIMessage("", tool_calls=[call])

    model = ScriptedChatModel(default=reply)
    agent = create_context_agent(
        model,
        [records],
        think=False,
        strategy="pace",
        recall=True,
        always_include=["records"],
        budget=Budget.for_window(4_000),
    )
    topics = ["access", *(f"{w}{i}" for i in range(12) for w in WORDS[:1])]
    for i, topic in enumerate(topics):
        turn["topic"] = topic
        agent.invoke(
            {"messages": [HumanMessage(f"Read the records on {topic}", id=f"r{i}")]}, config()
        )
    assert sum(VAULT in m.text for m in agent.get_state(config()).values["messages"]) == 1
    fact_id = next(m.id for m in agent.get_state(config()).values["messages"] if VAULT in m.text)
    agent.invoke(
        {"messages": [HumanMessage("Which code opens the Lisbon vault?", id="ask")]}, config()
    )
    sent = model.calls[-1].messages
    assert fact_id not in {m.id for m in sent}  # PACE shows that step condensed
    assert "ZX-4471" in "\n".join(m.text for m in sent)
    entries = agent.get_state(config()).values["context_ledger"]
    recalled = next(e["data"] for e in reversed(entries) if e["kind"] == "recall")
    assert fact_id in recalled["ids"]


@pytest.mark.slow
def test_between_selections_each_prompt_extends_the_last_one(summary_timing: str) -> None:
    # What a provider's prefix cache serves. Once the history outgrows the budget, a
    # selection leaves headroom and the next calls keep its levels, new steps whole,
    # until they no longer fit; the prompt is never over the budget.
    model = acting_model()
    agent = one_tool_agent(model, lookup, "pace", 8_000, think=False)
    held = selected = 0
    for i in range(24):
        before = len(model.calls)
        agent.invoke({"messages": [question(i)]}, config())
        ledger = agent.get_state(config()).values["context_ledger"]
        pace = [e["data"] for e in ledger if e["kind"] == "pace_context"][-2:]
        prompts = [[m.text for m in c.messages] for c in model.calls[before - 1 :]]
        for data, (previous, prompt) in zip(pace, itertools.pairwise(prompts), strict=False):
            assert data["tokens_after"] <= data["budget"]
            if data["full"] == data["scored"]:
                continue  # nothing condensed: the history as it is
            if data.get("held"):
                held += 1
                assert prompt[: len(previous)] == previous
            else:
                selected += 1
    assert selected >= 1 and held > 2 * selected
