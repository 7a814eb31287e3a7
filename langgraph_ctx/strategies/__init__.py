"""Context strategies of the other papers, on the shared edit core (:mod:`langgraph_ctx.edits`).

- ``adacom``: AdaCoM's manager side (arXiv "Learning Agent-Compatible Context
  Management"): the request a manager sees, its structured answer, a chat-model
  manager; ``adacom_offline``: a deterministic manager, the offline baseline.
  The middleware that runs them is
  :class:`langgraph_ctx.middleware.AdaptiveContextManager`.
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

__all__ = [
    "MANAGER_PROMPT",
    "NOTE_TITLE",
    "ChatModelManager",
    "ContextManagerPolicy",
    "ManagerAction",
    "ManagerRequest",
    "Modification",
    "OfflinePolicy",
    "listing",
]
