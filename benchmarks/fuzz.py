"""The long fuzz run (#16): random sessions through a real compiled graph, with
the invariants of ``tests/fuzz_sessions.py`` checked at every model call.

Run: python benchmarks/fuzz.py --sessions 10000 --workers 2
(the test command runs the same sessions at a CI size: tests/test_fuzz.py)
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, header, table
from tests.fuzz_sessions import Outcome, run_session


def _one(seed: int) -> Outcome:
    # Budget warnings are the expected result of oversized results: not the point here.
    logging.disable(logging.WARNING)
    return run_session(seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
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
    with multiprocessing.Pool(args.workers) as pool:
        for outcome in pool.imap_unordered(_one, seeds, chunksize=4):
            outcomes.append(outcome)
            if outcome.violations:
                print(f"seed {outcome.seed}: {outcome.violations[:3]}", file=sys.stderr)
            if len(outcomes) % 50 == 0:
                print(f"{len(outcomes)} sessions", file=sys.stderr, flush=True)
            if args.max_minutes and time.perf_counter() - start > 60 * args.max_minutes:
                break  # the pool is terminated on leaving the block
    elapsed = time.perf_counter() - start
    kinds: Counter[str] = Counter()
    for o in outcomes:
        kinds.update(o.kinds)
    bad = [o for o in outcomes if o.violations]
    command = (
        f"python benchmarks/fuzz.py --sessions {args.sessions} --first-seed {args.first_seed} "
        f"--workers {args.workers}"
        + (f" --max-minutes {args.max_minutes:g}" if args.max_minutes else "")
    )
    done = (
        f"all {len(outcomes):,} sessions"
        if len(outcomes) == args.sessions
        else f"stopped at the time limit after {len(outcomes):,} of {args.sessions:,} sessions"
    )
    lines = [
        *header("Fuzz: random sessions, invariants at every model call"),
        f"Command: `{command}`: {done} in {elapsed / 60:.1f} min "
        f"(seeds completed first are not always the lowest: sessions run in parallel).",
        "",
        "Each session (seeded) draws a window (3K, 4K or 8K), pre-flight and tiered",
        "compression with 0-2 pass-through layers at random priorities and a random",
        "registration order, and 4-24 steps: user messages (plain, CJK, emoji,",
        "multimodal blocks), pinned messages, tool exchanges (1-3 parallel calls, ids",
        "unique or `call_0` reused every turn, results reversed, a result before its",
        "call, a lost result, a result with no call, results up to ~60K tokens), and",
        "`RemoveMessage` from the user's own node. Checked at every model call: no",
        "orphan call or result (as an OpenAI-style API checks), the task present, the",
        "prompt within `Budget.prompt_limit`; after every step, every message added and",
        "not removed by the user is active or archived. `BudgetExceededError` is allowed",
        "only before the model is called.",
        "",
        *table(
            ["sessions", "model calls", "steps", "refused (BudgetExceededError)", "violations"],
            [
                [
                    f"{len(outcomes):,}",
                    f"{sum(o.calls for o in outcomes):,}",
                    f"{sum(o.steps for o in outcomes):,}",
                    f"{sum(o.refused for o in outcomes):,}",
                    f"{len(bad):,}",
                ]
            ],
            left=0,
        ),
        "",
        *table(
            ["feature drawn", "sessions"],
            [[k, f"{n:,}"] for k, n in sorted(kinds.items())],
        ),
    ]
    if bad:
        lines += ["", "Failing seeds: " + ", ".join(str(o.seed) for o in bad[:50])]
    emit("fuzz", lines)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
