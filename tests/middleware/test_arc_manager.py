"""ARC in a live graph: what the actor sees, the incremental fold, reflection (archived,
reversible, recorded with its trigger), the background fold and its fallback."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, call_llm_node
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.strategies import ReflectiveContextManager
from langgraph_ctx.strategies.arc.manager import (
    CHECKLIST_TITLE,
    MEMORY_TITLE,
    MemoryUpdate,
    UpdateRequest,
)
from langgraph_ctx.strategies.arc.offline import OfflineArcManager
from langgraph_ctx.testing import ScriptedChatModel, thought_about_the_question

TASK = "Find the carrier of orders A-1, A-2 and A-3. Each must ship before 2026-03-01."
SYSTEM = "You are a logistics agent."


@tool
def lookup(order: str) -> str:
    """Where an order is."""
    return f"order: {order}\ncarrier: Maersk\nstatus: shipped"


def calls(*orders: str) -> list[AIMessage]:
    """The actor's script: one lookup per order, then an answer."""
    out = [
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"order": o}, "id": f"c{i}"}])
        for i, o in enumerate(orders)
    ]
    return [*out, AIMessage("All found.")]


def agent_graph(model: Any, arc: ReflectiveContextManager, window: int = 32_000) -> Any:
    """call_llm <-> tools, the loop of a real agent."""
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "call_llm")
    builder.add_conditional_edges("call_llm", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "call_llm")
    pipeline = Pipeline([PreflightCheck(), arc], budget=Budget.for_window(window))
    return pipeline.attach(builder).compile(checkpointer=InMemorySaver())


def cfg(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def start() -> dict[str, Any]:
    return {"messages": [SystemMessage(SYSTEM, id="sys"), HumanMessage(TASK, id="task")]}


def ledger(graph: Any, kind: str, config: Any = None) -> list[dict[str, Any]]:
    entries = graph.get_state(config or cfg()).values["context_ledger"]
    return [e["data"] for e in entries if e["kind"] == kind]


def texts(messages: Sequence[BaseMessage]) -> list[str]:
    return [m.text for m in messages]


@pytest.mark.parametrize("in_background", [True, False])
def test_the_actor_sees_task_checklist_memory_and_the_last_interaction_raw(
    in_background: bool,
) -> None:
    model = ScriptedChatModel(responses=calls("A-1", "A-2", "A-3", "A-4"))
    graph = agent_graph(model, ReflectiveContextManager(in_background=in_background))
    graph.invoke(start(), cfg())

    first = model.calls[0].messages
    assert [m.id for m in first[:2]] == ["sys", "task"]
    assert first[2].text.startswith(CHECKLIST_TITLE) and first[3].text.startswith(MEMORY_TITLE)
    assert len(first) == 4  # nothing raw yet
    for k in range(1, len(model.calls)):
        sent = model.calls[k].messages
        assert len(sent) == 6, [m.type for m in sent]
        assert texts(sent[:2]) == [SYSTEM, TASK]
        assert sent[2].text.startswith(CHECKLIST_TITLE)
        assert sent[3].text.startswith(MEMORY_TITLE)
        call, result = sent[4], sent[5]  # the previous step, as it happened
        assert isinstance(call, AIMessage) and call.tool_calls[0]["id"] == f"c{k - 1}"
        assert isinstance(result, ToolMessage) and result.tool_call_id == f"c{k - 1}"
        # Everything before it is in the memory, nothing after it.
        for j in range(k - 1):
            assert f'"order": "A-{j + 1}"' in sent[3].text
        assert f'"order": "A-{k}"' not in sent[3].text
    # The checklist starts from the task's goal and constraint sentences.
    assert "- [open] c1: Find the carrier of orders A-1, A-2 and A-3." in first[2].text
    assert "c2: Each must ship before 2026-03-01." in first[2].text


def test_folded_interactions_are_archived_word_for_word() -> None:
    model = ScriptedChatModel(responses=calls("A-1", "A-2", "A-3"))
    arc = ReflectiveContextManager()
    graph = agent_graph(model, arc)
    graph.invoke(start(), cfg())
    live = graph.get_state(cfg()).values["messages"]
    sent = [m for c in model.calls for m in c.messages if isinstance(m, (AIMessage, ToolMessage))]
    gone = {str(m.id) for m in sent} - {str(m.id) for m in live}
    assert gone, "earlier interactions leave the active history"
    for mid in gone:
        original = arc.original("t", mid)
        assert original is not None
        assert original.text == next(m.text for m in sent if m.id == mid)
    # Checklist and memory are pinned right after the task, in the checkpoint.
    assert live[2].text.startswith(CHECKLIST_TITLE) and live[3].text.startswith(MEMORY_TITLE)


def test_the_incremental_step_leaves_earlier_memory_text_unchanged() -> None:
    model = ScriptedChatModel(responses=calls(*(f"A-{i}" for i in range(1, 9))))
    graph = agent_graph(model, ReflectiveContextManager(stall_turns=50))
    graph.invoke(start(), cfg())
    memories = [c.messages[3].text for c in model.calls]
    grew = 0
    for before, after in itertools.pairwise(memories):
        assert after.startswith(before.removesuffix("(nothing yet)"))
        grew += len(after) > len(before)
    assert grew >= 6
    assert not ledger(graph, "arc_reflection")


RESULTS = st.lists(
    st.tuples(
        st.sampled_from(["lookup", "track", "quote"]),
        st.sampled_from(["A-1", "A-2", "B-7"]),
        st.text("abcdefgh :\n0123456789", min_size=0, max_size=80),
    ),
    min_size=2,
    max_size=7,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=RESULTS)
@pytest.mark.slow
def test_property_an_update_without_reflection_only_appends(steps: list[Any]) -> None:
    arc = ReflectiveContextManager(in_background=False, stall_turns=3, memory_tokens=120)
    graph = agent_graph(ScriptedChatModel(default="ok", report_usage=False), arc)
    graph.invoke({"messages": [HumanMessage(TASK, id="task")]}, cfg())
    memory = graph.get_state(cfg()).values["messages"][2].text
    for i, (name, order, text) in enumerate(steps):
        call = {"name": name, "args": {"order": order}, "id": f"c{i}"}
        turn = [AIMessage("", tool_calls=[call]), ToolMessage(text, tool_call_id=f"c{i}")]
        reflections = len(ledger(graph, "arc_reflection"))
        graph.invoke({"messages": turn}, cfg())
        now = graph.get_state(cfg()).values["messages"][2].text
        if len(ledger(graph, "arc_reflection")) == reflections:
            assert now.startswith(memory.removesuffix("(nothing yet)"))
        memory = now


def test_a_repeated_call_triggers_a_reflection_that_is_archived_and_reversible() -> None:
    model = ScriptedChatModel(responses=calls("A-1", "A-2", "A-1", "A-3"))
    arc = ReflectiveContextManager(archive=InMemoryArchive(), stall_turns=50)
    graph = agent_graph(model, arc)
    graph.invoke(start(), cfg())

    [reflection] = ledger(graph, "arc_reflection")
    assert reflection["triggers"] == ["repeated_call"]
    [memory_id, checklist_id] = reflection["replaced"]
    before = arc.original("t", memory_id)
    assert before is not None and before.text.count('lookup({"order": "A-1"})') == 2
    live = graph.get_state(cfg()).values["messages"]
    reflected = live[3].text
    assert reflected.count('lookup({"order": "A-1"})') == 1 and "made 2 times" in reflected
    assert "stalled: lookup" in live[2].text  # the checklist says so; no instruction

    undone = arc.undo_reflection("t", live)
    assert undone[3].text == before.text
    assert undone[2].id == checklist_id and "stalled" not in undone[2].text
    graph.update_state(
        cfg(), {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *undone]}, as_node="tools"
    )
    assert graph.get_state(cfg()).values["messages"][3].text == before.text
    with pytest.raises(LookupError):
        arc.undo_reflection("t", undone)


def test_the_managers_flag_triggers_reflection_and_the_scripted_model_drives_it() -> None:
    item = {"id": "c1", "text": "Find the carrier.", "status": "open", "note": ""}
    update = {"entry": "A-1 ships with Maersk.", "checklist": [item], "reflect": False}
    flagged = {**update, "entry": "A-2 ships with DHL.", "reflect": True, "reason": "stuck"}
    reflection = {
        "memory": "A-1: Maersk. A-2: DHL.",
        "checklist": [{**item, "status": "done", "note": "both found"}],
        "rationale": "merged",
    }
    manager = ScriptedChatModel(structured_responses=[update, flagged, reflection])
    model = ScriptedChatModel(responses=calls("A-1", "A-2", "A-3"))
    # The rule's first checklist: the script answers the updates, in order.
    arc = ReflectiveContextManager(manager=manager, stall_turns=50, initial_checklist="rule")
    graph = agent_graph(model, arc)
    graph.invoke(start(), cfg())

    asked = [c.structured for c in manager.calls]
    # (a fourth update folds the last step in the background: the run ended before it lands)
    assert asked[:3] == ["MemoryUpdate", "MemoryUpdate", "Reflection"]
    assert "Newest interaction (turn 1)" in manager.calls[0].text
    [entry] = ledger(graph, "arc_reflection")
    assert entry["triggers"] == ["manager_flag"] and entry["rationale"] == "merged"
    live = graph.get_state(cfg()).values["messages"]
    assert live[3].text == f"{MEMORY_TITLE}\n> A-1: Maersk. A-2: DHL."
    assert live[2].text == f"{CHECKLIST_TITLE}\n> - [done] c1: Find the carrier. -- both found"


def test_no_reflection_without_a_signal() -> None:
    model = ScriptedChatModel(responses=calls("A-1", "A-2", "A-3", "A-4", "A-5"))
    graph = agent_graph(model, ReflectiveContextManager(stall_turns=50))
    graph.invoke(start(), cfg())
    assert not ledger(graph, "arc_reflection")
    assert len(ledger(graph, "context_edit")) == len(model.calls) - 2  # one fold a call


class Gated(OfflineArcManager):
    """The offline manager, whose folds of tool results wait for ``gate``."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate

    def update(self, request: UpdateRequest) -> MemoryUpdate:
        tools = any(isinstance(m, ToolMessage) for m in request.interaction)
        if tools and not self.gate.wait(10):
            raise TimeoutError("gate never opened")
        return super().update(request)


def test_the_fold_runs_while_the_actors_call_does() -> None:
    actor_calls = threading.Semaphore(0)
    replies = iter(calls("A-1", "A-2", "A-3"))

    def actor(messages: Sequence[BaseMessage]) -> AIMessage:
        actor_calls.release()
        return next(replies)

    class AfterTheActor(OfflineArcManager):
        """Each fold finishes only once the actor's call it runs beside has begun: a
        fold made before that call (on the hot path) would time out."""

        threads: ClassVar[list[str]] = []

        def update(self, request: UpdateRequest) -> MemoryUpdate:
            self.threads.append(threading.current_thread().name)
            if not actor_calls.acquire(timeout=10):
                raise TimeoutError("the actor was never called")
            return super().update(request)

    actor_calls.release()  # the first call has nothing to fold
    manager = AfterTheActor()
    graph = agent_graph(ScriptedChatModel(default=actor), ReflectiveContextManager(manager=manager))
    graph.invoke(start(), cfg())
    assert not ledger(graph, "arc_update_late") and not ledger(graph, "arc_update_failed")
    assert len(ledger(graph, "context_edit")) == 2
    assert manager.threads and all(t.startswith("lgctx-prep") for t in manager.threads)


def test_a_late_fold_falls_back_to_the_previous_memory_then_lands() -> None:
    gate = threading.Event()
    model = ScriptedChatModel(default="ok", report_usage=False)
    arc = ReflectiveContextManager(manager=Gated(gate), wait=0.05)
    graph = agent_graph(model, arc)
    graph.invoke({"messages": [HumanMessage(TASK, id="task")]}, cfg())

    def turn(i: int) -> dict[str, Any]:
        call = {"name": "lookup", "args": {"order": f"A-{i}"}, "id": f"c{i}"}
        return {
            "messages": [
                AIMessage("", id=f"a{i}", tool_calls=[call]),
                ToolMessage(f"carrier: X{i}", tool_call_id=f"c{i}", id=f"r{i}"),
            ]
        }

    graph.invoke(turn(1), cfg())  # a1, r1 raw; their fold starts and hangs
    memory_before = model.calls[-1].messages[2].text
    graph.invoke(turn(2), cfg())
    assert ledger(graph, "arc_update_late")
    sent = model.calls[-1].messages
    assert sent[2].text == memory_before  # the previous memory
    assert {"a1", "r1", "a2", "r2"} <= {m.id for m in sent}  # nothing hidden meanwhile
    gate.set()
    graph.invoke(turn(3), cfg())
    sent = model.calls[-1].messages
    assert [m.id for m in sent[3:]] == ["a3", "r3"]
    assert '"order": "A-1"' in sent[2].text and '"order": "A-2"' in sent[2].text


class Failing(OfflineArcManager):
    def update(self, request: UpdateRequest) -> MemoryUpdate:
        raise RuntimeError("manager down")


def test_a_failing_manager_leaves_the_history_and_the_call_goes_on() -> None:
    model = ScriptedChatModel(responses=calls("A-1", "A-2", "A-3"))
    graph = agent_graph(model, ReflectiveContextManager(manager=Failing(), in_background=False))
    out = graph.invoke(start(), cfg())
    assert out["messages"][-1].text == "All found."
    failures = ledger(graph, "arc_update_failed")
    assert failures and "manager down" in failures[0]["error"]
    tool_ids = {m.id for m in out["messages"] if isinstance(m, ToolMessage)}
    assert len(tool_ids) == 3  # nothing folded, nothing lost


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("stall_turns", 0),
        ("wait", -1),
        ("timeout", 0),
        ("memory_tokens", 10),
        ("memory_share", 1.5),
        ("in_background", "yes"),
        ("manager", object()),
    ],
)
def test_bad_settings_fail_when_built(option: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=option):
        ReflectiveContextManager(**{option: value})


async def test_under_ainvoke_a_chat_model_manager_folds_on_the_loop() -> None:
    def update(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        turn = messages[-1].text.split("Newest interaction (turn ")[1].split(")")[0]
        return {"entry": f"step {turn} folded", "checklist": []}

    manager = ScriptedChatModel(structured_default=update)
    model = ScriptedChatModel(responses=calls("A-1", "A-2", "A-3"))
    graph = agent_graph(model, ReflectiveContextManager(manager=manager))
    await graph.ainvoke(start(), cfg())
    assert not ledger(graph, "arc_update_failed") and not ledger(graph, "arc_update_late")
    memory = model.calls[-1].messages[3].text
    assert memory == f"{MEMORY_TITLE}\n> (t1) step 1 folded\n> (t2) step 2 folded"


def test_an_agent_that_thinks_folds_every_turn_and_reads_each_question_raw() -> None:
    # create_context_agent thinks by default: a [plan] trace enters the history
    # before each reply. It goes with its reply into the memory; under a manager's
    # rules (notes kept) every fold after the first was refused and the history
    # grew raw.
    from langgraph_ctx.agent import create_context_agent

    model = ScriptedChatModel(default=lambda m: AIMessage(f"Carrier of order {len(m)}: Maersk."))
    agent = create_context_agent(
        model,
        strategy="arc",
        system_prompt=SYSTEM,
        think_model=ScriptedChatModel(structured_default=thought_about_the_question()),
        budget=Budget.for_window(32_000),
    )
    questions = [f"Where is order B-{turn}?" for turn in range(10)]
    for question in questions:
        agent.invoke({"messages": [HumanMessage(question)]}, cfg())

    state = agent.get_state(cfg()).values
    assert not [e for e in state["context_ledger"] if e["kind"] == "edit_rejected"]
    # Task, checklist, memory, the last interaction (plan, reply, question) and the
    # last turn's plan and reply, folded on the next call. Every question between
    # the first and the last is in the memory.
    live = state["messages"]
    assert len(live) == 8, texts(live)
    memory = next(m for m in live if m.text.startswith(MEMORY_TITLE))
    assert all(q in memory.text for q in questions[1:-1])
    for k, call in enumerate(model.calls[1:], start=1):  # each question raw in its call
        last = next(m for m in reversed(call.messages) if m.type == "human")
        assert last.text.endswith(questions[k])
