"""A fold's work is the interaction it folds, not the memory it folds into: what it
archives and what it tokenizes stay the same size while the memory grows twentyfold,
and what it absorbed is still found by a search. (When each fold rewrote the memory
message, it archived and re-counted it whole: both grew with the memory.)"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, call_llm_node
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.strategies import ReflectiveContextManager
from langgraph_ctx.strategies.arc.offline import OfflineArcManager
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

TURNS = 60
RESULT_CHARS = 600
PORTS = ("Rotterdam", "Hamburg", "Antwerp", "Valencia", "Gdansk", "Piraeus")
CARRIERS = ("Maersk", "Hapag-Lloyd", "Evergreen", "Cosco", "Yang Ming")


class MeasuredArchive(InMemoryArchive):
    """An archive that tells how many characters each write carried."""

    def __init__(self) -> None:
        super().__init__()
        self.chars = 0

    def put(
        self, thread_id: str, messages: Sequence[BaseMessage], *, reason: str, namespace: str = ""
    ) -> None:
        self.chars += sum(len(m.text) for m in messages)
        super().put(thread_id, messages, reason=reason, namespace=namespace)


def result(rng: random.Random, i: int) -> str:
    """A tool result of about RESULT_CHARS characters, new facts every turn."""
    lines = [
        f"Shipment S-{i}-{k} left {rng.choice(PORTS)} on 2026-03-{rng.randint(10, 28)} "
        f"with {rng.choice(CARRIERS)}, container MSKU{rng.randint(1000000, 9999999)}."
        for k in range(8)
    ]
    return " ".join(lines)[:RESULT_CHARS]


@pytest.mark.slow
def test_a_fold_archives_and_counts_the_interaction_only(monkeypatch: pytest.MonkeyPatch) -> None:
    tokenized = [0]
    tokenize = TokenCounter._tokenize

    def counting(self: TokenCounter, text: str) -> int:
        tokenized[0] += len(text)
        return tokenize(self, text)

    monkeypatch.setattr(TokenCounter, "_tokenize", counting)
    archive = MeasuredArchive()
    # No reflection (the one step allowed to cost the whole memory): folds only.
    arc = ReflectiveContextManager(
        manager=OfflineArcManager(entry_tokens=120),
        archive=archive,
        in_background=False,
        stall_turns=10_000,
        memory_tokens=1_000_000,
    )
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(ScriptedChatModel(default="ok", report_usage=False)))
    builder.add_edge(START, "call_llm")
    budget = Budget.for_window(128_000)
    graph = (
        Pipeline([PreflightCheck(), arc], budget=budget)
        .attach(builder)
        .compile(checkpointer=InMemorySaver())
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("Find where shipment S-7 is.", id="task")]}, config)

    rng = random.Random(7)
    results: list[str] = []
    # per turn: characters archived, tokenized, of the checklist, of the memory after it
    per_turn: list[tuple[int, int, int, int]] = []
    for i in range(TURNS):
        call = {"name": "track", "args": {"shipment": f"S-{i}"}, "id": f"c{i}"}
        results.append(result(rng, i))
        turn = [AIMessage("", tool_calls=[call]), ToolMessage(results[-1], tool_call_id=f"c{i}")]
        before = len(graph.get_state(config).values["messages"][1].text)
        archived, tokenized[0] = archive.chars, 0
        graph.invoke({"messages": turn}, config)
        messages = graph.get_state(config).values["messages"]
        checklist = max(before, len(messages[1].text))
        per_turn.append((archive.chars - archived, tokenized[0], checklist, len(messages[2].text)))

    early, late = per_turn[5:15], per_turn[-10:]
    assert late[-1][3] > 20 * RESULT_CHARS  # the memory grew well past one interaction
    assert late[-1][3] > 4 * early[-1][3]
    # Archived: the two interactions folded (the call and its result, the agent's "ok")
    # and the checklist each fold rewrote; never the memory.
    assert all(a <= RESULT_CHARS + 2 * checklist + 50 for a, _, checklist, _ in per_turn)
    # Tokenized: the new messages, the manager's digest of the result, the new entry
    # and checklist: as much at the end as early on.
    assert max(t for _, t, _, _ in late) <= 1.25 * max(t for _, t, _, _ in early)
    assert all(t <= 8 * RESULT_CHARS for _, t, _, _ in per_turn)
    # What a fold absorbed is still found by a question about it, word for word.
    container = results[10].split("container ")[1].split(".")[0]
    [hit] = archive.search("t", f"which shipment left in container {container}?", limit=1)
    assert hit.message.text == results[10] and hit.reason == "edited"
    # The count the memory carries, grown entry by entry, is the count of its text.
    memory = graph.get_state(config).values["messages"][2]
    monkeypatch.undo()
    carried = memory.additional_kwargs["lgctx"]["arc"]["tokens"]
    assert carried == TokenCounter().count_message(memory)
