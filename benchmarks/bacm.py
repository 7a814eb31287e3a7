"""BACM's offline policy against ours and the peers as the budget shrinks: 8K, 4K, 2K.

Replays BFCL v4 memory and tau-bench airline turn by turn (the sessions, budgets and
offline extractive summarizer of ``benchmarks/retention.py``, whose runners it reuses)
through:

- BACM (:class:`~langgraph_ctx.strategies.BudgetAwareFolding`) with the deterministic
  :class:`~langgraph_ctx.strategies.OfflineFoldPolicy` (no model; the scripted replies
  never call ``fold``): asked from 0.9 of the red line, it folds the oldest steps no
  later step refers to down to 0.6 of it; tiered compression guards the line. Its
  digests are written by the same extractive summarizer as everyone's;
- ours (pre-flight + tiered compression), ``SummarizationMiddleware`` (keep b/2
  tokens), langmem ``summarize_messages`` and no management, given that summarizer too.

The paper's claim is about shrinking budgets, so the first table is the slope: the
change in what is present in the last prompt each time the budget halves. Then, per
budget: answers (BFCL) or gold argument values (tau-bench) present, tokens sent over
the replay, folds (BACM) or summaries per 100 model calls, guard runs per 100, peak
message tokens over the budget, and time per model call, wall and CPU (the whole
replay, scripted agent included: all strategies in one process, interleaved by budget).
Run from the repo root: ``python benchmarks/bacm.py [--quick]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from itertools import pairwise
from typing import Any

from _common import emit, header, table
from adacom import replay, replays
from harness.session import Session, holds, prompt_text
from retention import (
    Result,
    _head,
    _stateless,
    _summarizer,
    count,
    run_langmem,
    run_ours,
    run_summarization_mw,
)

from langgraph_ctx import BudgetAwareFolding, BudgetExceededError, TieredCompression
from langgraph_ctx.pipeline import CallContext, View
from langgraph_ctx.strategies.bacm.offline import OfflineFoldPolicy
from langgraph_ctx.strategies.bacm.policy import FoldAction, FoldRequest, fold_kind

BUDGETS = (8_000, 4_000, 2_000)
BACM = "BACM, offline policy"


class CountingPolicy(OfflineFoldPolicy):
    """The offline folding rule, counting the folds it decides."""

    folds = 0

    def decide(self, request: FoldRequest) -> FoldAction:
        action = super().decide(request)
        self.folds += fold_kind(action) != "null"
        return action


class CountingGuard(TieredCompression):
    """The guard, counting the calls on which it ran."""

    runs = 0

    def before(self, view: View, ctx: CallContext) -> Any:
        self.runs += 1
        return super().before(view, ctx)


def run_bacm(s: Session, budget: int) -> Result:
    """The same budget as ``run_ours``; BACM's folding in compression's place."""
    summarizer = _summarizer()
    policy = CountingPolicy(summarizer=summarizer)
    guard = CountingGuard(summarizer=summarizer, prepare_ahead=False)
    bacm = BudgetAwareFolding(policy=policy, guard=guard, timeout=None)
    result = replay(s, budget, bacm)
    result.summaries = ["fold"] * policy.folds + ["guard"] * guard.runs
    return result


STRATEGIES: dict[str, Callable[[Session, int], Result]] = {
    BACM: run_bacm,
    "ours (Preflight + TieredCompression)": run_ours,
    "SummarizationMiddleware, keep b/2 tokens": partial(run_summarization_mw, keep_tokens=True),
    "langmem summarize_messages": run_langmem,
    "no management (ceiling)": lambda s, b: _stateless(s, list),
}


def measure(sessions: Sequence[Session], label: str) -> dict[tuple[int, str], Counter[str]]:
    """Every strategy at every budget over ``sessions``: the counts the tables are made of."""
    out: dict[tuple[int, str], Counter[str]] = {}
    for budget in BUDGETS:
        for name, run in STRATEGIES.items():
            n = Counter[str]()
            for s in sessions:
                wall, cpu = time.perf_counter(), time.process_time()
                try:
                    r = run(s, budget)
                except BudgetExceededError:
                    # The hard ceiling refused a call it could not fit: the replay stops
                    # there, and its probes count as missed.
                    n["refused"] += 1
                    n["probes"] += len(s.probes)
                    continue
                finally:
                    n["wall_us"] += int(1e6 * (time.perf_counter() - wall))
                    n["cpu_us"] += int(1e6 * (time.process_time() - cpu))
                policy = count(_head(s))
                text = prompt_text(r.final, s.system)
                n["hits"] += sum(holds(text, p.answers, p.whole_word) for p in s.probes)
                n["probes"] += len(s.probes)
                n["calls"] += len(r.prompts)
                n["sent"] += sum(r.prompts)
                n["guard"] += r.summaries.count("guard")
                n["managed"] += len(r.summaries) - r.summaries.count("guard")
                n["over"] += sum(p - policy > budget for p in r.prompts)
                n["peak"] = max(n["peak"], *(p - policy for p in r.prompts))
            out[budget, name] = n
            print(f"{label} {budget:,} {name}: {n['hits']}/{n['probes']}", file=sys.stderr)
    return out


def present(n: Counter[str]) -> float:
    return n["hits"] / n["probes"]


def slope_rows(
    bfcl: dict[tuple[int, str], Counter[str]], tau: dict[tuple[int, str], Counter[str]]
) -> list[list[str]]:
    rows = []
    for name in STRATEGIES:
        row = [name]
        for found in (bfcl, tau):
            shares = [present(found[b, name]) for b in BUDGETS]
            halvings = [later - earlier for earlier, later in pairwise(shares)]
            row += [f"{x:.1%}" for x in shares]
            row.append(f"{100 * sum(halvings) / len(halvings):+.1f}")
        rows.append(row)
    return rows


def budget_rows(found: dict[tuple[int, str], Counter[str]]) -> list[list[str]]:
    rows = []
    for (budget, name), n in found.items():
        rows.append(
            [
                f"{budget:,}",
                name,
                f"{present(n):.1%}",
                f"{n['sent']:,}",
                f"{100 * n['managed'] / n['calls']:.1f}",
                f"{100 * n['guard'] / n['calls']:.1f}" if name == BACM else "-",
                f"{n['peak'] / budget:.2f}",
                f"{n['over'] / n['calls']:.0%}",
                str(n["refused"]),
                f"{n['wall_us'] / 1_000 / n['calls']:.1f}",
                f"{n['cpu_us'] / 1_000 / n['calls']:.1f}",
            ]
        )
    return rows


NOTES = [
    "`change per halving`: the mean, in points, of present(b/2) - present(b) over 8K->4K and",
    "4K->2K; negative is a loss. `folds or summaries`: for BACM the folds its policy decided",
    "(Partial or Full; Null decisions are not counted), for the others the summaries written;",
    "`guard runs`: calls on which BACM's prompt was still over the red line after the policy,",
    "so tiered compression ran. Not the learned policy: the paper trains one with RL; this is",
    "its folding rule with an extractive digest, on the same summarizer as the others.",
    "`runs refused`: replays stopped by the hard ceiling's `BudgetExceededError` (a call",
    "that could not fit even with every tool result cut to its header); their probes count",
    "as missed and their time is in the totals.",
    "`ms per call`: the whole replay per model call (scripted model included), on a shared",
    "2-core machine: orientation only; wall and CPU side by side.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tau-bench trial 0 only")
    args = parser.parse_args()
    logging.getLogger("langgraph_ctx.compression").setLevel(logging.ERROR)
    bfcl_sets, tau_sets = replays(args.quick)
    bfcl, tau = measure(bfcl_sets, "bfcl"), measure(tau_sets, "tau")
    budgets = " / ".join(f"{b // 1000}K" for b in BUDGETS)
    lines = header("BACM (offline policy) against ours and the peers as the budget shrinks")
    lines += [
        f"### Present in the last prompt at {budgets}, and the change per halving",
        "",
    ]
    head = ["strategy", *(f"BFCL {b // 1000}K" for b in BUDGETS), "BFCL change per halving"]
    head += [*(f"tau {b // 1000}K" for b in BUDGETS), "tau change per halving"]
    lines += table(head, slope_rows(bfcl, tau), left=1)
    head = ["budget", "strategy", "present", "tokens sent", "folds or summaries per 100 calls"]
    head += ["guard runs per 100", "peak messages / budget", "calls over budget", "runs refused"]
    head += ["ms per call", "CPU ms per call"]
    lines += ["", "### BFCL v4 memory: accepted answers in the final context", ""]
    lines += table(head, budget_rows(bfcl), left=2)
    lines += ["", "### tau-bench airline: gold-action argument values in the final context", ""]
    lines += table(head, budget_rows(tau), left=2)
    trials = "trial 0" if args.quick else "all 4 trials"
    lines += [
        "",
        f"BFCL: {len(bfcl_sets)} sessions; tau-bench: {len(tau_sets)} trajectories ({trials}). "
        f"Command: `python benchmarks/bacm.py{' --quick' if args.quick else ''}`.",
        "",
        *NOTES,
    ]
    emit("bacm", lines)


if __name__ == "__main__":
    main()
