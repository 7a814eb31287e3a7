"""``langgraph-ctx export``: the decisions of a real session (a compiled graph, SQLite
checkpoints, archive and event log), as JSON lines in the documented schema, with
their outcomes: what a removed message's later glimpse and recall show."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli import main
from langgraph_ctx.ledger.decisions import SCHEMA_VERSION, decisions
from langgraph_ctx.testing import ScriptedChatModel

FIELDS = {
    "schema_version",
    "thread_id",
    "namespace",
    "seq",
    "ts",
    "node",
    "kind",
    "source",
    "saw",
    "did",
    "outcome",
    "event_json",
}


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the records."""
    return f"Record {topic}: " + "pallet customs tariff " * 200 + f" code K-{topic}-77"


def glimpse_first_archived(messages: Sequence[BaseMessage]) -> AIMessage:
    """The agent asks back the first compacted result's original."""
    found = re.search(r"original archived as ([\w-]+)\)", "\n".join(m.text for m in messages))
    assert found, "nothing was compacted"
    call = {"name": "glimpse", "args": {"reference": found.group(1)}, "id": "g1"}
    return AIMessage("", tool_calls=[call])


def session(db: Path, thread: str = "t") -> dict[str, Any]:
    calls = [{"name": "lookup", "args": {"topic": f"t{i}"}, "id": f"c{i}"} for i in range(8)]
    script: list[Any] = [*(AIMessage("", tool_calls=[c]) for c in calls)]
    script += [glimpse_first_archived, "Done."]
    model = ScriptedChatModel(responses=script)
    agent = create_context_agent(
        model,
        [lookup],
        think=False,
        always_include=["lookup"],
        budget=Budget.for_window(4_000),
        recall=True,
        checkpointer=f"sqlite:///{db}",
    )
    cfg = {"configurable": {"thread_id": thread}}
    out = agent.invoke({"messages": [HumanMessage("Find the records.")]}, cfg)
    return out


def ask(db: Path, question: str, thread: str = "t") -> dict[str, Any]:
    """A later turn in the same session (a new process's agent on the same database)."""
    agent = create_context_agent(
        ScriptedChatModel(default="K-t1-77"),
        [lookup],
        think=False,
        always_include=["lookup"],
        budget=Budget.for_window(4_000),
        recall=True,
        checkpointer=f"sqlite:///{db}",
    )
    return agent.invoke(
        {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": thread}}
    )


def export(db: Path, tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    out = tmp_path / "decisions.jsonl"
    assert main(["export", "--db", f"sqlite:///{db}", "--out", str(out), *args]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_export_round_trips_every_decision_with_what_followed(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    session(db)
    state = ask(db, "What is the code in Record t1?")
    records = export(db, tmp_path, "--thread", "t")
    ledger = state["context_ledger"]
    decided = [e for e in ledger if e["kind"] in ("context_edit", "tool_results_compacted")]
    assert decided and [r["seq"] for r in records] == sorted(r["seq"] for r in records)
    assert {(r["seq"], r["kind"]) for r in records} >= {(e["seq"], e["kind"]) for e in decided}
    for r in records:
        assert set(r) == FIELDS and r["schema_version"] == SCHEMA_VERSION
        assert r["thread_id"] == "t" and isinstance(r["saw"]["tokens"], int)
        event = next(e for e in ledger if e["seq"] == r["seq"])
        assert json.loads(r["event_json"]) == event["data"]
    edit = next(r for r in records if r["kind"] == "context_edit")
    data = json.loads(edit["event_json"])
    assert edit["did"]["removed_ids"] == data["removed"]
    assert edit["outcome"]["tokens_saved"] == data["tokens_before"] - data["tokens_after"] > 0
    # The agent glimpsed the first compacted result's original: that decision's outcome
    # says so, and only decisions that removed it do.
    glimpse = next(
        c for m in state["messages"] for c in getattr(m, "tool_calls", []) if c["name"] == "glimpse"
    )
    asked = glimpse["args"]["reference"]
    for r in records:
        assert r["outcome"]["glimpsed_ids"] == ([asked] if asked in r["did"]["removed_ids"] else [])
    assert any(r["outcome"]["glimpsed_ids"] for r in records)
    # Recall put archived originals back for the later question: the decisions that
    # removed them say which, and none claims one recalled before it was removed.
    recalls = [e for e in state["context_ledger"] if e["kind"] == "recall" and e["data"].get("ids")]
    assert recalls
    for r in records:
        back = {i for e in recalls if e["seq"] > r["seq"] for i in e["data"]["ids"]}
        assert r["outcome"]["recalled_ids"] == sorted(back & set(r["did"]["removed_ids"]))
    assert any(r["outcome"]["recalled_ids"] for r in records)
    assert all(r["outcome"]["later_calls"] >= 1 for r in records)


def test_export_a_whole_database_and_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.sqlite"
    session(db, "a")
    session(db, "b")
    both = export(db, tmp_path)
    assert {r["thread_id"] for r in both} == {"a", "b"}
    assert export(db, tmp_path, "--since", "2999-01-01") == []
    assert len(export(db, tmp_path, "--since", "0")) == len(both)
    assert main(["export", "--db", f"sqlite:///{db}", "--thread", "a"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(json.loads(x)["thread_id"] == "a" for x in lines)


def test_export_refuses_a_bad_since_and_a_missing_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--db", f"sqlite:///{tmp_path}/none.sqlite"]) == 2
    assert "no SQLite database" in capsys.readouterr().err
    db = tmp_path / "s.sqlite"
    session(db)
    assert main(["export", "--db", f"sqlite:///{db}", "--since", "yesterday"]) == 2
    assert "--since" in capsys.readouterr().err


def test_the_export_loads_with_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = tmp_path / "s.sqlite"
    session(db)
    records = export(db, tmp_path)
    loaded = datasets.load_dataset(
        "json",
        data_files=str(tmp_path / "decisions.jsonl"),
        split="train",
        cache_dir=str(tmp_path / "cache"),
    )
    assert loaded.num_rows == len(records)
    assert loaded[0]["schema_version"] == SCHEMA_VERSION
    assert [row["seq"] for row in loaded] == [r["seq"] for r in records]
    assert [row["outcome"]["glimpsed_ids"] for row in loaded] == [
        r["outcome"]["glimpsed_ids"] for r in records
    ]


def test_export_from_postgres_matches_sqlite(
    postgres_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same session in PostgreSQL (events' ts a timestamptz, archive content jsonb).
    from langgraph_ctx.storage.migrations import migrate

    migrate(postgres_db)
    calls = [{"name": "lookup", "args": {"topic": f"t{i}"}, "id": f"c{i}"} for i in range(8)]
    script: list[Any] = [*(AIMessage("", tool_calls=[c]) for c in calls)]
    model = ScriptedChatModel(responses=[*script, glimpse_first_archived, "Done."])
    agent = create_context_agent(
        model,
        [lookup],
        think=False,
        always_include=["lookup"],
        budget=Budget.for_window(4_000),
        recall=True,
        checkpointer=postgres_db,
    )
    cfg = {"configurable": {"thread_id": "pg"}}
    state = agent.invoke({"messages": [HumanMessage("Find the records.")]}, cfg)
    assert main(["export", "--db", postgres_db, "--thread", "pg"]) == 0
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    decided = [e for e in state["context_ledger"] if e["kind"] in ("context_edit",)]
    assert decided and {r["seq"] for r in records} >= {e["seq"] for e in decided}
    assert all(isinstance(r["ts"], float) for r in records)
    assert any(r["outcome"]["glimpsed_ids"] for r in records)


def test_chat_format_pairs_the_originals_with_the_text_written_in_their_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.sqlite"
    state = session(db)
    out = tmp_path / "chat.jsonl"
    assert main(["export", "--db", f"sqlite:///{db}", "--format", "chat", "--out", str(out)]) == 0
    chats = [json.loads(line) for line in out.read_text().splitlines()]
    edits = [e for e in state["context_ledger"] if e["kind"] == "context_edit"]
    assert [c["seq"] for c in chats] == [e["seq"] for e in edits]
    live = {str(m.id): m.text for m in state["messages"]}
    for chat, edit in zip(chats, edits, strict=True):
        assert chat["schema_version"] == SCHEMA_VERSION and chat["format"] == "chat"
        system, user, assistant = chat["messages"]
        assert [system["role"], user["role"], assistant["role"]] == ["system", "user", "assistant"]
        assert user["content"].startswith("Task:\nFind the records.")
        # The originals, from the archive (a compacted result keeps its id: the live
        # message under it is the digest, the answer).
        assert user["content"].count("pallet customs tariff") >= 200
        written = [op["new_id"] for op in edit["data"]["operations"] if op["new_id"]]
        assert assistant["content"] == "\n\n".join(live[i] for i in written)
        assert "[Compacted tool result]" in assistant["content"]
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    loaded = datasets.load_dataset(
        "json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded[0]["messages"] == chats[0]["messages"]


def test_each_kind_is_read_through_its_type_so_a_reflection_is_decided_by_arc() -> None:
    """An ARC reflection's ``by`` is the ids it wrote, not who decided: read as its
    ledger type, its source is the strategy (it was the ids' list as a string)."""
    events: list[dict[str, Any]] = [
        {"seq": 1, "kind": "utilization", "data": {"total": 900, "window": 4096}},
        {
            "seq": 2,
            "kind": "arc_reflection",
            "data": {
                "arc": "reflection",
                "turn": 3,
                "triggers": ["stall"],
                "rationale": "r",
                "replaced": ["mem1", "list1"],
                "by": ["mem2", None],
            },
        },
        {"seq": 3, "kind": "fold", "data": {"by": "policy", "kind": "range", "commits": ["b1"]}},
        {"seq": 4, "kind": "recall", "data": {"ids": ["mem1"]}},
    ]
    reflection, fold = decisions(events, thread_id="t")
    assert reflection["source"] == "arc"
    assert reflection["did"]["removed_ids"] == ["mem1", "list1"]
    assert reflection["did"]["written_ids"] == ["mem2"]
    assert reflection["saw"]["tokens"] == 900
    assert reflection["outcome"]["recalled_ids"] == ["mem1"]
    assert fold["source"] == "policy"
    assert fold["did"]["action"] == "fold:range"
    assert fold["saw"]["ids"] == ["b1"]
