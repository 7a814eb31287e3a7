"""The public API and the command: markdown tables, plots, errors, ``__all__``."""

from __future__ import annotations

from pathlib import Path

import harness as bench
import pytest
from harness import Workload, run
from run_harness import main

from langgraph_ctx.errors import ConfigurationError

from .conftest import three_calls


def tiny() -> Workload:
    return Workload(name="tiny", title="tiny", description="three calls",
                    sessions=(three_calls(),), window=80)  # fmt: skip


def test_all_matches_the_public_names() -> None:
    public = {n for n in vars(bench) if not n.startswith("_")}
    modules = {"api", "conversations", "delegation", "metrics", "peers", "plots",
               "paraphrases", "provider_cache", "realdata", "recorder", "report", "runner",
               "savers", "session",
               "strategies", "summaries", "synthetic", "workloads"}  # fmt: skip
    assert public - modules == set(bench.__all__)


def test_results_render_side_by_side_tables(tmp_path: Path) -> None:
    results = run([tiny()], ["none", "trim", "ours"], seed=3)
    text = results.markdown()
    assert "- Seed: 3" in text and "- Machine:" in text
    assert "| no management | 3 | 0.963 | 0.542 | 1/1 (after 2 calls) |" in text
    assert "| trim_messages (last) | 3 | 0.750 | 0.471 | 0/1 | 1 (1.28:1) | 0/1 (0%) |" in text
    assert "Longevity" not in text  # no long-horizon workload in this run
    paths = results.plots(tmp_path)
    assert [p.name for p in paths] == ["harness-tiny-utilization.png", "harness-tiny-context.png"]
    assert all(p.stat().st_size > 1_000 for p in paths)


def test_a_turn_cap_adds_a_like_for_like_row_for_ours() -> None:
    capped = Workload(name="capped", title="capped", description="three calls",
                      sessions=(three_calls(),), window=80, peer_turns=2)  # fmt: skip
    metrics = run([capped], ["none", "ours", "trim"]).workloads[0].metrics
    assert list(metrics) == ["none", "ours", "ours, first 2 turns", "trim"]
    assert (metrics["ours"].calls, metrics["ours, first 2 turns"].calls) == (3, 2)
    assert metrics["trim"].calls == 2 and metrics["trim"].probes == 0  # its probe: turn 3


def test_ratios_need_the_baseline_in_the_run() -> None:
    m = run([tiny()], ["trim"]).workloads[0].metrics["trim"]
    assert m.step_vs_none is None and m.tokens_vs_none is None


def test_unknown_names_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="unknown strategy 'best'"):
        run([tiny()], ["best"])
    with pytest.raises(ConfigurationError, match="unknown workload 'huge'"):
        run(["huge"], ["none"])


def test_the_same_seed_gives_the_same_sessions() -> None:
    a = bench.WORKLOADS["qa"](5, True, None)
    b = bench.WORKLOADS["qa"](5, True, None)
    c = bench.WORKLOADS["qa"](6, True, None)
    assert a.sessions == b.sessions and a.sessions != c.sessions
    for s in a.sessions:
        assert 10 <= sum(len(x.inputs) + 1 for x in s.steps) <= 20


def test_the_command_writes_the_report_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["--workloads", "qa", "--strategies", "none", "ours", "--quick", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "### simple Q&A (10-20 messages)" in (out / "harness.md").read_text()
    assert (out / "harness-qa-utilization.png").is_file()


def test_the_command_reports_bad_names_as_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--strategies", "best", "--quiet"]) == 2
    assert "unknown strategy 'best'" in capsys.readouterr().err
