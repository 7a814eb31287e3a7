"""The strategies a session is replayed through, each on a real compiled graph.

Every strategy gets the same :class:`Setup`: the session, the window, the replay
model, a checkpointer, a clock for its own time and the summary log. Thresholds
are all derived from the window: the peers act at :attr:`Setup.limit`, the largest
prompt that still leaves ``Budget.for_window``'s output reserve and safety margin (the
same limit ours keeps to), and summaries get at most ``min(2,000, window / 16)`` tokens.
The peers live in :mod:`benchmarks.harness.peers` and import LangChain and langmem only
when built.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.budget import Budget
from langgraph_ctx.middleware import PreflightCheck
from langgraph_ctx.pipeline import CallContext
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.state import ContextState
from langgraph_ctx.strategies import TieredCompression

from .recorder import ReplayModel
from .session import Session, TokenTally
from .summaries import Clock, CountingSummarizer, SummaryLog


@dataclass(frozen=True)
class Setup:
    """What a strategy is built from, for one session."""

    session: Session
    window: int
    model: ReplayModel
    saver: BaseCheckpointSaver[Any]
    clock: Clock
    log: SummaryLog
    tally: TokenTally
    thread_id: str

    @property
    def budget(self) -> Budget:
        return Budget.for_window(self.window)

    @property
    def limit(self) -> int:
        """The peers' threshold: the red line (which the prompt limit caps)."""
        return self.budget.red_line

    @property
    def summary_tokens(self) -> int:
        return min(2_000, self.window // 16)

    @property
    def policy(self) -> list[BaseMessage]:
        """The pinned policy as the first message of the state, if the session has one."""
        system = self.session.system
        return [SystemMessage(system, id="policy")] if system else []


class Replay:
    """A compiled graph and the thread it runs one session in."""

    def __init__(self, graph: Any, setup: Setup, head: list[BaseMessage]) -> None:
        self.graph, self.head = graph, head
        self.config: RunnableConfig = {
            "configurable": {"thread_id": setup.thread_id},
            "recursion_limit": 50,
        }

    def invoke(self, inputs: list[BaseMessage]) -> None:
        """Run one model call: the step's inputs in, the scripted reply out."""
        self.graph.invoke({"messages": [*self.head, *inputs]}, self.config)
        self.head = []


@dataclass(frozen=True)
class Strategy:
    """A way to manage context, by name."""

    name: str
    label: str
    build: Callable[[Setup], Replay]
    prepare: Callable[[Session], tuple[Session, int]] | None = None
    """Rewrites the session first (delegation); returns it and extra tokens consumed."""
    needs_tasks: bool = False
    """Only runs on sessions with delegable tasks."""


def _one_node(setup: Setup, node: Any, pipeline: Pipeline | None = None) -> Any:
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", node)
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", END)
    if pipeline is not None:
        pipeline.attach(builder)
    return builder.compile(checkpointer=setup.saver)


def build_none(setup: Setup) -> Replay:
    """The same graph as ours, without the pipeline: the baseline for time ratios."""
    return Replay(_one_node(setup, call_llm_node(setup.model)), setup, setup.policy)


class _TimedNode(Runnable[Any, Any]):
    """Measures the wrapped node so that the pipeline's own time can be told apart."""

    def __init__(self, inner: Runnable[Any, Any]) -> None:
        self.inner, self.seconds = inner, 0.0

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.inner.invoke(input, config, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


class TimedPipeline(Pipeline):
    """A :class:`Pipeline` that adds its own time per node call (minus the node's) to a clock."""

    def __init__(self, *args: Any, clock: Clock, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clock = clock

    def invoke_node(self, ctx: CallContext, inner: Runnable[Any, Any]) -> Any:
        timed = _TimedNode(inner)
        start = time.perf_counter()
        try:
            return super().invoke_node(ctx, timed)
        finally:
            self.clock.managed += time.perf_counter() - start - timed.seconds


def build_ours(setup: Setup) -> Replay:
    """Pre-flight + tiered compression with their defaults, on ``Budget.for_window``.

    No tools are bound in a replay (replies carry their tool calls), so tool
    eviction has nothing to do and is left out.
    """
    compression = TieredCompression(summarizer=CountingSummarizer(setup.log))
    pipeline = TimedPipeline(
        [PreflightCheck(), compression], budget=setup.budget, clock=setup.clock
    )
    return Replay(_one_node(setup, call_llm_node(setup.model), pipeline), setup, setup.policy)


def build_ours_memory(setup: Setup) -> Replay:
    """Ours, plus long-term memory: every summary is kept as an observation, and
    recall brings the ones that match the current turn back within the auxiliary
    budget. Offline: an in-memory store ranked lexically (BM25), scoped per thread."""
    from langgraph.store.memory import InMemoryStore

    from langgraph_ctx.middleware import MemoryRecall, SummaryObserver
    from langgraph_ctx.retrieval.memory import MemoryBank

    bank = MemoryBank(InMemoryStore(), scope_keys=("thread_id",))
    middleware = [
        PreflightCheck(),
        SummaryObserver(bank),
        TieredCompression(summarizer=CountingSummarizer(setup.log)),
        MemoryRecall(bank),
    ]
    pipeline = TimedPipeline(middleware, budget=setup.budget, clock=setup.clock)
    return Replay(_one_node(setup, call_llm_node(setup.model), pipeline), setup, setup.policy)


def build_ours_recall(setup: Setup) -> Replay:
    """Ours, plus recall from the archive (issue 14): before each call, the originals
    compression archived that match the current user message come back, within the
    auxiliary budget. Offline: the in-memory archive, ranked by BM25."""
    from langgraph_ctx.middleware import MemoryRecall
    from langgraph_ctx.storage.archive import InMemoryArchive

    archive = InMemoryArchive()
    middleware = [
        PreflightCheck(),
        TieredCompression(summarizer=CountingSummarizer(setup.log), archive=archive),
        MemoryRecall(archive=archive),
    ]
    pipeline = TimedPipeline(middleware, budget=setup.budget, clock=setup.clock)
    return Replay(_one_node(setup, call_llm_node(setup.model), pipeline), setup, setup.policy)


def build_adacom(setup: Setup) -> Replay:
    """AdaCoM with the offline policy (no model) in compression's place: every round,
    at 0.7 utilization, and for any new tool result over 2,000 tokens."""
    from langgraph_ctx.strategies import AdaptiveContextManager

    manager = AdaptiveContextManager(every=1, timeout=None)
    pipeline = TimedPipeline([PreflightCheck(), manager], budget=setup.budget, clock=setup.clock)
    return Replay(_one_node(setup, call_llm_node(setup.model), pipeline), setup, setup.policy)


def _peer(name: str) -> Callable[[Setup], Replay]:
    def build(setup: Setup) -> Replay:
        from . import peers

        builder: Callable[[Setup], Replay] = getattr(peers, name)
        return builder(setup)

    return build


def _delegate(session: Session) -> tuple[Session, int]:
    from .delegation import delegate

    return delegate(session)


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("ours", "ours (pre-flight + compression)", build_ours),
        Strategy("ours+memory", "ours + memory recall of past summaries", build_ours_memory),
        Strategy("ours+recall", "ours + recall from the archive", build_ours_recall),
        Strategy("adacom", "AdaCoM, offline policy", build_adacom),
        Strategy("none", "no management", build_none),
        Strategy("trim", "trim_messages (last)", _peer("build_trim")),
        Strategy("summarization", "SummarizationMiddleware", _peer("build_summarization")),
        Strategy(
            "context-editing",
            "ContextEditingMiddleware (clear tool uses)",
            _peer("build_context_editing"),
        ),
        Strategy("langmem", "langmem summarize_messages", _peer("build_langmem")),
        Strategy(
            "ours+subagents",
            "ours + sub-agents (delegation)",
            build_ours,
            prepare=_delegate,
            needs_tasks=True,
        ),
    )
}
"""Every strategy by name, in report order."""
