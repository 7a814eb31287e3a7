"""A strategy's own state keys are declared by the strategy (its ``state_schema``) and
merged into the graph's state when it is built, not kept in the core ``ContextState``:
PACE's ``pace_chunks`` (issue 32). A PACE session checkpointed when the key was in
the core state resumes: the key's name and channel did not change."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_ctx import (
    Budget,
    ConfigurationError,
    ContextState,
    DeltaContextState,
    Pipeline,
    PreflightCheck,
    call_llm_node,
)
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.state import SNAPSHOT_EVERY, merge_records, with_keys
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.strategies import LexicalScorer, PaceState, PredictiveExtraction
from langgraph_ctx.testing import ScriptedChatModel

CONFIG: Any = {"configurable": {"thread_id": "pace-old-schema"}}


class BeforeState(DeltaContextState, total=False):
    """``DeltaContextState`` as it was when ``pace_chunks`` was a core key."""

    pace_chunks: Annotated[
        dict[str, Any], DeltaChannel(merge_records, snapshot_frequency=SNAPSHOT_EVERY)
    ]


def agent(saver: Any, **options: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    return create_context_agent(
        ScriptedChatModel(default=lambda m: AIMessage(f"reply {len(m)}"), report_usage=False),
        checkpointer=saver,
        think=False,
        strategy=PredictiveExtraction(scorer=LexicalScorer()),
        budget=Budget.for_window(8_000),
        **options,
    )


def ask(graph: Any, i: int) -> None:
    graph.invoke({"messages": [HumanMessage(f"question {i} about the hotel", id=f"q{i}")]}, CONFIG)


def test_the_core_state_keeps_no_strategy_key() -> None:
    assert "pace_chunks" not in ContextState.__annotations__
    assert "pace_chunks" not in DeltaContextState.__annotations__
    assert PredictiveExtraction.state_schema is PaceState


def test_create_context_agent_merges_the_strategy_keys() -> None:
    graph = agent(None)
    assert "pace_chunks" in graph.builder.channels
    assert isinstance(graph.builder.channels["pace_chunks"], DeltaChannel)
    # Any other strategy's graph has no PACE key.
    tiered = create_context_agent(ScriptedChatModel(default="ok"), think=False)
    assert "pace_chunks" not in tiered.builder.channels


def test_a_schema_that_has_the_keys_is_used_as_it_is() -> None:
    assert with_keys(BeforeState, PaceState) is BeforeState
    merged = with_keys(ContextState, PaceState)
    assert {"messages", "context_ledger", "pace_chunks"} <= set(merged.__annotations__)


def test_a_pace_session_saved_with_the_old_schema_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/old.sqlite"
    with checkpointer_from_url(url) as saver:
        old = agent(saver, state_schema=BeforeState)
        for i in range(4):
            ask(old, i)
        before = old.get_state(CONFIG).values["pace_chunks"]
        assert before  # PACE checkpointed its records under the old schema
    with checkpointer_from_url(url) as saver:
        new = agent(saver)  # DeltaContextState + PACE's own keys
        resumed = new.get_state(CONFIG).values
        assert resumed["pace_chunks"] == before
        assert len(resumed["messages"]) == 8
        ask(new, 4)
        after = new.get_state(CONFIG).values
    assert len(after["messages"]) == 10
    assert set(before) < set(after["pace_chunks"])  # the old records kept, new ones added


def test_a_graph_of_your_own_without_the_keys_is_told_what_to_add() -> None:
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok")))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline([PreflightCheck(), PredictiveExtraction(scorer=LexicalScorer())])
    with pytest.raises(ConfigurationError) as raised:
        pipeline.attach(builder)
    # The declaration to copy, found in PACE's state_schema.
    assert "pace_chunks: Annotated[dict[str, Any], DeltaChannel(" in str(raised.value)
    assert "state_schema" in str(raised.value)
