"""Recall over a hybrid archive (issue 34): a fact found by meaning reaches the block
the model is sent, even when it shares no word with the question and a dozen archived
messages that do would outrank it by words."""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import Budget, ContextState, Pipeline, PreflightCheck, call_llm_node
from langgraph_ctx.markers import RECALL_PREFIX
from langgraph_ctx.middleware.recall import MemoryRecall
from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings
from langgraph_ctx.retrieval.index import query_terms
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.testing import ScriptedChatModel

FACT = "My preferred airline is Finnair."
QUESTION = "Which carrier do I like to fly with?"
# Each shares a word of the question ("carrier", "fly") and is about something else.
WORDY = [
    "The carrier pigeon exhibit opens at the museum next week.",
    "Which carrier handles the parcel delivery to the warehouse?",
    "Our mobile carrier raised the data plan price again.",
    "The carrier bag charge is ten cents at the grocery store.",
    "The new phone carrier contract runs for two years.",
    "The kids fly paper planes from the balcony.",
    "Flags fly at half mast on the town hall today.",
    "A fruit fly got into the kitchen compost bin.",
    "Fly fishing season starts in April on the upper lake.",
    "The fly on the tent door is torn and needs a patch.",
    "The aircraft carrier was shown in the naval documentary.",
    "Watch the sparks fly when the welder starts on the gate.",
]
# About air travel, sharing none of its words: what the vectors rank near the question,
# as a long session's archive holds many (with fewer, the vector side's first 33 would
# hold every archived message, and fusion credit each distractor twice).
NEAR = [
    f"The {city} flight on {day} leaves from gate {gate}."
    for gate, (city, day) in enumerate(
        (c, d)
        for c in ("Oslo", "Rome", "Lisbon", "Tokyo", "Denver", "Cairo", "Madrid", "Dublin")
        for d in ("Monday", "Wednesday", "Friday", "Sunday", "Tuesday")
    )
]


def archived() -> list[BaseMessage]:
    texts = [*WORDY[:6], FACT, *WORDY[6:], *NEAR]
    return [HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)]


def recalled(archive: InMemoryArchive) -> str:
    """The recall block of the prompt the model is sent for QUESTION."""
    archive.put("t", archived(), reason="compression")
    archive.wait_for_vectors()
    model = ScriptedChatModel(default="ok", report_usage=False)
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    pipeline = Pipeline(
        [PreflightCheck(), MemoryRecall(archive=archive, max_tokens=1_000)],
        budget=Budget.for_window(32_000),
    )
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    graph.invoke(
        {"messages": [HumanMessage(QUESTION, id="q")]}, {"configurable": {"thread_id": "t"}}
    )
    (call,) = model.calls
    return next((m.text for m in call.messages if m.text.startswith(RECALL_PREFIX)), "")


def test_the_set_is_what_it_claims() -> None:
    asked = set(query_terms(QUESTION))
    assert not set(query_terms(FACT)) & asked
    assert all(set(query_terms(t)) & asked for t in WORDY)
    assert not any(set(query_terms(t)) & asked for t in NEAR)


def test_a_paraphrase_found_by_meaning_reaches_the_prompt() -> None:
    block = recalled(InMemoryArchive(embeddings=MiniLMEmbeddings()))
    # Re-ranked by words, as before, the fact scored 0 and eight of the twelve messages
    # sharing the question's words took the archived lines.
    assert FACT in block


def test_without_embeddings_the_block_holds_only_word_matches() -> None:
    block = recalled(InMemoryArchive())
    assert block and FACT not in block  # words alone: the distractors, never the fact
    assert "carrier" in block.lower()
