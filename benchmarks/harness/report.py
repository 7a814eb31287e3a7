"""The results of a harness run, as markdown tables (and, in ``plots``, PNGs)."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from langgraph_ctx.budget import Budget
from langgraph_ctx.tokens import TokenCounter

from .metrics import Longevity, Metrics, longevity
from .runner import PairRun
from .strategies import STRATEGIES
from .workloads import Workload

PACKAGES = ("langgraph-ctx", "langgraph", "langchain", "langchain-core", "langmem", "tiktoken")
DEFINITIONS = """\
- **util peak / mean**: prompt tokens the model received (exact cl100k_base, 3 per message,
  pinned policy and summaries included) / the window, over every call of every session.
- **overflowed (longevity)**: sessions with a prompt over the prompt limit (the window minus
  the output reserve and safety margin of `Budget.for_window`: no room left for the answer),
  and the fewest calls any of them made before it.
- **reductions (ratio)**: calls whose prompt was smaller than the previous prompt plus what
  arrived since (summarized, trimmed or cleared), and the mean of expected / actual size.
- **probes kept**: planted facts, BFCL answers or tau-bench gold values found in the prompt
  of the call that needs them (the last prompt for BFCL and tau-bench). A call never made
  (a run cut short) keeps nothing; probes past a strategy's turn cap are left out.
- **entities**: share of the distinct entities (ids, amounts, dates, names) of the whole
  history that the last prompt still holds (every k-th message over 2M characters).
- **summaries (ratio, entities)**: summaries written, tokens summarized / summary tokens, and
  the share of the summarized messages' entities each summary holds (mean).
- **tokens sent**: all prompts, summed; *vs none* over the calls both made. **summarizer in**:
  tokens sent to the summarizer (each summary is a model call with a real summarizer).
- **own ms/call**: the strategy's own time per call (ours: the pipeline around the node;
  a peer: its hook or function), the harness's bookkeeping taken out. **step ms/call**: the
  whole graph invocation (checkpointing included); *vs none* over the calls both made.
- **ckpt KB/call**: checkpoint payload serialized per call (SQLite tables, or the tallying
  in-memory saver on the long run)."""


def environment(title: str, seed: int, quick: bool) -> list[str]:
    """A section title, the machine, the versions and the seed (as benchmarks/_common.py)."""

    def ver(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    machine = f"{platform.platform()}, {platform.machine()}, {os.cpu_count()} CPU(s)"
    return [
        f"## {title}",
        "",
        f"- Machine: {machine}",
        f"- Python: {platform.python_implementation()} {platform.python_version()}",
        f"- Packages: {', '.join(f'{p} {ver(p)}' for p in PACKAGES)}",
        f"- Seed: {seed}{' (--quick)' if quick else ''}",
        "",
    ]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    spec = ["---"] + ["---:"] * (len(head) - 1)
    return ["| " + " | ".join(cells) + " |" for cells in (head, spec, *rows)]


def _x(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}x"


@dataclass
class WorkloadResult:
    workload: Workload
    pairs: dict[str, PairRun] = field(default_factory=dict)
    metrics: dict[str, Metrics] = field(default_factory=dict)


def _context_row(label: str, m: Metrics) -> list[str]:
    life = f"{m.overflowed}/{m.sessions}"
    life += f" (after {m.longevity:,} calls)" if m.longevity is not None else ""
    reduced = str(m.reductions) + (f" ({m.reduction_ratio:.2f}:1)" if m.reduction_ratio else "")
    probes = f"{m.probes_kept}/{m.probes} ({m.survival:.0%})" if m.survival is not None else "-"
    summaries = "-"
    if m.summaries:
        summaries = f"{m.summaries} ({m.summary_ratio or 0:.1f}:1, {m.summary_retention or 0:.0%})"
    util = [f"{m.peak_utilization:.3f}", f"{m.mean_utilization:.3f}"]
    return [
        label,
        f"{m.calls:,}",
        *util,
        life,
        reduced,
        probes,
        f"{m.entity_retention:.0%}",
        summaries,
    ]


def _cost_row(label: str, m: Metrics) -> list[str]:
    sent = f"{m.tokens_sent + m.extra_tokens:,}" + (" *" if m.extra_tokens else "")
    return [
        label,
        sent,
        _x(m.tokens_vs_none),
        f"{m.summary_tokens:,}",
        f"{m.managed_ms:.2f}",
        f"{m.step_ms:.1f}",
        _x(m.step_vs_none),
        f"{m.checkpoint_bytes_per_call / 1e3:,.1f}",
    ]


def tokens_per_turn(result: WorkloadResult, turns: int = 1_000) -> float:
    """Mean new conversation tokens per turn over the first ``turns`` turns."""
    session = result.workload.sessions[0]
    steps = [s for s in session.steps if s.turn < turns]
    counter = TokenCounter()
    total = sum(counter.count_messages([*s.inputs, s.reply]) for s in steps)
    return total / max(1, len({s.turn for s in steps}))


@dataclass
class Results:
    """What :func:`benchmarks.harness.run` measured. ``markdown()`` and ``plots(dir)``."""

    seed: int
    quick: bool
    workloads: list[WorkloadResult]
    seconds: float = 0.0

    def result(self, workload: str) -> WorkloadResult | None:
        return next((w for w in self.workloads if w.workload.name == workload), None)

    def longevity(self) -> Longevity | None:
        """The long-horizon claims, if the long workload ran with ours."""
        long = self.result("long")
        if long is None or "ours" not in long.pairs:
            return None
        none = long.pairs.get("none")
        ours = long.pairs["ours"].runs[0]
        return longevity(none.runs[0] if none else None, ours, long.workload.window)

    def markdown(self, header: Sequence[str] | None = None) -> str:
        """The results as a markdown section; ``header`` replaces the environment lines."""
        title = "Benchmark harness: strategies side by side"
        lines = list(header) if header is not None else environment(title, self.seed, self.quick)
        lines += [f"Total run time {self.seconds / 60:.1f} min. Definitions at the end.", ""]
        lines += self._longevity_lines()
        for result in self.workloads:
            lines += self._workload_lines(result)
        lines += ["### Plots", "", *self._plot_links(), ""]
        lines += ["### Definitions", "", DEFINITIONS, ""]
        return "\n".join(lines).rstrip() + "\n"

    def _plot_links(self) -> list[str]:
        """What ``plots(dir)`` writes, linked relative to a markdown file in ``dir``."""
        links = []
        for result in self.workloads:
            name = result.workload.name
            links.append(
                f"- {result.workload.title}: [utilization per call](harness-{name}-utilization.png"
                f"), [context tokens per turn](harness-{name}-context.png)"
            )
        return links

    def _longevity_lines(self) -> list[str]:
        claim, long = self.longevity(), self.result("long")
        if claim is None or long is None:
            return []
        budget = Budget.for_window(long.workload.window)
        per_turn = tokens_per_turn(long)
        lines = ["### Longevity: long horizon, 128K window", ""]
        if claim.none_overflow_turn is not None and claim.none_overflow_call is not None:
            lines.append(
                f"- **No management** first sends a prompt over the prompt limit "
                f"({budget.prompt_limit:,} tokens) at **turn {claim.none_overflow_turn}** "
                f"(model call {claim.none_overflow_call + 1}); "
                f"over the whole window at turn {claim.none_window_turn or 'n/a'}. Measured "
                f"{per_turn:,.0f} new tokens a turn (the paper: about 70 turns at 1,500 tokens "
                "a turn)."
            )
        ok = "yes" if claim.ours_peak <= 0.85 else "**no**"
        ratio = claim.late_ms / claim.early_ms if claim.early_ms else float("nan")
        ok_time = "yes" if ratio <= 1.5 else "**no**"
        lines += [
            f"- **Ours** ran {claim.ours_turns:,} turns "
            f"({long.metrics['ours'].calls:,} model calls): peak utilization "
            f"**{claim.ours_peak:.3f}** (<= 0.85: {ok}).",
            f"- Pipeline time per call (median): {claim.early_ms:.2f} ms over turns 51-150, "
            f"{claim.late_ms:.2f} ms over the last 100 turns: **{ratio:.2f}x** (<= 1.5x: "
            f"{ok_time}). The whole graph step: {claim.early_step_ms:.1f} ms and "
            f"{claim.late_step_ms:.1f} ms.",
            "",
        ]
        return lines

    def _workload_lines(self, result: WorkloadResult) -> list[str]:
        w = result.workload
        budget = Budget.for_window(w.window)
        lines = [
            f"### {w.title}",
            "",
            f"{w.description}. Window {w.window:,} (red line "
            f"{budget.red_line:,}, prompt limit {budget.prompt_limit:,}).",
            "",
        ]
        head = [
            "strategy",
            "calls",
            "util peak",
            "util mean",
            "overflowed (longevity)",
            "reductions (ratio)",
            "probes kept",
            "entities",
            "summaries (ratio, entities)",
        ]
        labels = {
            name: STRATEGIES[name].label if name in STRATEGIES else name for name in result.metrics
        }
        lines += _table(head, [_context_row(labels[n], m) for n, m in result.metrics.items()])
        head = [
            "strategy",
            "tokens sent",
            "vs none",
            "summarizer in",
            "own ms/call",
            "step ms/call",
            "step vs none",
            "ckpt KB/call",
        ]
        lines += ["", *_table(head, [_cost_row(labels[n], m) for n, m in result.metrics.items()])]
        if any(m.extra_tokens for m in result.metrics.values()):
            lines += ["", "\\* includes the tokens the sub-agents consumed (prompts and replies)."]
        cut = [labels[n] for n, m in result.metrics.items() if m.cut]
        if cut:
            lines += ["", f"Cut short (a prompt passed {w.cut}x the window): {', '.join(cut)}."]
        return [*lines, ""]

    def plots(self, directory: Path) -> list[Path]:
        """Write the PNGs (utilization per call, context tokens per turn) per workload."""
        from .plots import write_plots

        return [p for result in self.workloads for p in write_plots(result, directory)]
