"""Drive sessions through a strategy, one model call per graph invocation, and record it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from langgraph_ctx.tokens import message_text

from .recorder import Recorder, ReplayModel
from .savers import Backend, open_backend
from .session import Session, TokenTally
from .strategies import Setup, Strategy
from .summaries import Clock, SummaryLog, entity_share

Progress = Callable[[int, float], None]
"""Called after each model call with the number of calls so far and its utilization."""


@dataclass
class SessionRun:
    """What one session's replay through one strategy measured, call by call."""

    session: str
    prompt_tokens: list[int] = field(default_factory=list)
    """Tokens of each prompt the model received (pinned policy and summaries included)."""
    added_tokens: list[int] = field(default_factory=list)
    """Tokens the conversation grew by before each call: its inputs + the previous reply."""
    turns: list[int] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    """Wall time of each graph invocation, the harness's own time taken out."""
    managed_seconds: list[float] = field(default_factory=list)
    """The strategy's own time in each call (pipeline or hook), the node's taken out."""
    probes: dict[str, bool] = field(default_factory=dict)
    entity_retention: float = 1.0
    """Share of the distinct entities of the history so far found in the last prompt."""
    summary_in: list[int] = field(default_factory=list)
    summary_out: list[int] = field(default_factory=list)
    summary_retention: list[float] = field(default_factory=list)
    extra_tokens: int = 0
    """Tokens consumed outside the replayed prompts (sub-agents)."""
    cut: bool = False
    """Stopped early: the prompt outgrew the workload's cut-off."""
    timed_out: bool = False
    """Stopped early: the run's deadline passed."""

    @property
    def calls(self) -> int:
        return len(self.prompt_tokens)


@dataclass
class PairRun:
    """One strategy on every session of one workload, sharing one checkpointer."""

    strategy: str
    runs: list[SessionRun]
    checkpoint_bytes: int
    backend: Backend


SAMPLE_CHARS = 2_000_000


def context_entity_retention(session: Session, calls: int, prompt: str) -> float:
    """Distinct entities of the history up to call ``calls`` that the prompt still holds.

    Over :data:`SAMPLE_CHARS` characters of history (the long run), the entities
    of every k-th message stand for the whole, so that this stays a few seconds.
    """
    history = session.history(calls)
    size = sum(len(m.text) for m in history)
    every = -(-size // SAMPLE_CHARS)
    return entity_share(history[::every], prompt)


def replay(
    strategy: Strategy,
    session: Session,
    setup_for: Callable[[Session, ReplayModel, Clock, SummaryLog], Setup],
    *,
    window: int,
    tally: TokenTally,
    max_turns: int | None = None,
    cut: float | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> SessionRun:
    """Replay ``session`` through ``strategy``; ``cut``: stop once a prompt exceeds
    ``cut * window`` (no model would take it, and no point paying for more);
    ``deadline``: stop before a call once ``time.monotonic()`` has passed it."""
    extra = 0
    if strategy.prepare is not None:
        session, extra = strategy.prepare(session)
    clock = Clock()
    log = SummaryLog(tally, clock)
    recorder = Recorder(session, tally, clock)
    model = ReplayModel.for_session(session, recorder)
    driver = strategy.build(setup_for(session, model, clock, log))
    run = SessionRun(session.name, extra_tokens=extra)
    previous_reply = 0
    for step in session.steps:
        if max_turns is not None and step.turn >= max_turns:
            break
        if deadline is not None and time.monotonic() > deadline:
            run.timed_out = True
            break
        recorder.begin(step.id)
        start = time.perf_counter()
        driver.invoke(list(step.inputs))
        wall = time.perf_counter() - start
        managed, harness = clock.take()
        run.step_seconds.append(max(0.0, wall - harness))
        run.managed_seconds.append(max(0.0, managed))
        run.added_tokens.append(tally(step.inputs) + previous_reply)
        run.turns.append(step.turn)
        previous_reply = tally([step.reply])
        if progress is not None:
            progress(len(run.step_seconds), recorder.prompt_tokens[-1] / window)
        if cut is not None and recorder.prompt_tokens[-1] > cut * window:
            run.cut = True
            break
    run.prompt_tokens = recorder.prompt_tokens
    if run.added_tokens:
        run.added_tokens[0] = run.prompt_tokens[0]  # the first prompt is all new
    if run.timed_out:  # the probes due in the turns run: the rest were never asked
        max_turns = run.turns[-1] + 1 if run.turns else 0
    planned = {s.id for s in session.steps if max_turns is None or s.turn < max_turns}
    run.probes = recorder.finish(planned)
    last = [m for m in recorder.last_prompt if m.content != session.system]
    text = "\n".join(message_text(m)[0] for m in last)
    run.entity_retention = context_entity_retention(session, run.calls, text)
    run.summary_in, run.summary_out = log.tokens_in, log.tokens_out
    run.summary_retention = log.retention
    return run


@dataclass(frozen=True)
class Plan:
    """One strategy's part in a workload run."""

    strategy: Strategy
    max_turns: int | None = None
    """Replay only the turns before this one (``None``: all)."""
    name: str | None = None
    """Its name in the results (default: the strategy's)."""

    @property
    def key(self) -> str:
        return self.name or self.strategy.name


def run_pairs(
    plans: Sequence[Plan],
    sessions: Sequence[Session],
    *,
    window: int,
    backend: Backend,
    tally: TokenTally,
    cut: float | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> dict[str, PairRun]:
    """Every session through every plan, each plan with its own checkpointer.

    Sessions are interleaved: session k goes through every plan (in an order rotated
    by k) before session k + 1, so that load drifting on a shared machine falls on all
    strategies alike.
    """
    runs: dict[str, list[SessionRun]] = {p.key: [] for p in plans}
    done = 0
    with ExitStack() as stack:
        stores = {p.key: stack.enter_context(open_backend(backend)) for p in plans}
        for k, session in enumerate(sessions):
            shift = k % len(plans)
            for plan in [*plans[shift:], *plans[:shift]]:
                saver = stores[plan.key].saver

                def setup_for(
                    s: Session,
                    model: ReplayModel,
                    clock: Clock,
                    log: SummaryLog,
                    saver: Any = saver,
                    k: int = k,
                ) -> Setup:
                    return Setup(s, window, model, saver, clock, log, tally, f"session-{k}")

                def tick(n: int, utilization: float, base: int = done) -> None:
                    if progress is not None:
                        progress(base + n, utilization)

                run = replay(
                    plan.strategy,
                    session,
                    setup_for,
                    window=window,
                    tally=tally,
                    max_turns=plan.max_turns,
                    cut=cut,
                    progress=tick,
                    deadline=deadline,
                )
                runs[plan.key].append(run)
                done += run.calls
        return {
            p.key: PairRun(p.key, runs[p.key], stores[p.key].bytes_written(), backend)
            for p in plans
        }


def run_pair(
    strategy: Strategy,
    sessions: Sequence[Session],
    *,
    window: int,
    backend: Backend,
    tally: TokenTally,
    max_turns: int | None = None,
    cut: float | None = None,
    progress: Progress | None = None,
) -> PairRun:
    """Every session through one strategy (see :func:`run_pairs`)."""
    plan = Plan(strategy, max_turns)
    pairs = run_pairs(
        [plan],
        sessions,
        window=window,
        backend=backend,
        tally=tally,
        cut=cut,
        progress=progress,
    )
    return pairs[plan.key]
