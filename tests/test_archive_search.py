"""Archive search, backend by backend: what the SQL archives index (passage rows),
migrations that index rows archived before search or passages existed, and PostgreSQL's
ranking against the in-memory index. What every backend shares is checked by the
conformance suite (tests/storage/conformance/test_archive_search.py).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_to_dict,
)

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
from tests.storage.conformance.test_archive_search import ids, long_report, shipment_log

SQL = Path(__file__).resolve().parents[1] / "langgraph_ctx" / "storage" / "sql"


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
    assert migrate(url).applied_now == (3, 4, 5, 6, 7)
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
        assert migrate(postgres_db).applied_now == (3, 4, 5, 6, 7)
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
    assert migrate(url).applied_now == (5, 6, 7)
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
        assert migrate(postgres_db).applied_now == (5, 6, 7)
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
