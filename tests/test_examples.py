"""Every example runs, so none can rot."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path, postgres_db: str) -> None:
    # Examples that need PostgreSQL read it from the environment, as a user's would;
    # the package they import is this checkout's, whatever is installed.
    path_var = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "LANGGRAPH_CTX_DATABASE_URL": postgres_db, "PYTHONPATH": path_var}
    result = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_stategraph_example_compresses_and_stays_in_budget() -> None:
    module = runpy.run_path(str(EXAMPLES[0].parent / "add_to_stategraph.py"))
    outcome = module["main"]()
    assert outcome["compressions"] >= 1
    assert outcome["peak"] < 1.0


def test_subagents_example_runs_children_in_clean_contexts() -> None:
    module = runpy.run_path(str(EXAMPLES[0].parent / "spawn_subagents.py"))
    results = module["main"]()
    assert sorted(r.agent for r in results) == ["customs", "rates"]
    assert all(r.status == "ok" for r in results)
    for spec in module["subagents"].specs:
        assert all("supplier S-" not in call.text for call in spec.model.calls)


def test_postgres_example_resumes_the_thread(postgres_db: str) -> None:
    module = runpy.run_path(str(EXAMPLES[0].parent / "resume_from_postgres.py"))
    outcome = module["main"](postgres_db)
    first, second = outcome["first"], outcome["second"]
    assert second["found"] == len(first["messages"])  # the new process found the thread
    assert outcome["summaries"]  # and compression carried on across the restart
    ids = {m.id for m in second["messages"]}
    assert any(m.id in ids for m in first["messages"] if m.type == "human")


def test_retry_example_leaves_no_trace_of_failed_attempts() -> None:
    module = runpy.run_path(str(EXAMPLES[0].parent / "retry_middleware.py"))
    outcome = module["main"]()
    # Turn 1: two failures, then the answer; turn 2: the provider stays down.
    assert outcome["answers"] == [
        "Shipment SHP-0042 cleared customs at 09:40; the carrier is Maersk.",
        module["FALLBACK"],
    ]
    # One measurement for the attempt that reached the model and answered; none
    # for the failed ones (rolled back); the retries themselves are kept.
    assert outcome["kinds"] == ["retry", "retry", "utilization", "retry", "retry", "retry"]


def test_adacom_example_extracts_before_the_agent_reads_and_keeps_originals(
    tmp_path: Path,
) -> None:
    module = runpy.run_path(str(EXAMPLES[0].parent / "adacom_strategy.py"))
    outcome = module["main"](str(tmp_path))
    tools = [m for m in outcome["state"]["messages"] if m.type == "tool"]
    assert len(tools) == 3 and all(len(m.text) < 200 for m in tools)
    archived = {m.id: m for m in outcome["originals"]}
    assert all(
        len(archived[m.additional_kwargs["lgctx"]["edited"]["from"][0]].text) > 5_000 for m in tools
    )
    assert "PX-300 $150" in outcome["state"]["messages"][-1].text  # the note carried page 3's lead
