"""Timeouts that end the work: a hung summarizer holds a bounded number of the
package's own daemon threads, never the event loop's default executor, and never
keeps the process from exiting."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langgraph_ctx._workers import POOL, WORKERS
from langgraph_ctx.compression.summarizers import ChatModelSummarizer

ROOT = Path(__file__).resolve().parent.parent


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


def test_a_hung_async_summarizer_does_not_pile_up_threads_over_50_calls() -> None:
    release = threading.Event()
    # Frees the hung calls even if the runner below hangs on them (as it did when
    # they ran in the loop's default executor, which asyncio.run joins).
    safety = threading.Timer(20.0, release.set)
    safety.start()
    reasons: list[str] = []
    summarizer = ChatModelSummarizer(
        HangingModel(release=release), timeout=0.02, on_fallback=lambda r, e: reasons.append(r)
    )
    history = [HumanMessage("Invoice INV-0042 is due on 2026-03-01 for ACME Corp.", id="u1")]
    baseline = threading.active_count()
    peak = 0

    async def run() -> list[str]:
        nonlocal peak
        loop = asyncio.get_running_loop()
        out = []
        for _ in range(50):
            out.append(await summarizer.asummarize(history, max_tokens=50))
            peak = max(peak, threading.active_count())
        assert loop._default_executor is None  # type: ignore[attr-defined]  # never used
        return out

    try:
        summaries = asyncio.run(run())
    finally:
        release.set()
        safety.cancel()
    assert reasons == ["timeout"] * 50  # every call timed out and fell back...
    assert all("INV-0042" in s for s in summaries)  # ...to the extractive summary
    assert peak - baseline <= WORKERS
    assert POOL.threads <= WORKERS


SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, threading
    sys.path.insert(0, {root!r})
    from tests.test_timeouts import HangingModel
    from tests.middleware.test_compression import cfg, events, make_graph, turn

    model = HangingModel(release=threading.Event())  # never released
    graph, _, _ = make_graph(summarizer=model, summarizer_timeout=0.1)

    async def run():
        for i in range(30):
            await graph.ainvoke({{"messages": turn(i)}}, cfg("a"))

    asyncio.run(run())
    for i in range(30):
        graph.invoke({{"messages": turn(i)}}, cfg("s"))
    assert events(graph, cfg("a"), "summarizer_fallback")
    assert events(graph, cfg("s"), "summarizer_fallback")
    print("returned", flush=True)
    """
)


def test_a_process_with_a_hung_summarizer_exits_once_the_graph_returns() -> None:
    """Before: the sync path's ThreadPoolExecutor worker (joined at exit) and
    asyncio.run's default executor (joined at shutdown) kept the process alive
    for as long as the model hung: here, forever."""
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
            # Before the fix it never exited (a worker blocked on an Event nobody
            # sets). Interpreter teardown alone takes 1.0-1.8 s here on a loaded
            # 2-core machine, so the bound leaves room for that, not for a hang.
            assert proc.wait(timeout=10.0) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
