"""Archive search on every archive backend: natural questions, identifiers, kinds,
limits, bad input, scopes that never leak, a fact in one passage of a long message.

Moved here from tests/test_archive_search.py, whose backend-specific checks (SQL
passage rows, migrations of older tables, PostgreSQL's ranking against the in-memory
index) stay there.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import Doc, LexicalIndex
from langgraph_ctx.retrieval.text import terms
from langgraph_ctx.storage.archive import MessageArchive, searchable_text
from langgraph_ctx.storage.hits import message_passages
from tests.storage.conformance.backends import Backend


def shipment_log() -> list[BaseMessage]:
    """A session in which one message answers the question and others share its words."""
    return [
        HumanMessage("Please track my parcel from Lyon.", id="m1"),
        AIMessage(
            "",
            id="m2",
            tool_calls=[
                {
                    "name": "track_shipment",
                    "args": {"shipment": "SHP-0042", "invoice": "INV-0007", "fields": ["eta"]},
                    "id": "call_0",
                    "type": "tool_call",
                }
            ],
        ),
        ToolMessage(
            '{"shipment": "SHP-0042", "vessel": "Ever Given", "port": "Rotterdam"}',
            tool_call_id="call_0",
            id="m3",
            name="track_shipment",
        ),
        HumanMessage("Which vessel is the biggest in the fleet? Any vessel will do.", id="m4"),
        AIMessage("The vessel for SHP-0099 is the Maersk Alabama.", id="m5"),
        SystemMessage(
            "[Conversation Summary] #1 The user asked about invoices and weather.",
            id="lgctx-summary-1",
            additional_kwargs={"lgctx": {"summary": {"seq": 1, "through": "m0"}}},
        ),
    ]


def ids(hits: list[object]) -> list[str]:
    return [h.message_id for h in hits]  # type: ignore[attr-defined]


# -- what a search finds ---------------------------------------------------------


def test_a_natural_question_finds_the_message_that_answers_it(archive: MessageArchive) -> None:
    archive.put("t1", shipment_log(), reason="compressed")
    hits = archive.search("t1", "What was the vessel for SHP-0042?")
    assert hits[0].message_id == "m3"  # holds both the identifier and "vessel"
    assert {"m3", "m2", "m4", "m5"} <= set(ids(hits))  # OR: any shared term matches
    assert "m1" not in ids(hits)  # shares no word with the question
    scores = [h.score for h in hits]
    assert scores[0] == 1.0 and scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert hits[0].text == searchable_text(shipment_log()[2])
    assert hits[0].message == shipment_log()[2]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("INV-0007", ["m2"]),
        ("call_0", ["m2", "m3"]),  # the call and its result: a passage each names it
        ("track_shipment eta", ["m2"]),
        ("Rotterdam", ["m3"]),
    ],
)
def test_identifiers_tool_names_and_arguments_are_findable(
    archive: MessageArchive, query: str, first: list[str]
) -> None:
    archive.put("t1", shipment_log(), reason="compressed")
    hits = archive.search("t1", query)
    assert sorted(ids(hits)[: len(first)]) == first, (query, ids(hits))


def test_hits_say_what_they_were_and_when(archive: MessageArchive) -> None:
    log = shipment_log()
    before = time.time()
    archive.put("t1", log[:2], reason="compressed")
    archive.put("t1", [log[2]], reason="compacted")
    archive.put("t1", [log[5]], reason="consolidated")
    after = time.time()
    kinds = {
        h.message_id: (h.kind, h.reason) for h in archive.search("t1", "track shipment summary")
    }
    assert kinds == {
        "m1": ("message", "compressed"),
        "m2": ("message", "compressed"),
        "m3": ("tool_result", "compacted"),
        "lgctx-summary-1": ("summary", "consolidated"),
    }
    hit = archive.search("t1", "Rotterdam")[0]
    assert before - 1 <= hit.archived_at <= after + 1
    positions = {h.message_id: h.position for h in archive.search("t1", "track shipment summary")}
    assert positions["m1"] < positions["m2"] < positions["m3"] < positions["lgctx-summary-1"]


def test_limit_keeps_the_best(archive: MessageArchive) -> None:
    archive.put("t1", shipment_log(), reason="compressed")
    everything = archive.search("t1", "vessel shipment SHP-0042", limit=50)
    assert len(everything) >= 4
    assert ids(archive.search("t1", "vessel shipment SHP-0042", limit=2)) == ids(everything)[:2]


def test_a_rearchived_message_is_one_hit(archive: MessageArchive) -> None:
    log = shipment_log()
    archive.put("t1", log, reason="compressed")
    archive.put("t1", log, reason="compressed")  # a retried step
    archive.put("t1", [HumanMessage("Rotterdam, changed on retry", id="m3")], reason="x")
    hits = archive.search("t1", "Rotterdam")
    assert ids(hits) == ["m3"] and "Ever Given" in hits[0].text  # the first write stays


def test_async_search_is_the_same_search(archive_backend: Backend[Any]) -> None:
    archive = archive_backend.store
    archive_backend.run(archive.aput("t1", shipment_log(), reason="compressed"))
    sync = archive.search("t1", "What was the vessel for SHP-0042?")
    assert archive_backend.run(archive.asearch("t1", "What was the vessel for SHP-0042?")) == sync
    assert sync and archive_backend.run(archive.asearch("t2", "vessel")) == []


# -- bad input -----------------------------------------------------------------------


def test_queries_without_terms_and_unknown_threads_find_nothing(archive: MessageArchive) -> None:
    archive.put("t1", shipment_log(), reason="compressed")
    assert archive.search("t1", "") == []
    assert archive.search("t1", "   ") == []
    assert archive.search("t1", "what is it, and where was it?") == []  # stop words only
    assert archive.search("nobody", "vessel") == []
    assert archive.search("t1", "vessel", namespace="sub") == []
    assert archive.search("t1", "zeppelin") == []


@pytest.mark.parametrize(
    ("thread", "limit", "field"), [("", 10, "thread_id"), ("t1", 0, "limit"), ("t1", -3, "limit")]
)
def test_bad_arguments_are_refused_and_change_nothing(
    archive: MessageArchive, thread: str, limit: int, field: str
) -> None:
    archive.put("t1", shipment_log(), reason="compressed")
    with pytest.raises(ConfigurationError) as info:
        archive.search(thread, "vessel", limit=limit)
    assert info.value.field == field
    assert [m.id for m in archive.list("t1")] == [m.id for m in shipment_log()]
    assert archive.search("t1", "vessel")


def test_a_planted_answer_is_found_wherever_it_sits(archive: MessageArchive) -> None:
    # 1,500 messages that share words with the question; the answer is one of them.
    filler = [
        f"Shipment update {i}: the vessel left port {i % 17} with cargo for customer {i % 23}."
        for i in range(1_500)
    ]
    for at in (0, 777, 1_499):
        thread = f"plant-{at}"
        texts = list(filler)
        texts[at] = "Confirmed: shipment SHP-0042 travels on the vessel Ever Given."
        messages = [HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)]
        for start in range(0, len(messages), 500):
            archive.put(thread, messages[start : start + 500], reason="compressed")
        hits = archive.search(thread, "Which vessel carries shipment SHP-0042?", limit=5)
        assert hits[0].message_id == f"m{at}", (at, ids(hits))


def test_within_a_name_finds_the_long_passage_among_many_that_share_the_question(
    archive: MessageArchive,
) -> None:
    # The fact is a long JSON row; short questions about other vendors share "account
    # id" and one of the name's words, and short lines name the vendor hundreds of times.
    fact = json.dumps(
        {"order_id": "SO-1", "customer": "Nakamura Supply", "status": "open", "total": 12.5}
        | {"note": "Finance reviewed the rate card before month end.", "contact": "P. Okafor"}
        | {"account_id": "ACC-48213"}
    )
    texts = [f"retrying export for Nakamura Supply (attempt {i % 5}/5)" for i in range(300)]
    texts += [f"What is the account id for {v}?" for v in ("Nakamura Freight", "Okafor Supply")]
    texts += [f"The account id for Varga Labs {i} is ACC-{i:05d}." for i in range(50)]
    texts.insert(137, fact)
    messages = [HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)]
    archive.put("t", messages, reason="compressed")
    question = "What is the account id for Nakamura Supply?"
    assert "m137" not in ids(archive.search("t", question, limit=32))
    hits = archive.search("t", question, limit=5, within="Nakamura Supply")
    assert ids(hits)[0] == "m137" and "ACC-48213" in hits[0].passage
    # Only passages that hold every word of the name: never the other vendors'.
    assert all("nakamura supply" in h.passage.casefold() for h in hits)
    # A name none holds whole finds nothing ("Supplies" would: names are stemmed too).
    assert archive.search("t", question, within="Nakamura Logistics") == []


# -- scopes never leak -----------------------------------------------------------------

VOCABULARY = ["alpha", "bravo", "charlie", "delta", "SHP-0042", "call_0", "Müller", "the", "of"]
SCOPES = [("t1", ""), ("t1", "sub"), ("t2", ""), ("t2", "sub"), ("t3", "deep")]


@st.composite
def scoped_contents(draw: st.DrawFn) -> dict[tuple[str, str], list[str]]:
    # One to three passages a text (lines and sentences), so a leak of a passage shows too.
    passage = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5).map(" ".join)
    text = st.lists(passage, min_size=1, max_size=3).map(lambda ps: ".\n".join(ps) + ".")
    return {
        scope: draw(st.lists(text, max_size=6))
        for scope in draw(st.lists(st.sampled_from(SCOPES), min_size=1, max_size=5, unique=True))
    }


def check_scoped_search(
    archive: MessageArchive, prefix: str, contents: dict[tuple[str, str], list[str]], query: str
) -> None:
    # The same ids in every scope, with different texts: a leak shows as a wrong text.
    for (thread, ns), texts in contents.items():
        messages = [HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)]
        archive.put(prefix + thread, messages, reason="x", namespace=ns)
    wanted = set(terms(query))
    for thread, ns in SCOPES:
        texts = contents.get((thread, ns), [])
        hits = archive.search(prefix + thread, query, limit=50, namespace=ns)
        assert all(h.text == texts[int(h.message_id[1:])] for h in hits)
        assert all(h.passage in message_passages(h.message) for h in hits)
        # The passage shown is one that matched, in this scope's own text.
        assert all(wanted & set(terms(h.passage)) for h in hits)
        expected = {f"m{i}" for i, t in enumerate(texts) if wanted & set(terms(t))}
        assert set(ids(hits)) == expected, (thread, ns, query)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(contents=scoped_contents(), query=st.sampled_from([*VOCABULARY, "alpha müller", "x"]))
def test_search_never_leaks_across_threads_or_namespaces(
    archive: MessageArchive, contents: dict[tuple[str, str], list[str]], query: str
) -> None:
    # One store serves every example: each example's threads get a prefix of their own.
    check_scoped_search(archive, uuid.uuid4().hex[:8] + "-", contents, query)


# -- a message found by its best passage --------------------------------------------------------


def test_a_fact_in_one_passage_of_a_long_message_beats_lookalikes(archive: MessageArchive) -> None:
    # Earlier questions share every word of the question; the answer is one line of a long
    # report. Ranked whole, the report's match is spread over its length and it falls
    # below every lookalike; ranked by its best passage, it comes first.
    question = "Where was shipment SHP-7777 rerouted?"
    lookalikes = [
        HumanMessage(f"Where was shipment SHP-7777 rerouted, asked customer {i}?", id=f"q{i}")
        for i in range(300)
    ]
    fact = "Shipment SHP-7777 was rerouted through Gdansk."
    report = ToolMessage(long_report(fact), tool_call_id="call_1", id="report")
    messages: list[BaseMessage] = [*lookalikes[:150], report, *lookalikes[150:]]
    whole = LexicalIndex()
    whole.add("t", [Doc(str(m.id), searchable_text(m)) for m in messages])
    assert "report" not in [key for key, _ in whole.search("t", question, limit=50)]
    archive.put("t", messages, reason="compressed")
    hits = archive.search("t", question, limit=5)
    assert hits[0].message_id == "report" and hits[0].passage == fact
    assert hits[0].score == 1.0 and len({h.message_id for h in hits}) == 5


def long_report(fact: str, lines: int = 60) -> str:
    """A long tool result of lookalike lines, one of which holds ``fact``."""
    rows = [f"Vessel report {i}: shipment SHP-{i:04d} left port on schedule." for i in range(lines)]
    rows[lines // 2] = fact
    return "\n".join(rows)
