"""Glimpse: originals back by id, summary number or query; 3 a step; capped in tokens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx import ConfigurationError
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.markers import KEY
from langgraph_ctx.middleware.glimpse import SESSION_KEY, Glimpse, GlimpseRequest
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive
from langgraph_ctx.storage.checkpointers import archive_from_url
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

CONFIG: Any = {"configurable": {"thread_id": "t"}}


def archive_with_summary() -> tuple[InMemoryArchive, BaseMessage]:
    archive = InMemoryArchive()
    originals = [
        HumanMessage("Ship order INV-0007 to Porto by Friday.", id="m1"),
        AIMessage("Booked INV-0007 with carrier Nordline.", id="m2"),
        HumanMessage("Also the pallet count is 14.", id="m3"),
    ]
    archive.put("t", originals, reason="compressed into summary #4")
    summary = HumanMessage("[Conversation Summary] #4", id="lgctx-summary-4").model_copy(
        update={"additional_kwargs": {KEY: {"summary": {"seq": 4, "covers": ["m1", "m2", "m3"]}}}}
    )
    return archive, summary


def run(glimpse: Glimpse, refs: list[str], history: list[BaseMessage], **state: Any) -> list[str]:
    calls = [
        {"name": "glimpse", "args": {"reference": r}, "id": f"c{i}"} for i, r in enumerate(refs)
    ]
    ask = AIMessage("", tool_calls=calls, id="ask")
    full = {"messages": [*history, ask], **state}
    # As the tools node calls it: the state injected, the call id from the call.
    return [
        glimpse.tool.invoke(
            {**call, "args": {**call["args"], "state": full}, "type": "tool_call"}, CONFIG
        ).text
        for call in calls
    ]


def test_by_id_by_summary_number_and_by_query() -> None:
    archive, summary = archive_with_summary()
    g = Glimpse(archive)
    by_id, by_number, by_query = run(g, ["m3", "#4", "Nordline carrier"], [summary])
    assert by_id == "[m3] Also the pallet count is 14."
    assert by_number.splitlines() == [
        "[m1] Ship order INV-0007 to Porto by Friday.",
        "[m2] Booked INV-0007 with carrier Nordline.",
        "[m3] Also the pallet count is 14.",
    ]
    assert by_query.startswith("[m2] Booked INV-0007")
    # A summary consolidated away is read from the archive.
    archive.put("t", [summary], reason="consolidated into summary #5")
    assert run(g, ["summary 4"], [])[0] == by_number
    assert run(g, ["#9"], [])[0] == "Not found: nothing archived matches '#9'."


def test_at_most_three_a_step_the_rest_refused() -> None:
    archive, _ = archive_with_summary()
    answers = run(Glimpse(archive), ["m1", "m2", "m3", "m1"], [])
    assert [a.startswith("[m") for a in answers] == [True, True, True, False]
    assert answers[3].startswith("Refused: at most 3 glimpses per step")
    assert run(Glimpse(archive, max_per_step=1), ["m1", "m2"], [])[1].startswith("Refused")


def test_answers_are_capped_by_the_room_the_last_call_left() -> None:
    archive = InMemoryArchive()
    archive.put("t", [HumanMessage("pallet " * 3_000, id="big")], reason="compressed")
    counter = TokenCounter()
    g = Glimpse(archive, max_tokens=400)
    [whole] = run(g, ["big"], [])
    assert 300 < counter.count_text(whole) <= 400 and whole.endswith("[...]")
    # The middleware left room for 120 tokens a glimpse: the tool keeps to it.
    [small] = run(g, ["big"], [], session={SESSION_KEY: 120})
    assert counter.count_text(small) <= 120


def test_a_source_plugs_in_before_the_archive() -> None:
    class Chunks:
        def resolve(self, request: GlimpseRequest) -> list[tuple[str, str]] | None:
            return [("chunk 7", "step 7 in full")] if request.reference == "chunk 7" else None

    archive, _ = archive_with_summary()
    g = Glimpse(archive, sources=[Chunks()])
    assert run(g, ["chunk 7", "m1"], []) == [
        "[chunk 7] step 7 in full",
        "[m1] Ship order INV-0007 to Porto by Friday.",
    ]
    with pytest.raises(ConfigurationError):
        Glimpse()
    with pytest.raises(ConfigurationError):
        Glimpse(archive, sources=[object()])  # type: ignore[list-item]


def test_create_context_agent_turns_recall_and_glimpse_on_with_one_argument() -> None:
    archive = InMemoryArchive()
    archive.put("t", [HumanMessage("The dock code is 4471.", id="old")], reason="compressed")
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                "", tool_calls=[{"name": "glimpse", "args": {"reference": "old"}, "id": "g"}]
            ),
            AIMessage("4471"),
        ]
    )
    agent = create_context_agent(model, archive=archive, recall=True, think=False)
    out = agent.invoke({"messages": [HumanMessage("What is the dock code?")]}, CONFIG)
    first = model.calls[0].messages
    assert any("archived old" in m.text and "4471" in m.text for m in first)  # recalled
    glimpsed = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert glimpsed[0].text == "[old] The dock code is 4471."
    assert isinstance(out["session"][SESSION_KEY], int)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_archive(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MessageArchive]:
    if request.param == "memory":
        yield InMemoryArchive()
        return
    url = (
        f"sqlite:///{tmp_path}/a.sqlite"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_db")
    )
    with archive_from_url(url) as archive:  # type: ignore[attr-defined]
        yield archive


def test_an_id_not_archived_is_answered_not_found_naming_it(any_archive: MessageArchive) -> None:
    # m5 is not archived, but a later message mentions it: searched as words, "m5"
    # finds that message, which used to come back as if it were m5.
    any_archive.put(
        "t",
        [
            HumanMessage("Compare it with m5 before shipping.", id="m9"),
            HumanMessage("The dock code is 4471.", id="m2"),
        ],
        reason="compressed",
    )
    g = Glimpse(any_archive)
    mentioned, unknown, words, kept = run(g, ["m5", "m77", "dock code"], []) + run(g, ["m9"], [])
    assert mentioned.splitlines() == [
        "[not found] no archived message has the id 'm5'; archived messages that mention it:",
        "[m9] Compare it with m5 before shipping.",
    ]
    assert unknown == "Not found: no archived message has the id 'm77', and none mentions it."
    assert words == "[m2] The dock code is 4471."  # words are a query: no note
    assert kept == "[m9] Compare it with m5 before shipping."
    assert run(g, ["zebra quagga"], [])[0] == "Not found: nothing archived matches 'zebra quagga'."


def test_the_schema_gives_way_when_the_history_needs_its_room() -> None:
    """The glimpse schema is recall's, as its blocks are: on a call whose prompt would
    pass the red line with it, it is not bound, and the history is sent whole (before:
    bound, and the prompt ceiling, unable to cut the task, raised BudgetExceededError
    on a prompt that fits without it); with room, it is bound."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    from langgraph_ctx import Budget
    from langgraph_ctx.agent.nodes import call_llm_node
    from langgraph_ctx.middleware import PreflightCheck
    from langgraph_ctx.pipeline.wiring import Pipeline
    from langgraph_ctx.state import ContextState

    g = Glimpse(InMemoryArchive())
    counter = TokenCounter()
    budget = Budget.for_window(4_000)
    schema = counter.count_tool(g.tool)
    assert schema > 60  # enough for the history to fit without it and not with it

    def bound(history_tokens: int) -> tuple[list[str], list[str]]:
        model = ScriptedChatModel(default="ok", report_usage=False)
        builder = StateGraph(ContextState)
        builder.add_node("call_llm", call_llm_node(model))
        builder.add_edge(START, "call_llm")
        pipeline = Pipeline([PreflightCheck(), g], budget=budget, tools=[g.tool])
        graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
        text = "word " * history_tokens
        while counter.count_message(HumanMessage(text)) > history_tokens:
            text = text[:-5]
        graph.invoke(
            {"messages": [HumanMessage(text, id="q")]}, {"configurable": {"thread_id": "t"}}
        )
        call = model.calls[-1]
        assert [m.text for m in call.messages] == [text]  # the history sent whole
        return [t["function"]["name"] for t in call.tools], [m.text for m in call.messages]

    assert bound(budget.red_line - schema - 200)[0] == ["glimpse"]
    assert bound(budget.red_line - schema // 2)[0] == []  # fits alone, not with the schema
