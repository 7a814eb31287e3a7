"""The workloads, by name: sessions, the window they run in, and how they are run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import realdata, synthetic
from .delegation import delegation_session
from .savers import Backend
from .session import Session


@dataclass(frozen=True, kw_only=True)
class Workload:
    """Sessions to replay, and the conditions of the replay."""

    name: str
    title: str
    description: str
    sessions: tuple[Session, ...]
    window: int
    """The model's context window, in tokens (the budget is ``Budget.for_window``)."""
    backend: Backend = "sqlite"
    peer_turns: int | None = None
    """Strategies other than ours replay only this many turns (cost); ``None``: all."""
    cut: float | None = None
    """Stop a session once a prompt exceeds this multiple of the window."""

    def turns_for(self, strategy: str) -> int | None:
        return None if strategy in ("ours", "ours+recall") else self.peer_turns


Factory = Callable[[int, bool, Path | None], Workload]
"""``(seed, quick, data directory) -> Workload``."""


def _typed(kind: str) -> Factory:
    spec = synthetic.SESSION_TYPES[kind]

    def make(seed: int, quick: bool, data: Path | None) -> Workload:
        count = 3 if quick else 10
        lo, hi = spec.messages
        return Workload(
            name=kind,
            title=f"{spec.title} ({lo}-{hi} messages)",
            description=f"{count} seeded sessions, tool rate {spec.tool_rate:.0%}, tool "
            f"results of {spec.result_chars[0]:,}-{spec.result_chars[1]:,} characters, "
            "probes asked at the call that needs them",
            sessions=tuple(synthetic.typed_sessions(kind, seed, count)),
            window=32_000,
        )

    return make


def _long(seed: int, quick: bool, data: Path | None) -> Workload:
    turns, peers = (1_000, 300) if quick else (10_000, 1_000)
    return Workload(
        name="long",
        title=f"long horizon ({turns:,} turns, ~1,500 tokens a turn)",
        description=f"one seeded session of {turns:,} turns (two model calls per turn with "
        f"tools), 128K window; strategies other than ours replay the first {peers:,} turns, "
        "and any run stops once a prompt passes twice the window; in-memory checkpointer",
        sessions=(synthetic.long_session(seed, turns),),
        window=128_000,
        backend="memory",
        peer_turns=peers,
        cut=2.0,
    )


def _delegation(seed: int, quick: bool, data: Path | None) -> Workload:
    tasks = 8 if quick else 30
    return Workload(
        name="delegation",
        title=f"delegation ({tasks} research tasks of 5 lookups)",
        description="lookups of 1-4 KB; probes ask about facts from tasks two or more back; "
        "ours + sub-agents hands each task to a real sub-agent (its tokens are counted)",
        sessions=(delegation_session(seed, tasks),),
        window=32_000,
    )


def _bfcl(seed: int, quick: bool, data: Path | None) -> Workload:
    return Workload(
        name="bfcl",
        title="BFCL v4 memory (real)",
        description="5 scenario sessions, 323 user turns; the 155 questions' accepted answers "
        "searched in the last prompt; 4K window",
        sessions=tuple(realdata.bfcl_sessions(realdata.data_dir(data))),
        window=4_000,
    )


def _tau(seed: int, quick: bool, data: Path | None) -> Workload:
    sessions = realdata.tau_sessions(realdata.data_dir(data), first_trial_only=quick)
    return Workload(
        name="tau",
        title="tau-bench airline (real)",
        description=f"{len(sessions)} trajectories with gold actions ("
        f"{'trial 0' if quick else 'all 4 trials'}); every gold argument value searched, as a "
        "whole word, in the last prompt; the 1.25K-token policy pinned; 6K window",
        sessions=tuple(sessions),
        window=6_000,
    )


WORKLOADS: dict[str, Factory] = {
    **{kind: _typed(kind) for kind in synthetic.SESSION_TYPES},
    "long": _long,
    "delegation": _delegation,
    "bfcl": _bfcl,
    "tau": _tau,
}
"""Every workload by name, in report order."""
