"""The prebuilt agent: a scripted multi-tool task, then resume from the checkpoint."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.agent.prebuilt import AgentOptions, build_context_agent
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.checkpointers import checkpointer_from_url
from langgraph_ctx.testing import ScriptedChatModel


@tool
def get_order(order_id: str) -> str:
    """Look up an order by id: status, carrier and amount."""
    return f'{{"order_id": "{order_id}", "amount": 412.5, "status": "delivered"}}'


@tool
def refund_order(order_id: str, amount: float) -> str:
    """Refund an amount on an order to the customer's card."""
    return f'{{"refund": "RF-{order_id}", "amount": {amount}}}'


@tool
def send_email(to: str, body: str) -> str:
    """Send an e-mail message to a recipient address."""
    return "sent"


def call(name: str, args: dict[str, Any], cid: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": cid}])


def test_multi_tool_task_and_resume(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'agent.sqlite'}"
    config: Any = {"configurable": {"thread_id": "task"}}
    first = ScriptedChatModel(
        responses=[
            call("search_tools", {"query": "look up an order"}, "s1"),
            call("get_order", {"order_id": "ORD-7"}, "c1"),
            "ORD-7 was delivered; it cost $412.50.",
        ]
    )
    agent = create_context_agent(first, [get_order, refund_order], think=False, checkpointer=db)
    out = agent.invoke({"messages": [HumanMessage("What happened to ORD-7?")]}, config)
    assert out["messages"][-1].text.startswith("ORD-7 was delivered")
    assert "get_order" in out["tool_cache"]

    # A new process: a new agent object, the same SQLite file and thread.
    second = ScriptedChatModel(
        responses=[
            call("send_email", {"to": "ana@example.com", "body": "refund"}, "c2"),
            "I could not send the e-mail.",
        ]
    )
    tools = [get_order, refund_order, send_email]
    agent2 = create_context_agent(second, tools, think=False, checkpointer=db)
    out2 = agent2.invoke({"messages": [HumanMessage("Refund it, please.")]}, config)
    results = [m for m in out2["messages"] if isinstance(m, ToolMessage)]
    # send_email was never discovered in this session: refused, with the way out.
    assert "not loaded" in results[-1].text and "search_tools" in results[-1].text
    assert "ORD-7 was delivered" in second.calls[0].text  # the history came back
    assert set(out["tool_cache"]) <= set(second.calls[0].tool_names)  # and the tool cache
    assert "send_email" not in second.calls[0].tool_names
    assert out2["messages"][-1].text == "I could not send the e-mail."


def test_memory_is_recalled_across_sessions_and_never_checkpointed() -> None:
    from langgraph_ctx import MemoryBank

    bank = MemoryBank()
    bank.remember(
        ("ana",), "Ana's warehouse is in Rotterdam; she ships only via DHL.", level="principle"
    )
    bank.remember(("bob",), "Bob's warehouse is in Lisbon.", level="observation")
    model = ScriptedChatModel(default="noted")
    agent = create_context_agent(model, [get_order], think=False, memory=bank)
    config: Any = {"configurable": {"thread_id": "s1", "user_id": "ana"}}
    out = agent.invoke({"messages": [HumanMessage("Which carrier does my warehouse use?")]}, config)
    sent = model.calls[-1]
    assert "ships only via DHL" in sent.text  # recalled into the prompt...
    assert "Lisbon" not in sent.text  # ...from Ana's scope only
    assert "remember" in sent.tool_names
    assert not any("DHL" in m.text for m in out["messages"])  # ...and never persisted


@pytest.mark.slow
def test_a_checkpointer_url_is_migrated_and_closed_with_the_graph(tmp_path: Path) -> None:
    path = tmp_path / "agent.sqlite"
    agent = create_context_agent(
        ScriptedChatModel(default="ok"), [get_order], think=False, checkpointer=f"sqlite:///{path}"
    )
    agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t"}})
    conn = agent.checkpointer.conn  # type: ignore[union-attr]
    with sqlite3.connect(path) as other:  # the package's tables, as `migrate` makes them
        tables = {r[0] for r in other.execute("SELECT name FROM sqlite_master")}
    assert {"lgctx_schema_versions", "lgctx_archive", "checkpoints"} <= tables
    del agent
    gc.collect()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")


@pytest.mark.slow
def test_a_saver_passed_in_stays_open(tmp_path: Path) -> None:
    with checkpointer_from_url(f"sqlite:///{tmp_path / 'a.sqlite'}") as saver:
        agent = create_context_agent(
            ScriptedChatModel(default="ok"), think=False, checkpointer=saver
        )
        del agent
        gc.collect()
        assert saver.conn.execute("SELECT 1").fetchone() == (1,)  # type: ignore[attr-defined]


def test_a_bad_checkpointer_url_names_the_setting_and_hides_the_password() -> None:
    with pytest.raises(ConfigurationError) as info:
        create_context_agent(
            ScriptedChatModel(default="ok"), checkpointer="mysql://app:hunter2@db/agents"
        )
    assert info.value.field == "checkpointer" and "hunter2" not in str(info.value)


def test_both_entry_points_take_the_same_options_and_refuse_unknown_ones() -> None:
    model = ScriptedChatModel(default="ok")
    options: AgentOptions = {"think": False, "tool_capacity": 2, "always_include": ["get_order"]}
    built = build_context_agent(model, [get_order], **options).compile()
    created = create_context_agent(model, [get_order], **options)
    assert (
        set(built.nodes) == set(created.nodes) == {"__start__", "fetch_tools", "call_llm", "tools"}
    )
    with pytest.raises(ConfigurationError, match=r"thinkk.*not an option") as info:
        create_context_agent(model, thinkk=False)  # type: ignore[call-arg]
    assert info.value.field == "thinkk"
    with pytest.raises(ConfigurationError, match=r"given to compile\(\)"):
        build_context_agent(model, checkpointer="memory://")  # type: ignore[call-arg]
