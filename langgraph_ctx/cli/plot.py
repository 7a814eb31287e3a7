"""PNG plots of utilization per LLM call. Needs the ``plot`` extra (matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from langgraph_ctx.budget import Budget


def plot_utilization(
    path: Path,
    series: dict[str, Sequence[float]],
    *,
    budget: Budget | None = None,
    marks: Sequence[int] = (),
    title: str = "Context utilization per LLM call",
) -> Path:
    """Write a line chart of utilization per call, with the zone lines.

    ``series`` maps a label to one utilization value per call; the red line is
    ``budget.red_line`` (the red zone capped at the prompt limit) over the
    window, for ``budget`` or ``Budget()``'s shares; ``marks`` are
    call indexes to flag (compressions). Raises ``ImportError`` naming the
    extra when matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("plots need matplotlib (the plot extra): pip install matplotlib") from exc
    budget = budget or Budget()
    zones, red = budget.zones, budget.red_line / budget.window
    fig, ax = plt.subplots(figsize=(10, 4), dpi=100)
    for label, values in series.items():
        ax.plot(range(1, len(values) + 1), values, label=label, linewidth=1.2)
    ax.axhline(
        zones.yellow,
        color="#d4a017",
        linestyle="--",
        linewidth=1,
        label=f"yellow {zones.yellow:.2f}",
    )
    ax.axhline(red, color="#c0392b", linestyle="--", linewidth=1, label=f"red line {red:.3f}")
    for i, x in enumerate(marks):
        ax.axvline(
            x + 1, color="#7f8c8d", alpha=0.3, linewidth=1, label="compression" if i == 0 else None
        )
    ax.set_xlabel("LLM call")
    ax.set_ylabel("utilization (prompt tokens / window)")
    ax.set_ylim(0, max(1.0, *(max(v, default=0) for v in series.values())) * 1.05)
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
