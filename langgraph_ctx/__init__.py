"""langgraph-ctx: keep long-running LangGraph agents inside their context window.

The public API. Everything importable from here is listed in ``__all__``
(a test keeps the two in step); everything else is private.
"""

from importlib import metadata as _metadata

from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.budget import Budget, UsageReport, Zones, rebalance
from langgraph_ctx.errors import (
    BudgetExceededError,
    ConfigurationError,
    ContextError,
    ContextRunError,
    MiddlewareError,
    NextCalledTwiceError,
    ThreadBusyError,
)
from langgraph_ctx.markers import is_compacted, is_pinned, is_summary, pin
from langgraph_ctx.middleware import (
    MemoryRecall,
    PreflightCheck,
    ProviderPlacement,
    SummaryObserver,
    ToolEviction,
)
from langgraph_ctx.middleware.placement import place_messages
from langgraph_ctx.pipeline import CallContext, EventSink, Middleware, View
from langgraph_ctx.pipeline.chain import as_middleware
from langgraph_ctx.pipeline.context import PersistentUpdate, current_context
from langgraph_ctx.pipeline.wiring import Pipeline
from langgraph_ctx.retrieval.memory import Level, Memory, MemoryBank, SessionSummary, remember_tool
from langgraph_ctx.retrieval.runtime_store import RuntimeStore
from langgraph_ctx.state import (
    ArtifactRef,
    ContextState,
    DeltaContextState,
    LedgerEntry,
    ledger_reducer,
)
from langgraph_ctx.storage.checkpointers import async_checkpointer_from_url, checkpointer_from_url
from langgraph_ctx.storage.delta_cache import DeltaReadCache
from langgraph_ctx.storage.events import SQLiteEventSink
from langgraph_ctx.storage.locks import ThreadLock, arun_exclusive, run_exclusive
from langgraph_ctx.storage.migrations import MigrationStatus, migrate, migration_status
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink
from langgraph_ctx.strategies import (
    AdaptiveContextManager,
    BudgetAwareFolding,
    PredictiveExtraction,
    ReflectiveContextManager,
    TieredCompression,
)
from langgraph_ctx.tokens import (
    Calibration,
    MessageTokenCache,
    TokenCounter,
    estimate_tokens,
    load_encoding,
)

# The installed distribution's version, so it is written once (pyproject.toml). A source
# tree put on sys.path without installing has no metadata: say so rather than guess.
try:
    __version__: str = _metadata.version("langgraph-ctx")
except _metadata.PackageNotFoundError:
    __version__ = "0.0.0+unknown"

__all__ = [
    "AdaptiveContextManager",
    "ArtifactRef",
    "Budget",
    "BudgetAwareFolding",
    "BudgetExceededError",
    "Calibration",
    "CallContext",
    "ConfigurationError",
    "ContextError",
    "ContextRunError",
    "ContextState",
    "DeltaContextState",
    "DeltaReadCache",
    "EventSink",
    "LedgerEntry",
    "Level",
    "Memory",
    "MemoryBank",
    "MemoryRecall",
    "MessageTokenCache",
    "Middleware",
    "MiddlewareError",
    "MigrationStatus",
    "NextCalledTwiceError",
    "PersistentUpdate",
    "Pipeline",
    "PostgresArchive",
    "PostgresEventSink",
    "PredictiveExtraction",
    "PreflightCheck",
    "ProviderPlacement",
    "ReflectiveContextManager",
    "RuntimeStore",
    "SQLiteEventSink",
    "SessionSummary",
    "SummaryObserver",
    "ThreadBusyError",
    "ThreadLock",
    "TieredCompression",
    "TokenCounter",
    "ToolEviction",
    "UsageReport",
    "View",
    "Zones",
    "arun_exclusive",
    "as_middleware",
    "async_checkpointer_from_url",
    "call_llm_node",
    "checkpointer_from_url",
    "current_context",
    "estimate_tokens",
    "is_compacted",
    "is_pinned",
    "is_summary",
    "ledger_reducer",
    "load_encoding",
    "migrate",
    "migration_status",
    "pin",
    "place_messages",
    "rebalance",
    "remember_tool",
    "run_exclusive",
]
