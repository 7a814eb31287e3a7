"""Context strategies of the other papers, on the shared edit core (:mod:`langgraph_ctx.edits`).

- ``adacom``: AdaCoM's manager side (arXiv "Learning Agent-Compatible Context
  Management"): the request a manager sees, its structured answer, a chat-model
  manager; ``adacom_offline``: a deterministic manager, the offline baseline.
  The middleware that runs them is
  :class:`langgraph_ctx.middleware.AdaptiveContextManager`.
- ``pace``: PACE (arXiv "Predictive Adaptive Context Extraction"): the
  granularity decision (``pace``), the scorer (``pace_scorer``), the steps and
  their records (``pace_steps``), background summaries (``pace_summaries``) and
  the glimpse tool (``pace_glimpse``). The middleware is
  :class:`langgraph_ctx.middleware.PredictiveExtraction`.
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
from langgraph_ctx.strategies.pace import PaceSettings
from langgraph_ctx.strategies.pace_glimpse import GLIMPSE_LIMIT, StepSource, glimpse_tool
from langgraph_ctx.strategies.pace_scorer import (
    EmbeddingScorer,
    LexicalScorer,
    Scorer,
    default_scorer,
)

__all__ = [
    "GLIMPSE_LIMIT",
    "MANAGER_PROMPT",
    "NOTE_TITLE",
    "ChatModelManager",
    "ContextManagerPolicy",
    "EmbeddingScorer",
    "LexicalScorer",
    "ManagerAction",
    "ManagerRequest",
    "Modification",
    "OfflinePolicy",
    "PaceSettings",
    "Scorer",
    "StepSource",
    "default_scorer",
    "glimpse_tool",
    "listing",
]
