"""The demo: a real graph, a SQLite checkpoint, resume by thread id, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_ctx.budget import Budget
from langgraph_ctx.cli import main
from langgraph_ctx.cli.demo import format_report, run_demo, sparkline


def test_demo_stays_under_the_red_line_and_compresses(tmp_path: Path) -> None:
    report = run_demo(turns=60, db=tmp_path / "demo.sqlite", window=16_000)
    assert report.turns_done == 60
    assert report.events.get("compression", 0) >= 2
    line = Budget.for_window(16_000).red_line / 16_000  # 0.85, capped at the prompt limit
    assert max(report.utilization) <= line  # what was sent never crossed red
    assert max(report.measured) > max(report.utilization)  # compression did the lowering
    assert "compressions:" in format_report(report)


def test_demo_resumes_the_same_thread(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    first = run_demo(turns=30, db=db, thread_id="t", stop_after=12)
    assert (first.resumed_at, first.turns_done) == (0, 12)
    second = run_demo(turns=30, db=db, thread_id="t")
    assert (second.resumed_at, second.turns_done) == (12, 30)
    other = run_demo(turns=30, db=db, thread_id="fresh", stop_after=1)
    assert other.resumed_at == 0


def test_cli_demo_writes_report_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plot = tmp_path / "u.png"
    code = main(
        [
            "demo",
            "--turns",
            "25",
            "--db",
            str(tmp_path / "d.sqlite"),
            "--plot",
            str(plot),
            "--quiet",
            "--window",
            "8000",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "25/25 turns" in out and "utilization per call" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_rejects_bad_turns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--turns", "0"]) == 2
    assert "--turns" in capsys.readouterr().err


def test_sparkline_scales_to_full_blocks() -> None:
    assert sparkline([0.0, 1.0]) == " █"
    assert len(sparkline([0.5] * 1000, width=50)) == 50
