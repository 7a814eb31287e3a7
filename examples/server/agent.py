"""A context-managed agent served by LangGraph Server (``langgraph dev``, LangGraph Platform).

Serve it: ``cd examples/server && langgraph dev --no-browser`` (``pip install
"langgraph-cli[inmem]"``), then drive it with ``langgraph-sdk`` (as
``tests/test_server_example.py`` does; see docs/server.md).

The server imports this module and runs ``graph`` with its own checkpointer and
store, so the graph is compiled with neither:

- **checkpoints**: the server's (in memory under ``langgraph dev``, PostgreSQL on
  the platform). Threads, runs, ``multitask_strategy`` and streaming are the
  server's; the pipeline's events reach ``stream_mode="custom"``.
- **memories**: the server's store, through :class:`~langgraph_ctx.RuntimeStore`
  (recall before each model call, compression summaries kept as observations, a
  ``remember`` tool), scoped by ``config["configurable"]["user_id"]``.
- **archive, event log and memory index**: what this package adds to a
  deployment, at ``$LANGGRAPH_CTX_DATABASE_URL`` (``postgresql://...`` in
  production, the server's own database is fine; ``sqlite:///...``); unset, an
  embedded SQLite file under :func:`~langgraph_ctx.storage.urls.data_home`. The
  memory index is shared by every worker, so that a memory one of them stores is
  found by all (write memories through the bank or its tool: it indexes them).

The model is scripted (:mod:`langgraph_ctx.testing`), so it serves offline; set
``LANGGRAPH_CTX_MODEL`` (e.g. ``openai:gpt-4o-mini``) for a real one through
``init_chat_model``. A user message starting with ``delegate:`` hands a task to
the ``research`` sub-agent, ``remember:`` stores the rest as a memory, and
``slow:`` takes a second to answer (to see ``multitask_strategy`` at work).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget, MemoryBank, RuntimeStore, SQLiteEventSink
from langgraph_ctx.agent import SubAgents, SubAgentSpec, build_context_agent
from langgraph_ctx.pipeline import EventSink
from langgraph_ctx.retrieval import TextIndex
from langgraph_ctx.storage import PostgresEventSink, PostgresMemoryIndex, SQLiteMemoryIndex
from langgraph_ctx.storage.checkpointers import archive_from_url
from langgraph_ctx.storage.urls import data_home, parse_url
from langgraph_ctx.testing import ScriptedChatModel

URL_ENV = "LANGGRAPH_CTX_DATABASE_URL"
MODEL_ENV = "LANGGRAPH_CTX_MODEL"


def storage_url() -> str:
    """Where the archive and event log go: the environment's URL, else embedded SQLite."""
    url = os.environ.get(URL_ENV)
    if url:
        return url
    data_home().mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{data_home() / 'server.sqlite'}"


def event_sink(url: str) -> EventSink:
    db = parse_url(url, field=URL_ENV)
    return PostgresEventSink(db.url) if db.kind == "postgres" else SQLiteEventSink(db.path)


def memory_index(url: str) -> TextIndex:
    db = parse_url(url, field=URL_ENV)
    return PostgresMemoryIndex(db.url) if db.kind == "postgres" else SQLiteMemoryIndex(db.path)


@tool
def lookup_shipment(shipment_id: str) -> str:
    """Where a shipment is and when it arrives."""
    return f"{shipment_id}: left Rotterdam by rail, arriving in Milan on Friday."


def _scripted_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if last.type == "tool":  # the sub-agent (or a tool) answered: report it
        return AIMessage(f"Done: {last.text[:200]}")
    text = last.text.rsplit("\n\n", 1)[-1]  # the user's own words, after any recall block
    if text.startswith("remember:"):
        memory = {"text": text.removeprefix("remember:").strip(), "level": "principle"}
        return AIMessage("", tool_calls=[{"name": "remember", "args": memory, "id": "r1"}])
    if text.startswith("delegate:"):
        task = {"agent": "research", "task": text.removeprefix("delegate:").strip()}
        call = {"name": "delegate", "args": task, "id": f"delegate-{len(messages)}"}
        return AIMessage("", tool_calls=[call])
    if text.startswith("slow:"):
        time.sleep(1.0)
    return AIMessage(f"Noted. {text} " + "Filed under the shipment log. " * 6)


def _model() -> BaseChatModel:
    name = os.environ.get(MODEL_ENV)
    if name:
        from langchain.chat_models import init_chat_model

        return init_chat_model(name)
    return ScriptedChatModel(default=_scripted_reply, keep_calls=0)  # a server runs long


def _research_model() -> BaseChatModel:
    if os.environ.get(MODEL_ENV):
        return _model()
    call = {"name": "lookup_shipment", "args": {"shipment_id": "SHP-0042"}, "id": "look-1"}

    def reply(messages: Sequence[BaseMessage], _tools: Any) -> AIMessage:
        if messages[-1].type == "tool":
            return AIMessage(f"Found: {messages[-1].text}")
        return AIMessage("", tool_calls=[call])

    return ScriptedChatModel(default=reply, keep_calls=0)


url = storage_url()
archive = archive_from_url(url)  # first: it applies the package's migrations
subagents = SubAgents(
    [
        SubAgentSpec(
            name="research",
            kind="tool",
            description="looks shipments up",
            system_prompt="You look shipments up. Be brief.",
            tools=[lookup_shipment],
            model=_research_model(),
        )
    ]
)
graph = build_context_agent(
    _model(),
    [subagents.tool()],
    always_include=["delegate"],
    think=False,
    budget=Budget.for_window(4_000),  # small on purpose: compression within a few dozen turns
    memory=MemoryBank(RuntimeStore(), scope_keys=("user_id",), index=memory_index(url)),
    archive=archive,
    events=event_sink(url),
    system_prompt="You track shipments for a freight forwarder.",
).compile()  # no checkpointer, no store: the server provides both
