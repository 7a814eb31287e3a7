"""The long fuzz run (#16): random sessions through a real compiled graph, for
every strategy of the agent's registry, with the invariants of
``tests/fuzz_sessions.py`` checked at every model call.

Run: python benchmarks/fuzz.py --sessions 10000 --workers 2
(the test command runs the same sessions at a CI size: tests/test_fuzz.py).
Every ``--write-every`` sessions the results so far are written, so a run
stopped early still leaves its count.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, header, table
from langgraph_ctx.strategies.registry import STRATEGIES
from tests.fuzz_sessions import FUZZED, Outcome, run_session


def _one(seed: int, *, lexical_pace: bool) -> tuple[Outcome, float]:
    # Budget warnings are the expected result of oversized results: not the point here.
    logging.disable(logging.WARNING)
    start = time.process_time()
    outcome = run_session(seed, lexical_pace=lexical_pace)
    return outcome, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write-every", type=int, default=500)
    parser.add_argument(
        "--pace-scorer",
        choices=("default", "lexical"),
        default="default",
        help="PACE's step scorer: its default (MiniLM with the embeddings extra) or "
        "its lexical fallback, a ninth of the cost a session",
    )
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="stop after this long and report the sessions actually run",
    )
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.sessions)
    start = time.perf_counter()
    outcomes: list[Outcome] = []
    cpu = 0.0
    with multiprocessing.Pool(args.workers) as pool:
        one = partial(_one, lexical_pace=args.pace_scorer == "lexical")
        for outcome, seconds in pool.imap_unordered(one, seeds, chunksize=4):
            outcomes.append(outcome)
            cpu += seconds
            if outcome.violations:
                print(f"seed {outcome.seed}: {outcome.violations[:3]}", file=sys.stderr)
            if len(outcomes) % 50 == 0:
                elapsed = time.perf_counter() - start
                print(
                    f"{len(outcomes)} sessions, {elapsed / 60:.1f} min", file=sys.stderr, flush=True
                )
            if len(outcomes) % args.write_every == 0 and len(outcomes) < args.sessions:
                report(args, outcomes, time.perf_counter() - start, cpu)
            if args.max_minutes and time.perf_counter() - start > 60 * args.max_minutes:
                break  # the pool is terminated on leaving the block
    bad = report(args, outcomes, time.perf_counter() - start, cpu)
    sys.exit(1 if bad else 0)


def report(args: argparse.Namespace, outcomes: list[Outcome], elapsed: float, cpu: float) -> int:
    """Write the results of ``outcomes``; how many sessions had a violation."""
    command = (
        f"python benchmarks/fuzz.py --sessions {args.sessions} --first-seed {args.first_seed} "
        f"--workers {args.workers}"
        + (f" --pace-scorer {args.pace_scorer}" if args.pace_scorer != "default" else "")
        + (f" --max-minutes {args.max_minutes:g}" if args.max_minutes else "")
    )
    done = (
        f"all {len(outcomes):,} sessions"
        if len(outcomes) == args.sessions
        else f"stopped after {len(outcomes):,} of {args.sessions:,} sessions"
    )
    kinds: Counter[str] = Counter()
    ledger: Counter[str] = Counter()
    by_strategy: dict[str, list[Outcome]] = {name: [] for name in FUZZED}
    for o in outcomes:
        kinds.update(o.kinds)
        ledger.update(o.ledger)
        by_strategy.setdefault(o.strategy, []).append(o)
    bad = [o for o in outcomes if o.violations]
    rows = [
        [
            name,
            f"{len(group):,}",
            f"{sum(o.calls for o in group):,}",
            f"{sum(o.steps for o in group):,}",
            f"{sum(o.refused for o in group):,}",
            f"{sum(1 for o in group if o.violations):,}",
        ]
        for name, group in [*by_strategy.items(), ("all", outcomes)]
    ]
    lines = [
        *header("Fuzz: random sessions, invariants at every model call"),
        f"Command: `{command}`: {done} in {elapsed / 60:.1f} min wall, {cpu / 60:.1f} min CPU "
        f"({cpu / max(len(outcomes), 1):.2f} s CPU a session; seeds completed first are not "
        "always the lowest: sessions run in parallel).",
        "",
        "Each session (seeded) takes, at its seed modulo their number, one of the",
        f"agent's `strategy=` registry (`STRATEGIES`: {', '.join(STRATEGIES)}) or none",
        "(pre-flight alone), and draws a window (2K, 3K or 4K), a provider placement,",
        "0-2 pass-through layers at random priorities around pre-flight, the strategy",
        "and placement, a random registration order, sync or async runs (a quarter",
        "`ainvoke`), a system prompt the node adds (a third of the sessions),",
        "and 4-12 steps: user messages (plain, CJK, emoji, multimodal",
        "blocks), pinned messages, tool exchanges (1-3 parallel calls, ids unique or",
        "`call_0` reused every turn, results reversed, a result before its call, a lost",
        "result, a result with no call, results of ~3.6K tokens (over a 2K or 3K",
        "window) and ~10K (over every window)), and `RemoveMessage` from the user's own",
        "node. Checked at every model call: no orphan call or",
        "result (as an OpenAI-style API checks), the task present, the prompt within",
        "`Budget.prompt_limit`, the usage report the call ends with not under the",
        "prompt sent (the prompt ceiling trusts a report clearly under the limit);",
        "after every step, every message added and not removed",
        "by the user is active or archived. `BudgetExceededError` counts as a",
        "violation if the model was called first, or if the pinned messages took no",
        "more than half the prompt limit (a needless refusal).",
        *(
            [
                "",
                "PACE scores steps with its lexical fallback here (`--pace-scorer lexical`:",
                "what it uses without the embeddings extra), a ninth of the CPU a session of",
                "MiniLM's; the assembly, and so every invariant, is the same code. The test",
                "command's fuzz suite (tests/test_fuzz.py) runs PACE with its default scorer.",
            ]
            if args.pace_scorer == "lexical"
            else []
        ),
        "",
        *table(
            [
                "strategy",
                "sessions",
                "model calls",
                "steps",
                "refused (BudgetExceededError)",
                "sessions with a violation",
            ],
            rows,
        ),
        "",
        "What the ceiling did (ledger events over all sessions): `ceiling_enforced` with",
        "scope `history` is tiered compression reducing tool results in the state",
        "(originals archived); scope `prompt` is pre-flight's last-line guard fitting one",
        "call's prompt (the history keeps every original); `compression:ceiling` is",
        "compression run again by the ceiling.",
        "",
        *table(["ledger event", "count"], [[k, f"{n:,}"] for k, n in sorted(ledger.items())]),
        "",
        *table(
            ["feature drawn", "sessions"],
            [[k, f"{n:,}"] for k, n in sorted(kinds.items())],
        ),
    ]
    if bad:
        lines += ["", "Failing seeds: " + ", ".join(str(o.seed) for o in bad[:50])]
    emit("fuzz", lines)
    return len(bad)


if __name__ == "__main__":
    main()
