"""PNG plots of a workload's runs. Needs the ``plot`` extra (matplotlib).

Per workload: utilization per model call, one line per strategy (with the zone
lines), and prompt tokens per turn (the last call of each turn, with the window
and the prompt limit). A workload of many sessions is shown by its longest one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from langgraph_ctx.budget import Budget
from langgraph_ctx.cli.plot import plot_utilization

from .runner import SessionRun
from .strategies import STRATEGIES

if TYPE_CHECKING:
    from .report import WorkloadResult


def _session_index(result: WorkloadResult) -> int:
    """The longest session (in steps): the same one for every strategy."""
    sessions = result.workload.sessions
    return max(range(len(sessions)), key=lambda k: len(sessions[k].steps))


def _per_turn(run: SessionRun) -> tuple[list[int], list[int]]:
    last: dict[int, int] = {}
    for turn, tokens in zip(run.turns, run.prompt_tokens, strict=True):
        last[turn] = tokens
    return [t + 1 for t in last], list(last.values())


def write_plots(result: WorkloadResult, directory: Path) -> list[Path]:
    w, k = result.workload, _session_index(result)
    # One line per strategy: extra runs (ours over the peers' span) would hide the others.
    runs = {STRATEGIES[n].label: p.runs[k] for n, p in result.pairs.items() if n in STRATEGIES}
    if not runs:
        return []
    name = w.sessions[k].name
    where = "" if len(w.sessions) == 1 else f", session {name!r}"
    utilization = plot_utilization(
        directory / f"harness-{w.name}-utilization.png",
        {label: [t / w.window for t in r.prompt_tokens] for label, r in runs.items()},
        budget=Budget.for_window(w.window),
        title=f"{w.title}: utilization per model call{where}",
    )
    return [utilization, _context_plot(result, runs, directory, where)]


def _context_plot(
    result: WorkloadResult, runs: dict[str, SessionRun], directory: Path, where: str
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = result.workload
    fig, ax = plt.subplots(figsize=(10, 4), dpi=100)
    for label, run in runs.items():
        xs, ys = _per_turn(run)
        ax.plot(xs, ys, label=label, linewidth=1.1)
    ax.axhline(w.window, color="black", linewidth=1, label=f"window {w.window:,}")
    limit = Budget.for_window(w.window).prompt_limit
    ax.axhline(limit, color="#d4a017", linestyle="--", linewidth=1, label=f"prompt limit {limit:,}")
    ax.set_xlabel("turn")
    ax.set_ylabel("prompt tokens (last call of the turn)")
    ax.set_title(f"{w.title}: context tokens per turn{where}")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path = directory / f"harness-{w.name}-context.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
