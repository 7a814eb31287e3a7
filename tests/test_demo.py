"""The demo: a real graph, a SQLite checkpoint, resume by thread id, the CLI."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from langgraph_ctx.budget import Budget
from langgraph_ctx.cli import main
from langgraph_ctx.cli._render import sparkline
from langgraph_ctx.cli.demo import ProgressBar, format_report, run_demo


@pytest.mark.slow
def test_demo_stays_under_the_red_line_and_compresses(tmp_path: Path) -> None:
    shown: list[tuple[float, str]] = []
    report = run_demo(
        turns=60,
        db=tmp_path / "demo.sqlite",
        window=16_000,
        progress=lambda done, total, utilization, zone: shown.append((utilization, zone)),
    )
    assert report.turns_done == 60
    assert report.events.get("compression", 0) >= 2
    budget = Budget.for_window(16_000)
    line = budget.red_line / 16_000  # 0.85, capped at the prompt limit
    assert max(report.utilization) <= line  # what was sent never crossed red
    assert max(report.measured) > max(report.utilization)  # compression did the lowering
    assert "compressions:" in format_report(report)
    # Progress shows the zone of the utilization it prints: after compressing, not before.
    assert len(shown) == 60 and "red" in report.zones
    assert all(zone == budget.zone(round(u * 16_000)) for u, zone in shown)
    assert "red" not in {zone for _, zone in shown}


@pytest.mark.slow
def test_demo_resumes_the_same_thread(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    first = run_demo(turns=30, db=db, thread_id="t", stop_after=12)
    assert (first.resumed_at, first.turns_done) == (0, 12)
    second = run_demo(turns=30, db=db, thread_id="t")
    assert (second.resumed_at, second.turns_done) == (12, 30)
    other = run_demo(turns=30, db=db, thread_id="fresh", stop_after=1)
    assert other.resumed_at == 0


@pytest.mark.slow
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


def test_cli_rejects_a_bad_window_or_db_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.sqlite"
    assert main(["demo", "--turns", "2", "--window", "0", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "Budget.window" in err and "got 0" in err and "demo: 2 turns" not in err
    assert not db.exists()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    assert main(["demo", "--turns", "2", "--db", str(notes), "--quiet"]) == 2  # was a traceback
    assert "is not a SQLite database" in capsys.readouterr().err
    assert notes.read_text() == "my notes"


@pytest.mark.slow
def test_cli_demo_run_again_on_a_finished_session_says_how_to_go_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["demo", "--turns", "3", "--db", str(tmp_path / "d.sqlite"), "--quiet"]
    assert main([*args, "--plot", str(tmp_path / "u.png")]) == 0
    capsys.readouterr()
    assert main([*args, "--plot", str(tmp_path / "u.png")]) == 0
    out = capsys.readouterr().out
    assert "0 LLM calls" in out and "nothing to run" in out and "--turns 53" in out


def test_cli_demo_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 150)" in out and "(default: 32000)" in out and "(default: demo)" in out


def test_sparkline_scales_to_full_blocks() -> None:
    assert sparkline([0.0, 1.0]) == " █"
    assert len(sparkline([0.5] * 1000, width=50)) == 50


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_is_a_bar_redrawn_in_place() -> None:
    stream = Terminal()
    bar = ProgressBar(stream, width=10)
    for done in range(1, 26):
        bar(done, 25, 0.5, "green")
    out = stream.getvalue()
    assert out.count("\r[") == 25 and out.endswith("\n") and out.count("\n") == 1
    assert "[##########] 25/25 turns  utilization 0.50 (green)" in out


def test_progress_in_a_log_is_a_plain_line_every_ten_turns_and_at_the_end() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream)
    for done in range(13, 26):  # a resumed session: turns 13..25
        bar(done, 25, 0.61, "green")
    assert "\r" not in stream.getvalue()
    assert stream.getvalue().splitlines() == [
        "turn 20/25 turns  utilization 0.61 (green)",
        "turn 25/25 turns  utilization 0.61 (green)",
    ]


@pytest.mark.slow
def test_cli_demo_progress_into_a_pipe_has_no_carriage_returns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["demo", "--turns", "12", "--db", str(tmp_path / "d.sqlite"), "--window", "8000"]
    assert main([*args, "--plot", str(tmp_path / "u.png")]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert [ln.split(" turns")[0] for ln in err.splitlines() if ln.startswith("turn ")] == [
        "turn 10/12",
        "turn 12/12",
    ]
