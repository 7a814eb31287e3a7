"""The generic, strategy-free middleware, one per module. The strategies (tiered
compression, AdaCoM, ARC, BACM, PACE) live in :mod:`langgraph_ctx.strategies`,
the layer above: nothing here imports them."""

from langgraph_ctx.middleware.glimpse import Glimpse
from langgraph_ctx.middleware.placement import ProviderPlacement
from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.middleware.recall import MemoryRecall
from langgraph_ctx.middleware.summary_observer import SummaryObserver
from langgraph_ctx.middleware.tool_eviction import ToolEviction

__all__ = [
    "Glimpse",
    "MemoryRecall",
    "PreflightCheck",
    "ProviderPlacement",
    "SummaryObserver",
    "ToolEviction",
]
