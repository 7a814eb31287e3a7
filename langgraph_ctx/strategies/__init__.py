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

__all__ = [
    "FOLD_TOOL",
    "MANAGER_PROMPT",
    "NOTE_TITLE",
    "BudgetState",
    "ChatModelFoldPolicy",
    "ChatModelManager",
    "CommitBlock",
    "ContextManagerPolicy",
    "FoldAction",
    "FoldPolicy",
    "FoldRefused",
    "FoldRequest",
    "ManagerAction",
    "ManagerRequest",
    "Modification",
    "OfflineFoldPolicy",
    "OfflinePolicy",
    "commit_blocks",
    "fold_kind",
    "fold_ops",
    "fold_tool",
    "listing",
]
