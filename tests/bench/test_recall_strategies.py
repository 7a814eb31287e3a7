"""Recall on never keeps fewer answers than recall off (issue 31), under BACM at 4K:
``create_context_agent`` defaults (``think`` on), a generated multi-session
conversation, an answer kept when it is in the question call's prompt.

Recall's blocks kept from earlier calls are counted in the prompt's total (reserved,
as system content). BACM read that total as its own history: each fold's room went to
recall, and the next call folded again, until the facts asked about were folded away.
"""

from __future__ import annotations

from pathlib import Path

from answers_kept import conversations, run_cell


def test_bacm_with_recall_keeps_at_least_what_it_keeps_without(tmp_path: Path) -> None:
    load = conversations(True, seed=11, sessions=4)
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    off = run_cell(load, "bacm", False, 4_000, tmp_path / "off", cache=False)
    on = run_cell(load, "bacm", True, 4_000, tmp_path / "on", cache=False)
    assert off.error is None and on.error is None
    assert off.probes == on.probes >= 5  # enough questions for the comparison to mean something
    assert off.kept < off.probes  # the window is small enough that BACM folds facts away
    assert on.kept >= off.kept, (on.kept, off.kept, on.probes)


def test_adacom_with_recall_keeps_at_least_what_it_keeps_without(tmp_path: Path) -> None:
    # AdaCoM read recall's kept blocks as history it had to bring back under its
    # utilization goal, as BACM did, and took the think node's [plan] trace for its
    # working note (kept from distillation: a run of traces grew until the ceiling
    # dropped it). Before: seed 1000, 4 sessions at 4K kept 2 of 9 off, 1 of 9 on.
    load = conversations(True, seed=1000, sessions=4)
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    off = run_cell(load, "adacom", False, 4_000, tmp_path / "off", cache=False)
    on = run_cell(load, "adacom", True, 4_000, tmp_path / "on", cache=False)
    assert off.error is None and on.error is None
    assert off.probes == on.probes >= 5  # enough questions for the comparison to mean something
    assert off.kept < off.probes  # the window is small enough that AdaCoM distills facts away
    assert on.kept >= off.kept, (on.kept, off.kept, on.probes)


def test_bacm_with_recall_keeps_tau_bench_values_at_4k(tmp_path: Path) -> None:
    """Counted by BACM's guard, recall's kept blocks (which give way at placement) set
    off a tiered compression of a history that fit, on every think call, and the tool
    results holding the gold values went with it: tau-bench 4K, 16 kept off, 9 on."""
    import pytest
    from answers_kept import tau
    from harness.realdata import data_dir

    try:
        data = data_dir()
    except Exception:  # a fresh clone without the shared data: nothing to replay
        pytest.skip("tau-bench data (../shared/data or $LANGGRAPH_CTX_DATA) not found")
    load = tau(True, data, 2)
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    off = run_cell(load, "bacm", False, 4_000, tmp_path / "off", cache=False)
    on = run_cell(load, "bacm", True, 4_000, tmp_path / "on", cache=False)
    assert off.error is None and on.error is None
    assert off.probes == on.probes >= 10
    assert on.kept >= off.kept, (on.kept, off.kept, on.probes)
