"""Assemble benchmarks/RESULTS.md from the sections in benchmarks/results/.

Each benchmark script writes its own section (with the machine, versions and
the command that made it); this only puts them in order under one index.

Run: python benchmarks/make_results.py
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ORDER = [  # (file stem, what it answers, issue)
    ("preflight_cost", "Pre-flight cost per call vs history length, vs the peers", 2),
    ("estimator_error", "Estimator error against tiktoken on real data", 2),
    ("retention", "What survives compression on BFCL / tau-bench, vs the peers", 3),
    ("checkpoint_size", "Checkpoint storage with and without compression", 3),
    ("tool_budget", "Tool-schema tokens per call with 60 tools", 4),
    ("delegation", "Sub-agent boundary ratio and parent utilization", 5),
    ("persistence", "Postgres storage and the cost of archive/event writes", 6),
    ("harness", "The harness: strategies x workloads, longevity", 7),
    ("recall", "Memory recall latency and BFCL answer recall", 8),
    ("fuzz", "Random sessions: no orphan, task kept, prompt within its limit, nothing lost", 16),
    (
        "timeouts",
        "A process with hung summarizer and manager calls exits once its graph returns",
        16,
    ),
    ("adacom", "AdaCoM's offline policy vs ours and the peers on BFCL / tau-bench", 17),
    ("bacm", "BACM's offline folding rule vs ours and the peers at 8K / 4K / 2K", 19),
    ("pace", "PACE (MiniLM and lexical) vs ours and the peers; longevity; cost per call", 20),
    ("arc", "ARC's offline manager vs ours and the peers; reflection on a stall workload", 18),
    ("hot_path", "The hot path in a checkpointed graph: cost per turn, memory per session", 15),
    ("hot_path_crossing", "The call that crosses the red line, with and without preparation", 15),
    ("hot_path_session", "Cost per call early and late in a 1,000-turn session", 15),
    ("session_memory", "Memory a process holds over one long session", 15),
    ("prompt_cache", "Prompt tokens a provider cache could serve, and their cost", 13),
    ("prompt_cache_seed1", "The same on another seeded session (seed 1)", 13),
    ("prompt_cache_tools", "Prompt caching with tools found and evicted", 13),
    ("prompt_cache_adacom", "AdaCoM and ARC: the cacheable prefix, as the agent builds them", 13),
    ("prompt_cache_think", "Prompt caching when the agent thinks", 13),
    ("prompt_cache_bacm", "BACM's budget line and the prompt cache (Anthropic's rule)", 31),
    ("prompt_cache_pace", "PACE's levels held between re-selections and the prompt cache", 31),
    ("prompt_cache_per_turn", "Prompt caching: how much recall a turn adds, and recall off", 13),
    ("prompt_cache_processes", "Prompt caching when several processes serve one thread", 13),
    ("archive_search", "Archive and memory search at 1K-100K items, vs the old scan", 14),
    ("retention_recall", "BFCL / tau-bench with the question asked: recall from the archive", 14),
    ("recall_latency", "Recall end to end at 1K-100K archived messages and memories", 14),
    ("long_recall", "The 10,000-turn long-horizon probes with recall from the archive", 14),
    ("long_recall_stages", "Where each long-horizon probe is lost, stage by stage", 14),
    (
        "answers_kept",
        "Answers kept with the defaults, question asked: every strategy x recall x window"
        " (run at fa3b206)",
        31,
    ),
    ("recall_defaults", "Recall's defaults at 2K-32K: answers kept, budget_unreachable", 31),
    ("presets", "Each paper's preset (AdaCoM, ARC, BACM, PACE) against our defaults", 35),
    ("managed_marking", "Managed context marked as the manager's: answers kept before/after", 35),
    ("prompt_cache_quick", "Prompt caching with recall's issue-31 defaults, before and after", 31),
    ("checkpoint_retention", "Storage per thread against turns, with and without retention", 36),
    (
        "checkpoint_retention_strategies",
        "Retention under every strategy, two threads on one file, each resumed and checked",
        36,
    ),
    ("checkpoint_retention_10k", "10,000 turns with the default retention: growth per 1,000", 36),
    ("pg_load", "Worker processes on one PostgreSQL, a SIGKILL and a restart, vs bare", 36),
    ("pg_load_quick", "The same at --quick size, after the check judged by id", 36),
    ("paraphrase_recall", "Facts asked in other words at 10K: lexical, stemmed, hybrid", 34),
    ("paraphrase_recall_100k", "The same at 100K archived messages", 34),
]


# A relative link target in a section: no scheme, not an anchor, not absolute.
RELATIVE_LINK = re.compile(r"(\]\()(?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)([^)\s]+)")


def rebased(section: str) -> str:
    """A section's links as seen from RESULTS.md: a script writes them relative to
    results/ (its plots lie beside it), one directory below RESULTS.md."""
    return RELATIVE_LINK.sub(
        lambda m: m.group(1) + posixpath.normpath(posixpath.join("results", m.group(2))),
        section,
    )


def main() -> None:
    present = [
        (stem, what, issue) for stem, what, issue in ORDER if (RESULTS / f"{stem}.md").exists()
    ]
    lines = [
        "# Benchmark results",
        "",
        "Every section below was written by the script named in it (`python benchmarks/"
        "<name>.py`), on the machine its header describes; this file is assembled by "
        "`python benchmarks/make_results.py`. Ratios compare contestants measured side by "
        "side in one run; absolute times are for orientation only (noisy 2-core machine).",
        "",
        "| section | what it answers | issue |",
        "| --- | --- | ---: |",
        *[
            f"| [{stem}](#{stem.replace('_', '-')}) | {what} | #{issue} |"
            for stem, what, issue in present
        ],
        "",
    ]
    for stem, _, _ in present:
        lines += [
            f'<a id="{stem.replace("_", "-")}"></a>',
            "",
            rebased((RESULTS / f"{stem}.md").read_text().strip()),
            "",
            "---",
            "",
        ]
    (RESULTS.parent / "RESULTS.md").write_text("\n".join(lines))
    print(f"wrote benchmarks/RESULTS.md with {len(present)} sections")


if __name__ == "__main__":
    main()
