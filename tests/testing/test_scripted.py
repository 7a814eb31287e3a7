"""The scripted chat model: replies in order, then the default, then a clear error."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.scripted import ScriptExhaustedError


class Answer(BaseModel):
    value: int


@pytest.mark.slow
def test_plain_replies_run_in_order_then_the_default_then_out() -> None:
    model = ScriptedChatModel(responses=["one", AIMessage("two")])
    assert [model.invoke("q").text for _ in range(2)] == ["one", "two"]
    with pytest.raises(ScriptExhaustedError, match="no reply left for call 3"):
        model.invoke("q")
    model.default = "again"
    assert model.invoke("q").text == "again"
    assert model.invoke("q").text == "again"


def test_structured_replies_have_their_own_script() -> None:
    model = ScriptedChatModel(responses=["plain"], structured_responses=[{"value": 1}])
    structured = model.with_structured_output(Answer)
    assert structured.invoke("q") == Answer(value=1)
    assert model.invoke("q").text == "plain"  # the plain script is untouched
    with pytest.raises(
        ScriptExhaustedError, match=r"no structured reply left for call 2 \(Answer\)"
    ):
        structured.invoke("q")
    model.structured_default = lambda messages: {"value": len(messages)}
    assert structured.invoke([HumanMessage("a"), HumanMessage("b")]) == Answer(value=2)
    assert [c.structured for c in model.calls] == ["Answer", None, "Answer", "Answer"]


async def test_async_calls_share_the_script() -> None:
    model = ScriptedChatModel(responses=["one", "two"])
    assert (await model.ainvoke("q")).text == "one"
    assert model.invoke("q").text == "two"
    with pytest.raises(ScriptExhaustedError):
        await model.ainvoke("q")


def test_keep_calls_bounds_the_call_log_to_the_latest() -> None:
    # Each record holds its whole prompt: a long session must be able to keep few.
    model = ScriptedChatModel(default="ok", keep_calls=2)
    for i in range(5):
        model.invoke(f"q{i}")
    assert [c.text for c in model.calls] == ["q3", "q4"]
    quiet = ScriptedChatModel(default="ok", keep_calls=0)
    quiet.invoke("q")
    assert quiet.calls == [] and quiet.invoke("again").text == "ok"
    every = ScriptedChatModel(default="ok")
    for i in range(5):
        every.invoke(f"q{i}")
    assert [c.text for c in every.calls] == [f"q{i}" for i in range(5)]


def test_a_negative_keep_calls_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="keep_calls"):
        ScriptedChatModel(keep_calls=-1)
