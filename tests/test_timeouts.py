"""Timeouts that end the work: a hung summarizer holds a bounded number of the
package's own daemon threads, never the event loop's default executor, and never
keeps the process from exiting."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    AdaptiveContextManager,
    ContextState,
    Pipeline,
    PreflightCheck,
    call_llm_node,
)
from langgraph_ctx._workers import POOL, WORKERS
from langgraph_ctx.compression.summarizers import ChatModelSummarizer
from langgraph_ctx.pipeline import IOCall
from langgraph_ctx.strategies.adacom.policy import ChatModelManager, ManagerAction, ManagerRequest
from langgraph_ctx.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


class HangingModel(BaseChatModel):
    """A sync-only chat model that never answers until ``release`` is set."""

    release: Any = None

    @property
    def _llm_type(self) -> str:
        return "hanging"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.release.wait()
        return ChatResult(generations=[ChatGeneration(message=AIMessage("late"))])


def fifty_hung_calls(call: Callable[[], Awaitable[T]], release: threading.Event) -> list[T]:
    """Await ``call()`` 50 times under ``asyncio.run``; check that the threads held
    stay within the package's pool and the loop's default executor is never used."""
    # Frees the hung calls even if the runner below hangs on them (as it did when
    # they ran in the loop's default executor, which asyncio.run joins).
    safety = threading.Timer(20.0, release.set)
    safety.start()
    baseline = threading.active_count()
    peak = 0

    async def run() -> list[T]:
        nonlocal peak
        loop = asyncio.get_running_loop()
        out = []
        for _ in range(50):
            out.append(await call())
            peak = max(peak, threading.active_count())
        assert loop._default_executor is None  # type: ignore[attr-defined]  # never used
        return out

    try:
        results = asyncio.run(run())
    finally:
        release.set()
        safety.cancel()
    assert peak - baseline <= WORKERS
    assert POOL.threads <= WORKERS
    return results


@pytest.mark.slow
def test_a_hung_async_summarizer_does_not_pile_up_threads_over_50_calls() -> None:
    release = threading.Event()
    reasons: list[str] = []
    summarizer = ChatModelSummarizer(
        HangingModel(release=release), timeout=0.02, on_fallback=lambda r, e: reasons.append(r)
    )
    history = [HumanMessage("Invoice INV-0042 is due on 2026-03-01 for ACME Corp.", id="u1")]
    summaries = fifty_hung_calls(partial(summarizer.asummarize, history, max_tokens=50), release)
    assert reasons == ["timeout"] * 50  # every call timed out and fell back...
    assert all("INV-0042" in s for s in summaries)  # ...to the extractive summary


class HangingManagerModel(HangingModel):
    """A sync-only manager model whose structured answer never comes either."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        def answer(_: Any) -> ManagerAction:
            self.release.wait()
            return ManagerAction()

        return RunnableLambda(answer)


@pytest.mark.slow
def test_a_hung_sync_only_manager_model_under_ainvoke_holds_the_pool_not_the_loop() -> None:
    """Before, ChatModelManager.apropose awaited the model's ainvoke, which runs a
    sync-only model in the event loop's default executor: a hung manager kept a
    thread there past the middleware's timeout on every call, and asyncio.run
    waited for them at exit."""
    release = threading.Event()
    manager = ChatModelManager(HangingManagerModel(release=release))
    note = HumanMessage("(nothing recorded yet)", id="note")
    request = ManagerRequest(
        messages=[HumanMessage("Audit INV-0042.", id="task"), note],
        tokens={"task": 8, "note": 8},
        protected=frozenset({"task", "note"}),
        task=None,
        note_id="note",
        triggers=("every_k_rounds",),
    )
    # What AdaptiveContextManager yields: the manager's call under its timeout.
    call = IOCall(partial(manager.propose, request), partial(manager.apropose, request), 0.02)
    outcomes = fifty_hung_calls(call.aoutcome, release)
    assert all(isinstance(error, TimeoutError) for _, error in outcomes)  # each timed out


def adacom_graph(manager: BaseChatModel) -> Any:
    """A graph whose AdaCoM manager is ``manager``, asked on every call."""
    model = ScriptedChatModel(default="ok")
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", call_llm_node(model))
    builder.add_edge(START, "call_llm")
    layers = [PreflightCheck(), AdaptiveContextManager(manager=manager, timeout=0.1, every=1)]
    return Pipeline(layers).attach(builder).compile(checkpointer=InMemorySaver())


SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, threading
    sys.path.insert(0, {root!r})
    from tests.test_timeouts import HangingManagerModel, HangingModel, adacom_graph
    from tests.middleware.test_compression import cfg, events, make_graph, turn

    model = HangingModel(release=threading.Event())  # never released
    graph, _, _ = make_graph(summarizer=model, summarizer_timeout=0.1)
    managed = adacom_graph(HangingManagerModel(release=threading.Event()))  # never either

    async def run():
        for i in range(30):
            await graph.ainvoke({{"messages": turn(i)}}, cfg("a"))
        for i in range(10):
            await managed.ainvoke({{"messages": turn(i)}}, cfg("a"))

    asyncio.run(run())
    for i in range(30):
        graph.invoke({{"messages": turn(i)}}, cfg("s"))
    for i in range(10):
        managed.invoke({{"messages": turn(i)}}, cfg("s"))
    assert events(graph, cfg("a"), "summarizer_fallback")
    assert events(graph, cfg("s"), "summarizer_fallback")
    assert len(events(managed, cfg("a"), "manager_failed")) == 10
    assert len(events(managed, cfg("s"), "manager_failed")) == 10
    main = threading.main_thread()
    print([t.name for t in threading.enumerate() if not t.daemon and t is not main])
    print("returned", flush=True)
    """
)


@pytest.mark.slow
def test_a_process_with_a_hung_summarizer_or_manager_exits_once_the_graph_returns() -> None:
    """Before: the sync path's ThreadPoolExecutor worker (joined at exit) and
    asyncio.run's default executor (joined at shutdown) kept the process alive
    for as long as the model hung: here, forever. The AdaCoM manager's async
    path still went through the default executor until #16's last fix."""
    with subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(root=str(ROOT))],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    ) as proc:
        try:
            assert proc.stdout is not None
            lines = []
            for line in proc.stdout:  # until the graphs returned (or it died)
                lines.append(line)
                if line.strip() == "returned":
                    break
            assert lines and lines[-1].strip() == "returned", "".join(lines)
            # Every hung call holds a daemon thread of the package's pool, none
            # that the interpreter joins at exit. (How long the exit takes is
            # measured in benchmarks/timeouts.py: no timing asserted here.)
            assert lines[-2].strip() == "[]", lines[-2]
            # Before the fix it never exited (a worker blocked on an Event nobody
            # sets). Interpreter teardown alone takes 1.0-1.8 s here on a loaded
            # 2-core machine, so the bound leaves room for that, not for a hang.
            assert proc.wait(timeout=10.0) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
