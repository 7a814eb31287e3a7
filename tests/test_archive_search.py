"""Archive search on every backend: natural questions, identifiers, kinds, scopes, migration."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.index import Doc, LexicalIndex
from langgraph_ctx.retrieval.text import terms
from langgraph_ctx.storage.archive import (
    InMemoryArchive,
    MessageArchive,
    SQLiteArchive,
    searchable_text,
)
from langgraph_ctx.storage.hits import message_passages
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.postgres import PostgresArchive

SQL = Path(__file__).resolve().parents[1] / "langgraph_ctx" / "storage" / "sql"
BACKENDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def archive(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MessageArchive]:
    if request.param == "memory":
        yield InMemoryArchive()
    elif request.param == "sqlite":
        with SQLiteArchive(str(tmp_path / "archive.db")) as sqlite_archive:
            yield sqlite_archive
    else:
        url = request.getfixturevalue("postgres_db")
        migrate(url)
        with PostgresArchive(url) as pg_archive:
            yield pg_archive


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


async def test_async_search_is_the_same_search(archive: MessageArchive) -> None:
    await archive.aput("t1", shipment_log(), reason="compressed")
    sync = archive.search("t1", "What was the vessel for SHP-0042?")
    assert await archive.asearch("t1", "What was the vessel for SHP-0042?") == sync


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
    assert archive.search("t", question, within="Nakamura Supplies") == []


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


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@settings(max_examples=40, deadline=None)
@given(contents=scoped_contents(), query=st.sampled_from([*VOCABULARY, "alpha müller", "x"]))
def test_search_never_leaks_across_threads_or_namespaces(
    kind: str, contents: dict[tuple[str, str], list[str]], query: str
) -> None:
    archive: MessageArchive = InMemoryArchive() if kind == "memory" else SQLiteArchive()
    check_scoped_search(archive, "", contents, query)
    if isinstance(archive, SQLiteArchive):
        archive.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(contents=scoped_contents(), query=st.sampled_from([*VOCABULARY, "alpha müller", "x"]))
def test_postgres_search_never_leaks_across_threads_or_namespaces(
    postgres_db: str, contents: dict[tuple[str, str], list[str]], query: str
) -> None:
    migrate(postgres_db)  # idempotent: applied by the first example
    with PostgresArchive(postgres_db, max_size=1) as archive:
        check_scoped_search(archive, uuid.uuid4().hex[:8] + "-", contents, query)


# -- one ranking, whatever the backend ----------------------------------------------------


def test_postgres_ranks_like_the_in_memory_index_when_words_do_not_repeat(
    postgres_db: str,
) -> None:
    # PostgreSQL counts a word once per row; with no word repeated in a message, its BM25
    # is the in-memory index's, score for score.
    words = [
        "amber",
        "basil",
        "cedar",
        "dune",
        "ember",
        "fjord",
        "garnet",
        "heron",
        "iris",
        "jade",
        "kelp",
        "lumen",
    ]
    texts = [" ".join(words[i % 12 : i % 12 + 1 + i % 5]) for i in range(40)]
    messages = [HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)]
    memory = InMemoryArchive()
    memory.put("t", messages, reason="x")
    migrate(postgres_db)
    with PostgresArchive(postgres_db) as pg:
        pg.put("t", messages, reason="x")
        for query in ["amber", "cedar garnet", "basil iris lumen kelp", "jade heron"]:
            expected = [
                (h.message_id, round(h.score, 9)) for h in memory.search("t", query, limit=50)
            ]
            got = [(h.message_id, round(h.score, 9)) for h in pg.search("t", query, limit=50)]
            assert sorted(got) == sorted(expected), query
            assert [s for _, s in got] == [s for _, s in expected]


# -- the SQL backends index the words searchable_text gives ---------------------------------


def drift_cases() -> list[BaseMessage]:
    return [
        *shipment_log(),
        AIMessage(
            [{"type": "text", "text": "Here it is."}, "plain part", {"type": "image_url"}],
            id="b1",
            tool_calls=[
                {
                    "name": "lookup",
                    "args": {
                        "n": 5,
                        "ok": False,
                        "none": None,
                        "deep": {"list": [1, "Müller", 0.5]},
                    },
                    "id": "call_9",
                    "type": "tool_call",
                }
            ],
        ),
        HumanMessage("named", id="b2", name="maria"),
    ]


def check_passages(message: BaseMessage, passages: list[str]) -> None:
    assert passages == message_passages(message), message.id
    joined = Counter(t for p in passages for t in terms(p))
    assert joined == Counter(terms(searchable_text(message))), message.id


def test_sqlite_indexes_the_passages_of_searchable_text(tmp_path: Path) -> None:
    with SQLiteArchive(str(tmp_path / "a.db")) as archive:
        archive.put("t", drift_cases(), reason="x")
    with closing(sqlite3.connect(tmp_path / "a.db")) as conn:
        rows = conn.execute(
            "SELECT message_id, body FROM lgctx_archive_passages ORDER BY message_id, ordinal"
        ).fetchall()
    for message in drift_cases():
        check_passages(message, [body for mid, body in rows if mid == message.id])


def test_postgres_indexes_the_passages_of_searchable_text(postgres_db: str) -> None:
    migrate(postgres_db)
    with PostgresArchive(postgres_db) as archive:
        archive.put("t", drift_cases(), reason="x")
        rows = archive._read(
            "SELECT message_id, body FROM lgctx_archive_passages WHERE thread_id = 't'"
            " ORDER BY message_id, ordinal",
            (),
        )
    for message in drift_cases():
        check_passages(message, [r["body"] for r in rows if r["message_id"] == message.id])


# -- rows archived before the search migration ------------------------------------------------


def old_migrations(tmp_path: Path, last: int = 2) -> Path:
    directory = tmp_path / f"old-sql-{last}"
    directory.mkdir()
    for path in SQL.glob("000[1-9]_*.sql"):
        if int(path.name[:4]) <= last:
            shutil.copy(path, directory / path.name)
    return directory


def test_sqlite_migration_indexes_rows_archived_before_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/old.db"
    migrate(url, directory=old_migrations(tmp_path))
    log = shipment_log()
    with closing(sqlite3.connect(tmp_path / "old.db")) as conn, conn:
        conn.executemany(
            "INSERT INTO lgctx_archive (thread_id, namespace, message_id, position, role,"
            " content_json, tokens, archived_at, reason) VALUES (?, '', ?, ?, ?, ?, 1, 0, 'x')",
            [
                (thread, m.id, i, m.type, json.dumps(d))
                for thread in ("t1", "t2")
                for i, (m, d) in enumerate(zip(log, messages_to_dict(log), strict=True))
            ],
        )
    assert migrate(url).applied_now == (3, 4, 5)
    with SQLiteArchive(str(tmp_path / "old.db")) as archive:
        assert ids(archive.search("t1", "What was the vessel for SHP-0042?"))[0] == "m3"
        assert archive.list("t1") == log
        archive.put("t1", [HumanMessage("a new vessel note", id="m9")], reason="x")
        assert [m.id for m in archive.list("t1")][-1] == "m9"
        assert "m9" in ids(archive.search("t1", "vessel note"))
        assert "m9" not in ids(archive.search("t2", "vessel note"))


def test_postgres_migration_indexes_rows_archived_before_it(
    postgres_db: str, tmp_path: Path
) -> None:
    migrate(postgres_db, directory=old_migrations(tmp_path))
    with PostgresArchive(postgres_db) as archive:
        insert_archived_rows(archive, shipment_log(), [("t1", "")])  # into the 0002 schema
        insert_archived_rows(archive, shipment_log()[:2], [("t2", "")])
        assert migrate(postgres_db).applied_now == (3, 4, 5)
        assert ids(archive.search("t1", "What was the vessel for SHP-0042?"))[0] == "m3"
        assert ids(archive.search("t2", "vessel SHP-0042")) == ["m2"]
        archive.put("t1", [HumanMessage("a new vessel note", id="m9")], reason="x")
        assert ids(archive.search("t1", "note")) == ["m9"]
        counts = archive._read(
            "SELECT docs FROM lgctx_search_scopes ORDER BY docs", ()
        )  # passages backfilled, then kept by the trigger
        per_message = [len(message_passages(m)) for m in shipment_log()]
        assert [r["docs"] for r in counts] == [sum(per_message[:2]), sum(per_message) + 1]


# -- an archive made before passages (0004) ----------------------------------------------------


def long_report(fact: str, lines: int = 60) -> str:
    """A long tool result of lookalike lines, one of which holds ``fact``."""
    rows = [f"Vessel report {i}: shipment SHP-{i:04d} left port on schedule." for i in range(lines)]
    rows[lines // 2] = fact
    return "\n".join(rows)


def pre_passage_log() -> list[BaseMessage]:
    return [
        *shipment_log(),
        ToolMessage(
            long_report("Shipment SHP-7777 was rerouted through Gdansk."),
            tool_call_id="call_1",
            id="m6",
        ),
    ]


def check_upgraded(archive: MessageArchive, log: list[BaseMessage]) -> None:
    """The rows archived before passages, in t1, t1/sub and t2, are found by passage;
    a new write is indexed in its own scope only."""
    hit = archive.search("t1", "Where was shipment SHP-7777 rerouted?")[0]
    assert (hit.message_id, hit.passage) == ("m6", "Shipment SHP-7777 was rerouted through Gdansk.")
    assert archive.list("t1") == log
    archive.put("t1", [HumanMessage("Gdansk is closed on Sundays.", id="m9")], reason="x")
    assert ids(archive.search("t1", "Gdansk Sundays"))[:2] == ["m9", "m6"]
    assert ids(archive.search("t2", "Gdansk Sundays")) == ["m6"]
    assert ids(archive.search("t1", "Gdansk", namespace="sub")) == ["m6"]


def test_sqlite_migration_cuts_rows_archived_before_passages(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/v4.db"
    migrate(url, directory=old_migrations(tmp_path, last=4))
    log = pre_passage_log()
    with closing(sqlite3.connect(tmp_path / "v4.db")) as conn, conn:
        conn.executemany(
            "INSERT INTO lgctx_archive (thread_id, namespace, message_id, position, role,"
            " content_json, tokens, archived_at, reason) VALUES (?, ?, ?, ?, ?, ?, 1, 0, 'x')",
            [
                (thread, ns, m.id, i, m.type, json.dumps(d))
                for thread, ns in (("t1", ""), ("t1", "sub"), ("t2", ""))
                for i, (m, d) in enumerate(zip(log, messages_to_dict(log), strict=True))
            ],
        )
    assert migrate(url).applied_now == (5,)
    with closing(sqlite3.connect(tmp_path / "v4.db")) as conn:
        (count,) = conn.execute("SELECT count(*) FROM lgctx_archive_passages").fetchone()
    assert count == 3 * sum(len(message_passages(m)) for m in log)
    with SQLiteArchive(str(tmp_path / "v4.db")) as archive:
        check_upgraded(archive, log)


def insert_archived_rows(
    archive: PostgresArchive, log: list[BaseMessage], scopes: list[tuple[str, str]]
) -> None:
    """Rows as an older package archived them: into lgctx_archive alone."""
    rows = [
        (thread, ns, m.id, m.type, json.dumps(d), 1, "x")
        for thread, ns in scopes
        for m, d in zip(log, messages_to_dict(log), strict=True)
    ]
    archive._write(
        "INSERT INTO lgctx_archive (thread_id, namespace, message_id, role, content, tokens,"
        " reason) SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[],"
        " %s::jsonb[], %s::integer[], %s::text[])",
        tuple(list(column) for column in zip(*rows, strict=True)),
    )


def test_postgres_migration_cuts_rows_archived_before_passages(
    postgres_db: str, tmp_path: Path
) -> None:
    migrate(postgres_db, directory=old_migrations(tmp_path, last=4))
    log = pre_passage_log()
    with PostgresArchive(postgres_db) as archive:
        insert_archived_rows(archive, log, [("t1", ""), ("t1", "sub"), ("t2", "")])
        assert migrate(postgres_db).applied_now == (5,)
        (row,) = archive._read("SELECT count(*) AS n FROM lgctx_archive_passages", ())
        assert row["n"] == 3 * sum(len(message_passages(m)) for m in log)
        check_upgraded(archive, log)
        # The counts BM25 reads were backfilled with the rows, then kept by the triggers.
        scopes = archive._read(
            "SELECT docs FROM lgctx_search_scopes WHERE scope LIKE 'p%%' ORDER BY docs", ()
        )
        per_copy = sum(len(message_passages(m)) for m in log)
        assert [r["docs"] for r in scopes] == [per_copy, per_copy, per_copy + 1]
        gone = archive._read(
            "SELECT count(*) AS n FROM lgctx_search_scopes WHERE scope LIKE 'a%%'", ()
        )
        assert gone[0]["n"] == 0  # the message-level index's counts went with it


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
