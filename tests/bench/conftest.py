"""Tiny sessions whose token counts are known by hand (cl100k_base: ``banana`` and each
`` a`` are one token; every message costs 3 more)."""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

# The harness and its scripts live in benchmarks/, outside the package; import them
# as the scripts do (``harness``, ``run_harness``), so each module loads once.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import Probe, Session, Step


def text(tokens: int, first: str = "a") -> str:
    """``tokens`` tokens: ``first`` (one token) then `` a`` repeated."""
    return first + " a" * (tokens - 1)


def three_calls(probe_at: str | None = "s3") -> Session:
    """Three calls of 10, 20 and 30 tokens of user text (13, 23, 33 with overhead), each
    answered ``ok`` (4 tokens). Call 1 says ``banana``; a probe looks for it.

    Without management the prompts are 13, 13 + 4 + 23 = 40 and 40 + 4 + 33 = 77 tokens.
    """
    steps = tuple(
        Step(f"s{i}", (HumanMessage(text(n, "banana" if i == 1 else "a"), id=f"u{i}"),),
             AIMessage("ok", id=f"s{i}"), i - 1)
        for i, n in ((1, 10), (2, 20), (3, 30))
    )  # fmt: skip
    return Session("three", steps, (Probe("banana", ("banana",), at=probe_at),))
