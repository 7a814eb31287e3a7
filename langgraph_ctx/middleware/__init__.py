"""Built-in middleware, one per module."""

from langgraph_ctx.middleware.adaptive_manager import AdaptiveContextManager
from langgraph_ctx.middleware.arc_manager import ReflectiveContextManager
from langgraph_ctx.middleware.budget_folding import BudgetAwareFolding
from langgraph_ctx.middleware.compression import TieredCompression
from langgraph_ctx.middleware.glimpse import Glimpse
from langgraph_ctx.middleware.pace import PredictiveExtraction
from langgraph_ctx.middleware.placement import ProviderPlacement
from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.middleware.recall import MemoryRecall
from langgraph_ctx.middleware.summary_observer import SummaryObserver
from langgraph_ctx.middleware.tool_eviction import ToolEviction

__all__ = [
    "AdaptiveContextManager",
    "BudgetAwareFolding",
    "Glimpse",
    "MemoryRecall",
    "PredictiveExtraction",
    "PreflightCheck",
    "ProviderPlacement",
    "ReflectiveContextManager",
    "SummaryObserver",
    "TieredCompression",
    "ToolEviction",
]
