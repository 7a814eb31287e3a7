"""The context strategies, one folder each, and the registry that names them.

- ``tiered/``: tiered compression, the default (:class:`TieredCompression`).
- ``adacom/``: AdaCoM, a manager that edits the history (:class:`AdaptiveContextManager`).
- ``arc/``: ARC, checklist, interaction memory and reflection (:class:`ReflectiveContextManager`).
- ``bacm/``: BACM, the agent folds with a tool, shown its budget (:class:`BudgetAwareFolding`).
- ``pace/``: PACE, each step shown at the granularity it earns (:class:`PredictiveExtraction`).
- ``none/``: nothing rewrites the history (:class:`NoStrategy`).

:mod:`.registry` maps each name to its folder's ``build`` (:data:`STRATEGIES`,
:func:`strategy_middleware`); :mod:`.base` holds what they share
(:class:`ContextStrategy`, :class:`RewritingStrategy`, the offline baselines' base).
Each folder's modules hold the rest (prompts, managers, offline rules): import
them from there, e.g. ``langgraph_ctx.strategies.arc.manager``.
"""

from langgraph_ctx.strategies.adacom.middleware import AdaptiveContextManager
from langgraph_ctx.strategies.arc.middleware import ReflectiveContextManager
from langgraph_ctx.strategies.bacm.middleware import BudgetAwareFolding
from langgraph_ctx.strategies.base import ContextStrategy, RewritingStrategy
from langgraph_ctx.strategies.none.middleware import NoStrategy
from langgraph_ctx.strategies.pace.middleware import PredictiveExtraction
from langgraph_ctx.strategies.pace.policy import PaceSettings
from langgraph_ctx.strategies.pace.scorer import LexicalScorer
from langgraph_ctx.strategies.pace.state import PaceState
from langgraph_ctx.strategies.tiered.middleware import TieredCompression

__all__ = [
    "AdaptiveContextManager",
    "BudgetAwareFolding",
    "ContextStrategy",
    "LexicalScorer",
    "NoStrategy",
    "PaceSettings",
    "PaceState",
    "PredictiveExtraction",
    "ReflectiveContextManager",
    "RewritingStrategy",
    "TieredCompression",
]
