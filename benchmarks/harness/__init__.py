"""The benchmark harness: workloads replayed through strategies, measured side by side.

::

    import harness as bench   # from benchmarks/, as run_harness.py does

    results = bench.run(["analysis", "long"], ["none", "ours", "summarization"], seed=0)
    print(results.markdown())
    results.plots(Path("out"))

``python benchmarks/run_harness.py`` runs it from the command line. Every strategy
runs on a real compiled graph with a
checkpointer; the peers need the ``bench`` extra (langchain, langmem), the plots
the ``plot`` extra (matplotlib). The real workloads read ``../shared/data`` (or
``$LANGGRAPH_CTX_DATA``) at run time.
"""

from .api import DEFAULT_STRATEGIES, DEFAULT_WORKLOADS, run
from .metrics import Longevity, Metrics
from .report import Results, WorkloadResult
from .runner import PairRun, SessionRun
from .session import Probe, Session, Step, TokenTally
from .strategies import STRATEGIES, Setup, Strategy
from .workloads import WORKLOADS, Workload

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
