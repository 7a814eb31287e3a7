"""What every strategy that rewrites the history shares (RewritingStrategy):
compression, AdaCoM, BACM and ARC check their archive and pin_task alike, keep
originals where original() finds them, and refuse a graph whose messages they
cannot rewrite when the pipeline is attached."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from typing_extensions import TypedDict

from langgraph_ctx import Pipeline, PreflightCheck
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.strategies import (
    AdaptiveContextManager,
    BudgetAwareFolding,
    ReflectiveContextManager,
    TieredCompression,
)

STRATEGIES = [
    TieredCompression,
    AdaptiveContextManager,
    BudgetAwareFolding,
    ReflectiveContextManager,
]


class Delta(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]
    context_ledger: list[Any]


class NoMessages(TypedDict):
    context_ledger: list[Any]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("name", "value"), [("archive", {}), ("pin_task", "yes")])
def test_a_bad_archive_or_pin_task_is_refused_by_name(strategy: Any, name: str, value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        strategy(**{name: value})
    assert caught.value.field == name


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_originals_come_back_from_the_archive_given(strategy: Any) -> None:
    archive = InMemoryArchive()
    archive.put("t", [HumanMessage("the original", id="m1")], reason="edited")
    mw = strategy(archive=archive, pin_task=False)
    assert mw.archive is archive and mw.pin_task is False
    found = mw.original("t", "m1")
    assert found is not None and found.text == "the original"
    assert mw.original("t", "m2") is None
    assert strategy().archive is not strategy().archive  # each default archive its own


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(
    ("schema", "match"), [(Delta, "DeltaChannel"), (NoMessages, "no 'messages'")]
)
def test_a_graph_they_cannot_rewrite_is_refused_at_attach(
    strategy: Any, schema: Any, match: str
) -> None:
    builder = StateGraph(schema)
    builder.add_node("call_llm", lambda s: {})
    builder.add_edge(START, "call_llm")
    with pytest.raises(ConfigurationError, match=match) as caught:
        Pipeline([PreflightCheck(), strategy(nodes=["call_llm"])]).attach(builder)
    assert caught.value.field == strategy.__name__
