"""The benchmark harness: workloads replayed through strategies, measured side by side.

::

    from langgraph_ctx import bench

    results = bench.run(["analysis", "long"], ["none", "ours", "summarization"], seed=0)
    print(results.markdown())
    results.plots(Path("out"))

Also ``langgraph-ctx bench``. Every strategy runs on a real compiled graph with a
checkpointer; the peers need the ``bench`` extra (langchain, langmem), the plots
the ``plot`` extra (matplotlib). The real workloads read ``../shared/data`` (or
``$LANGGRAPH_CTX_DATA``) at run time.
"""

from langgraph_ctx.bench.api import DEFAULT_STRATEGIES, DEFAULT_WORKLOADS, run
from langgraph_ctx.bench.metrics import Longevity, Metrics
from langgraph_ctx.bench.report import Results, WorkloadResult
from langgraph_ctx.bench.runner import PairRun, SessionRun
from langgraph_ctx.bench.session import Probe, Session, Step, TokenTally
from langgraph_ctx.bench.strategies import STRATEGIES, Setup, Strategy
from langgraph_ctx.bench.workloads import WORKLOADS, Workload

__all__ = [
    "DEFAULT_STRATEGIES",
    "DEFAULT_WORKLOADS",
    "STRATEGIES",
    "WORKLOADS",
    "Longevity",
    "Metrics",
    "PairRun",
    "Probe",
    "Results",
    "Session",
    "SessionRun",
    "Setup",
    "Step",
    "Strategy",
    "TokenTally",
    "Workload",
    "WorkloadResult",
    "run",
]
