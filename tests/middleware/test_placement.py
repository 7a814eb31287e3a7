"""Provider placement: summaries and per-call context where every provider takes them,
the checkpoint untouched, and a prompt prefix that stays byte-identical."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    Budget,
    ConfigurationError,
    ContextState,
    Pipeline,
    PreflightCheck,
    ProviderPlacement,
    TieredCompression,
    call_llm_node,
    is_summary,
    pin,
    place_messages,
)
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.markers import KEY
from langgraph_ctx.testing import ScriptedChatModel


def summary(seq: int, text: str) -> SystemMessage:
    marks = {"summary": {"seq": seq, "through": "x", "meta": False}}
    return SystemMessage(
        f"[Conversation Summary] #{seq}\n{text}", id=f"s{seq}", additional_kwargs={KEY: marks}
    )


def ephemeral(text: str) -> SystemMessage:
    return SystemMessage(text, additional_kwargs={KEY: {"ephemeral": True}})


def exchange(n: int) -> list[BaseMessage]:
    call = {"name": "lookup", "args": {"n": n}, "id": f"c{n}"}
    return [
        HumanMessage(f"question {n}", id=f"h{n}"),
        AIMessage("", tool_calls=[call], id=f"a{n}"),
        ToolMessage(f"result {n}", tool_call_id=f"c{n}", id=f"t{n}"),
        AIMessage(f"answer {n}", id=f"r{n}"),
    ]


def history() -> list[BaseMessage]:
    task = pin(HumanMessage("The task: audit the ledger.", id="task"))
    return [SystemMessage("You audit.", id="sys"), task, summary(1, "ACC-1 settled."), *exchange(2)]


def roles(messages: list[BaseMessage]) -> list[str]:
    return [m.type for m in messages]


def test_system_merges_summaries_into_the_one_leading_system_message() -> None:
    placed = place_messages([*history(), ephemeral("[Recalled Memory] tea"), HumanMessage("q3")])
    assert roles(placed) == ["system", "human", "human", "ai", "tool", "ai", "human"]
    assert placed[0].text == "You audit.\n\n[Conversation Summary] #1\nACC-1 settled."
    assert placed[1].id == "task" and placed[1].text == "The task: audit the ledger."  # pinned
    assert placed[-1].text == "[Recalled Memory] tea\n\nq3"  # per-call: in the last user turn
    assert placed[2:6] == exchange(2)  # the tool exchange, as it was


def test_pair_turns_each_summary_into_a_user_and_assistant_turn_where_it_was() -> None:
    placed = place_messages([*history(), HumanMessage("q3")], "pair")
    assert roles(placed) == ["system", "human", "human", "ai", "human", "ai", "tool", "ai", "human"]
    assert placed[2].text.startswith("[Conversation Summary] #1")
    assert placed[3].text == "Understood."


def test_a_system_message_inside_a_tool_exchange_waits_until_its_results_are_in() -> None:
    a, t = exchange(1)[1:3]
    placed = place_messages([HumanMessage("q"), a, summary(1, "s"), t], "pair")
    assert roles(placed) == ["human", "ai", "tool", "human", "ai"]


def test_without_a_user_message_per_call_context_closes_the_prompt() -> None:
    placed = place_messages([SystemMessage("sys"), ephemeral("[Current thought] x")])
    assert roles(placed) == ["system", "human"] and placed[1].text == "[Current thought] x"


def test_a_plan_note_is_folded_into_the_reply_after_it() -> None:
    note = AIMessage("[plan] respond", name="think", additional_kwargs={KEY: {"note": True}})
    reply = AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c9"}], id="r9")
    placed = place_messages([HumanMessage("q"), note, reply, ToolMessage("x", tool_call_id="c9")])
    assert roles(placed) == ["human", "ai", "tool"]
    assert placed[1].text == "[plan] respond" and placed[1].tool_calls == reply.tool_calls


def test_none_leaves_the_prompt_as_it_is() -> None:
    messages = [*history(), ephemeral("x")]
    assert place_messages(messages, "none") == messages


def test_content_blocks_are_kept_as_blocks() -> None:
    cached = {"type": "text", "text": "You audit.", "cache_control": {"type": "ephemeral"}}
    placed = place_messages([SystemMessage([cached]), summary(1, "s"), HumanMessage("q")])
    assert placed[0].content == [cached, {"type": "text", "text": "[Conversation Summary] #1\ns"}]


def test_the_prefix_before_the_current_turn_is_byte_identical_between_calls() -> None:
    # Two calls between compressions: the history grew by one turn and recall
    # brought something else. Everything before the first call's last user
    # message is sent again unchanged: what a provider's prompt cache serves.
    first = [*history(), ephemeral("[Recalled Memory] one"), HumanMessage("q3", id="h3")]
    second = [*first[:-2], first[-1], AIMessage("a3"), ephemeral("[Recalled Memory] two")]
    second.append(HumanMessage("q4", id="h4"))
    a, b = place_messages(first), place_messages(second)
    stable = len(a) - 1
    assert [m.model_dump() for m in a[:stable]] == [m.model_dump() for m in b[:stable]]
    assert b[stable].text == "q3" and b[-1].text == "[Recalled Memory] two\n\nq4"


def test_a_bad_placement_fails_when_configured() -> None:
    with pytest.raises(ConfigurationError, match="placement"):
        ProviderPlacement("top")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"call_llm_node\.placement"):
        call_llm_node(ScriptedChatModel(), placement="merge")  # type: ignore[arg-type]


def test_the_model_sees_one_system_message_and_the_checkpoint_keeps_the_marked_summaries() -> None:
    model = ScriptedChatModel(default="noted " * 40)
    agent = create_context_agent(
        model, think=False, system_prompt="You audit.", budget=Budget.for_window(4_000)
    )
    config: Any = {"configurable": {"thread_id": "p"}}
    for turn in range(30):
        agent.invoke({"messages": [HumanMessage(f"turn {turn}: " + "details " * 60)]}, config)
    stored = agent.get_state(config).values["messages"]
    summaries = [m for m in stored if is_summary(m)]
    assert summaries and all(m.type == "system" for m in summaries)  # markers kept
    last = model.calls[-1].messages
    assert [m.type for m in last].count("system") == 1 and last[0].type == "system"
    assert last[0].text.startswith("You audit.") and summaries[-1].text in last[0].text


def test_provider_placement_on_your_own_node_sees_placed_messages() -> None:
    model = ScriptedChatModel(default="ok " * 50, report_usage=False)
    builder = StateGraph(ContextState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "agent")
    on = ["agent"]
    middleware = [PreflightCheck(nodes=on), TieredCompression(nodes=on), ProviderPlacement()]
    pipeline = Pipeline(middleware, budget=Budget.for_window(3_000))
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "own"}}
    graph.invoke({"messages": [SystemMessage("sys"), HumanMessage("start")]}, config)
    for turn in range(25):
        graph.invoke({"messages": [HumanMessage(f"turn {turn} " + "words " * 60)]}, config)
    assert any(is_summary(m) for m in graph.get_state(config).values["messages"])
    assert all([m.type for m in c.messages].count("system") == 1 for c in model.calls)
    assert "[Conversation Summary]" in model.calls[-1].messages[0].text
