"""``langgraph-ctx inspect`` and ``migrate`` on real sessions: text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_ctx.cli import main
from langgraph_ctx.cli.demo import run_demo
from langgraph_ctx.cli.inspect import inspect_session
from langgraph_ctx.state import LedgerEntry
from langgraph_ctx.storage.migrations import migrate
from langgraph_ctx.storage.postgres import PostgresEventSink
from tests.pg_worker import drive, session_graph, workload_for


@pytest.fixture(scope="module")
def session(postgres_url: str, request: pytest.FixtureRequest) -> str:
    """A Postgres database with one 24-turn session that compressed, plus events of
    the kinds other middleware record (eviction, recall timeout)."""
    db = request.getfixturevalue("module_db")
    migrate(db)
    workload = workload_for("inspected", 24)
    with session_graph(db, workload, window=6_000) as graph:
        drive(graph, workload, "inspected", 24)
        ledger = graph.get_state({"configurable": {"thread_id": "inspected"}}).values[
            "context_ledger"
        ]
    seq = ledger[-1]["seq"]
    with PostgresEventSink(db) as sink:
        sink.write(
            "inspected",
            "",
            [
                LedgerEntry(
                    seq=seq + 1,
                    kind="eviction",
                    node="call_llm",
                    ts=1.0,
                    data={"tool": "search_logs", "reason": "lru"},
                ),
                LedgerEntry(
                    seq=seq + 2,
                    kind="recall_timeout",
                    node="call_llm",
                    ts=2.0,
                    data={"timeout": 2.0, "elapsed": 2.01},
                ),
            ],
        )
        sink.write(
            "inspected",
            "researcher",
            [
                LedgerEntry(
                    seq=0, kind="utilization", node="call_llm", ts=3.0, data={"utilization": 0.1}
                )
            ],
        )
        sink.write(
            "someone-else",
            "",
            [LedgerEntry(seq=0, kind="eviction", node="x", ts=4.0, data={"tool": "not_ours"})],
        )
    return db


@pytest.fixture(scope="module")
def module_db(postgres_url: str) -> object:
    # One database for the module: the session takes a few seconds to build.
    import uuid

    import psycopg

    from tests.postgres_fixture import _with_dbname

    name = f"lgctx_inspect_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    yield _with_dbname(postgres_url, name)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


def test_inspect_text(session: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "inspected", "--database-url", session]) == 0
    out = capsys.readouterr().out
    assert "thread 'inspected'" in out and "events from event table" in out
    assert "utilization per LLM call" in out and "1.0 |" in out
    assert "compressions: " in out and "ratio " in out and "entity retention " in out
    assert "summaries in context: " in out and "[Conversation Summary]" not in out.split("\n")[0]
    assert "evicted tools: 1\n  seq" in out and '"tool": "search_logs"' in out
    assert "recall timeouts: 1" in out and '"timeout": 2.0' in out
    assert "archive: " in out and "not_ours" not in out
    assert "sub-agent namespaces: researcher (1 events)" in out


def test_inspect_json_matches_the_database(
    session: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "inspected", "--database-url", session, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["found"] and data["events_source"] == "event table"
    assert len(data["utilization"]) == data["event_counts"]["utilization"] >= 24
    assert len(data["compressions"]) == data["event_counts"]["compression"] >= 1
    first = data["compressions"][0]
    assert first["ratio"] > 1 and 0 <= first["entity_retention"] <= 1
    assert data["summaries"] and data["summaries"][0]["first_line"]
    assert data["evictions"] == [
        {"seq": data["evictions"][0]["seq"], "tool": "search_logs", "reason": "lru"}
    ]
    assert data["archive_rows"] > 0 and data["archive_tokens"] > 0
    assert data["database"] == session  # no password in this URL; see the redaction tests
    assert max(data["utilization"]) <= max(data["measured"])


def test_inspect_unknown_thread(session: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "nobody", "--database-url", session]) == 1
    assert "no checkpoint" in capsys.readouterr().out


def test_inspect_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["inspect", "t", "--database-url", f"sqlite:///{tmp_path}/none.sqlite"]) == 2
    assert main(["inspect", "t", "--database-url", "postgresql://u:pw@127.0.0.1:1/db"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no SQLite database" in err[0]
    assert "--database-url" in err[0]  # the default database is not the demo's: say so
    assert "cannot connect" in err[1] and ":pw@" not in err[1]


@pytest.mark.slow
def test_inspect_the_sqlite_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.sqlite"
    report = run_demo(turns=30, db=db, window=8_000, thread_id="d")
    assert report.compression_calls
    found = inspect_session(f"sqlite:///{db}", "d")
    assert found.events_source == "event table"
    assert len(found.utilization) == len(report.utilization)
    assert found.utilization == pytest.approx(report.utilization, abs=1e-4)
    assert len(found.compressions) == len(report.compression_calls)
    assert found.archive_rows > 0
    assert main(["inspect", "d", "--database-url", f"sqlite:///{db}"]) == 0
    assert "compressions: " in capsys.readouterr().out


def test_migrate_cli(postgres_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--status", "--database-url", postgres_db]) == 1
    assert "pending" in capsys.readouterr().out
    assert main(["migrate", "--database-url", postgres_db]) == 0
    assert "0002_events" in capsys.readouterr().out
    assert main(["migrate", "--status", "--json", "--database-url", postgres_db]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["up_to_date"] and status["applied_now"] == []
    assert main(["migrate", "--database-url", "memory://"]) == 2
