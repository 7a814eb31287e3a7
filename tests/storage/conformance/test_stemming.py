"""Stemmed search on every backend: a question finds a fact however either inflects its
words ("Who does my taxes?" finds "my tax advisor"), in the archive and the memory index,
in process, in SQLite and in PostgreSQL (issue 34). The backends' rankings side by side,
and the migration that stems the indexes of older databases, are in
tests/storage/test_stemming.py.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_ctx.retrieval.index import Doc, TextIndex
from tests.storage.conformance.backends import Backend

# Each question shares no word as written with its fact, only stems.
QUESTIONS = {
    "Who does my taxes?": "tax",
    "What did we plan for our anniversary dinner?": "anniversary",
    "Which airlines do I prefer?": "airline",
    "When are the invoices paid?": "invoice",
}


def facts() -> list[BaseMessage]:
    return [
        HumanMessage("My tax advisor is Ines Moreau, at Calder and Finch.", id="tax"),
        AIMessage("Noted: the courier arrives on Tuesdays.", id="courier"),
        HumanMessage("The Lisbon restaurant is booked for anniversaries in May.", id="anniversary"),
        HumanMessage("The preferred airline is Finnair, in an aisle seat.", id="airline"),
        AIMessage("Paying every invoice within 30 days keeps the discount.", id="invoice"),
        HumanMessage("The weather was sunny in Porto all week.", id="weather"),
    ]


def test_archive_finds_inflected_forms(archive_backend: Backend[Any]) -> None:
    archive = archive_backend.store
    archive.put("t", facts(), reason="x")
    for question, fact in QUESTIONS.items():
        found = [hit.message_id for hit in archive.search("t", question)]
        assert found[:1] == [fact], (question, found)


def test_archive_within_matches_a_stem(archive_backend: Backend[Any]) -> None:
    # ``within`` (a name the question is about) is stemmed as the words are.
    archive = archive_backend.store
    archive.put("t", facts(), reason="x")
    found = archive.search("t", "who handles these", within="taxes")
    assert [hit.message_id for hit in found] == ["tax"]


def test_memory_index_finds_inflected_forms(index_backend: Backend[Any]) -> None:
    index: TextIndex = index_backend.store
    index.add(("u",), [Doc(str(m.id), str(m.content), "observation") for m in facts()])
    for question, fact in QUESTIONS.items():
        found = [key for key, _ in index.search(("u",), question)]
        assert found[:1] == [fact], (question, found)
