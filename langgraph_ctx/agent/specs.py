"""What a sub-agent is (:class:`SubAgentSpec`, checked when it is made) and all a
parent learns of a delegation (:class:`SubAgentResult`); :mod:`.subagents` runs them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from langgraph_ctx._checks import check_instance, check_int, check_str
from langgraph_ctx.budget import Budget
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.state import ArtifactRef
from langgraph_ctx.strategies.registry import STRATEGIES
from langgraph_ctx.tokens import TokenCounter

Kind = Literal["mcp", "tool", "workflow", "analysis", "composition", "custom"]
DEFAULT_WINDOWS: dict[str, int] = {
    "mcp": 32_000, "tool": 48_000, "workflow": 64_000, "analysis": 48_000,
    "composition": 32_000, "custom": 32_000,
}  # fmt: skip
"""The paper's per-kind budgets (Table 3); ``custom`` takes the smallest."""
NEEDS_TOOLS = frozenset({"mcp", "tool", "workflow"})


@dataclass(frozen=True, kw_only=True)
class SubAgentSpec:
    """What a sub-agent is. Invalid specs are rejected here, not at run time."""

    name: str
    """Identifier the parent uses to delegate to it."""
    kind: str
    """``mcp``, ``tool``, ``workflow``, ``analysis``, ``composition`` or ``custom``."""
    description: str
    """What it is for: shown to the parent model in the delegate tool."""
    system_prompt: str
    model: BaseChatModel
    tools: Sequence[BaseTool] = ()
    """Its curated tools, all bound on every call."""
    budget: Budget | None = None
    """Default: the kind's window with the default shares."""
    max_steps: int = 12
    """Most LLM calls before it is stopped with a ``step_limit`` result."""
    children: Sequence[SubAgentSpec] = ()
    """Sub-agents it may delegate to in turn."""
    strategy: str = "tiered"
    """How it keeps its own history in budget: a name of the ``strategy=`` registry
    (:data:`~langgraph_ctx.strategies.registry.STRATEGIES`)."""

    def __post_init__(self) -> None:
        check_str("SubAgentSpec.name", self.name)
        check_str("SubAgentSpec.kind", self.kind)
        check_str("SubAgentSpec.description", self.description)
        check_str("SubAgentSpec.system_prompt", self.system_prompt)
        check_instance("SubAgentSpec.model", self.model, BaseChatModel, "a LangChain chat model")
        check_int("SubAgentSpec.max_steps", self.max_steps)
        if self.budget is not None:
            check_instance("SubAgentSpec.budget", self.budget, Budget, "a Budget")
        if isinstance(self.tools, (str, bytes)) or not all(
            isinstance(t, BaseTool) for t in self.tools
        ):
            raise ConfigurationError(
                "SubAgentSpec.tools", f"expected BaseTools, got {self.tools!r}"
            )
        if not all(isinstance(c, SubAgentSpec) for c in self.children):
            raise ConfigurationError(
                "SubAgentSpec.children", f"expected SubAgentSpecs, got {self.children!r}"
            )
        if not self.name.isidentifier():
            raise ConfigurationError(
                "SubAgentSpec.name", f"must be an identifier, got {self.name!r}"
            )
        if self.kind not in DEFAULT_WINDOWS:
            raise ConfigurationError(
                "SubAgentSpec.kind", f"unknown kind {self.kind!r}; one of {sorted(DEFAULT_WINDOWS)}"
            )
        if self.kind in NEEDS_TOOLS and not self.tools:
            raise ConfigurationError("SubAgentSpec.tools", f"a {self.kind!r} sub-agent needs tools")
        if self.strategy not in STRATEGIES:
            raise ConfigurationError(
                "SubAgentSpec.strategy", f"must be one of {list(STRATEGIES)}, got {self.strategy!r}"
            )
        if self.max_steps < 1:
            raise ConfigurationError(
                "SubAgentSpec.max_steps", f"must be >= 1, got {self.max_steps}"
            )
        # As pre-flight counts it: the child's node sends it as a system message.
        needed = TokenCounter().count_message(SystemMessage(self.system_prompt))
        if needed > self.effective_budget.system:
            raise ConfigurationError(
                "SubAgentSpec.budget",
                f"{self.name!r}: the system prompt needs {needed} tokens, the budget allows "
                f"{self.effective_budget.system}",
            )

    @property
    def effective_budget(self) -> Budget:
        return self.budget or Budget.for_window(DEFAULT_WINDOWS[self.kind])


Status = Literal["ok", "failed", "depth_exceeded", "step_limit"]


class SubAgentResult(BaseModel):
    """All the parent learns of a delegation."""

    agent: str
    status: Status
    output: str | None = Field(
        default=None, description="the child's final answer, unless kept as an artifact"
    )
    summary: str = Field(description="what the child did, in a few sentences")
    tools_used: list[str] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0)
    caveats: list[str] = Field(default_factory=list)
    tokens_consumed: int = 0
    steps: int = 0
    artifact: ArtifactRef | None = None


class ArtifactStore:
    """Artifact contents by id, in memory. The state keeps only the reference."""

    def __init__(self) -> None:
        self._items: dict[str, str] = {}

    def put(self, content: str) -> str:
        artifact_id = f"artifact-{uuid.uuid4().hex[:12]}"
        self._items[artifact_id] = content
        return artifact_id

    def get(self, artifact_id: str) -> str | None:
        return self._items.get(artifact_id)


def failure(name: str, status: Status, why: str) -> SubAgentResult:
    return SubAgentResult(
        agent=name, status=status, output=None, summary=why, confidence=0.0, caveats=[why]
    )
