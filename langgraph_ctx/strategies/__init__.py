"""Context strategies of the other papers, on the shared edit core (:mod:`langgraph_ctx.edits`).

- ``adacom``: AdaCoM's manager side (arXiv "Learning Agent-Compatible Context
  Management"): the request a manager sees, its structured answer, a chat-model
  manager; ``adacom_offline``: a deterministic manager, the offline baseline.
  The middleware that runs them is
  :class:`langgraph_ctx.middleware.AdaptiveContextManager`.
- ``bacm``: BACM (arXiv "ContextBudget"): commit blocks, the budget state, the
  fold action and tool, a chat-model policy; ``bacm_offline``: the folding
  rule, the offline baseline. The middleware that runs them is
  :class:`langgraph_ctx.middleware.BudgetAwareFolding`.
- ``pace``: PACE (arXiv "Predictive Adaptive Context Extraction"): the
  granularity decision (``pace``), the scorer (``pace_scorer``), the steps and
  their records (``pace_steps``), background summaries (``pace_summaries``) and
  the source of the glimpse tool (``pace_glimpse``). The middleware is
  :class:`langgraph_ctx.middleware.PredictiveExtraction`.
- ``arc``: ARC's context manager (arXiv "ARC: Active and Reflection-driven
  Context Management"): checklist, interaction memory, incremental update and
  reflection; ``arc_model``: a chat-model manager; ``arc_signals``: the stall triggers;
  ``arc_offline``: a deterministic manager. The middleware is
  :class:`langgraph_ctx.middleware.ReflectiveContextManager`.
"""

from langgraph_ctx.strategies.adacom import (
    MANAGER_PROMPT,
    NOTE_TITLE,
    ChatModelManager,
    ContextManagerPolicy,
    ManagerAction,
    ManagerRequest,
    Modification,
    listing,
)
from langgraph_ctx.strategies.adacom_offline import OfflinePolicy
from langgraph_ctx.strategies.arc import (
    CHECKLIST_TITLE,
    MEMORY_TITLE,
    ArcManager,
    ChecklistItem,
    Folded,
    MemoryUpdate,
    Reflection,
    UpdateRequest,
    afold,
    fold,
    memory_body,
    render_checklist,
    render_memory,
    stamped,
)
from langgraph_ctx.strategies.arc_model import REFLECT_PROMPT, UPDATE_PROMPT, ChatModelArcManager
from langgraph_ctx.strategies.arc_offline import OfflineArcManager
from langgraph_ctx.strategies.arc_signals import TRIGGERS, FoldSettings, StallState
from langgraph_ctx.strategies.bacm import (
    FOLD_TOOL,
    BudgetState,
    ChatModelFoldPolicy,
    CommitBlock,
    FoldAction,
    FoldPolicy,
    FoldRefused,
    FoldRequest,
    commit_blocks,
    fold_kind,
    fold_ops,
    fold_tool,
)
from langgraph_ctx.strategies.bacm_offline import OfflineFoldPolicy
from langgraph_ctx.strategies.pace import PaceSettings
from langgraph_ctx.strategies.pace_glimpse import StepSource
from langgraph_ctx.strategies.pace_scorer import (
    EmbeddingScorer,
    LexicalScorer,
    Scorer,
    default_scorer,
)

__all__ = [
    "CHECKLIST_TITLE",
    "FOLD_TOOL",
    "MANAGER_PROMPT",
    "MEMORY_TITLE",
    "NOTE_TITLE",
    "REFLECT_PROMPT",
    "TRIGGERS",
    "UPDATE_PROMPT",
    "ArcManager",
    "BudgetState",
    "ChatModelArcManager",
    "ChatModelFoldPolicy",
    "ChatModelManager",
    "ChecklistItem",
    "CommitBlock",
    "ContextManagerPolicy",
    "EmbeddingScorer",
    "FoldAction",
    "FoldPolicy",
    "FoldRefused",
    "FoldRequest",
    "FoldSettings",
    "Folded",
    "LexicalScorer",
    "ManagerAction",
    "ManagerRequest",
    "MemoryUpdate",
    "Modification",
    "OfflineArcManager",
    "OfflineFoldPolicy",
    "OfflinePolicy",
    "PaceSettings",
    "Reflection",
    "Scorer",
    "StallState",
    "StepSource",
    "UpdateRequest",
    "afold",
    "commit_blocks",
    "default_scorer",
    "fold",
    "fold_kind",
    "fold_ops",
    "fold_tool",
    "listing",
    "memory_body",
    "render_checklist",
    "render_memory",
    "stamped",
]
