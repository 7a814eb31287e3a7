"""Sub-agents: focused children in clean contexts that return compact results (paper, section 7).

A parent delegates a task either at run time, through the ``delegate`` tool
its model calls, or statically, as a graph node. The child starts from a
clean state (its system prompt, the task, the inputs, its curated tools),
never the parent's history, and runs the full pipeline under its own budget.
Only a typed :class:`SubAgentResult`, capped in tokens, returns to the parent;
a larger output is kept as an artifact and the parent sees its summary and id.

Children run as subgraphs of the parent's graph: compiled without a
checkpointer, they checkpoint under the parent's thread in their own
namespace, so a parent resumed mid-delegation resumes the child where it was.
Depth is carried in the run's config; past ``max_depth``, on an exception or
at the step limit, the parent gets a result saying so and goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.config import merge_configs
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.errors import GraphRecursionError
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import BaseModel, Field

# What a sub-agent is and returns lives in .specs; named from here too, where users
# import sub-agents from.
from langgraph_ctx.agent.specs import DEFAULT_WINDOWS as DEFAULT_WINDOWS
from langgraph_ctx.agent.specs import NEEDS_TOOLS as NEEDS_TOOLS
from langgraph_ctx.agent.specs import ArtifactStore as ArtifactStore
from langgraph_ctx.agent.specs import Kind as Kind
from langgraph_ctx.agent.specs import Status as Status
from langgraph_ctx.agent.specs import SubAgentResult as SubAgentResult
from langgraph_ctx.agent.specs import SubAgentSpec as SubAgentSpec
from langgraph_ctx.agent.specs import failure
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.strategies import Delegation
from langgraph_ctx.state import ArtifactRef, LedgerEntry, ledger_entry
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.tokens import TokenCounter

DEPTH_KEY = "lgctx_depth"


@dataclass
class SubAgents:
    """The sub-agents a parent may spawn, and how results come back."""

    specs: Sequence[SubAgentSpec]
    max_depth: int = 2
    """How deep children may nest: the parent's children are depth 1."""
    result_cap: int = 1_500
    """Most tokens a result may take in the parent's context."""
    archive: MessageArchive | None = None
    """Where the children's strategies archive what they take out, each child in its
    own namespace of the parent's thread, so a parent resumed mid-delegation finds
    its child's originals. ``None``: the parent's, when :meth:`tool` is given to a
    context agent that has one (``create_context_agent`` on a database: its
    database's), else each child's in memory. (The event log is not shared: each
    delegation's ledger counts from 0 in the same namespace, so a second one's
    events would be dropped as repeats of the first's.)"""
    artifacts: ArtifactStore = field(default_factory=ArtifactStore)
    counter: TokenCounter = field(default_factory=TokenCounter)

    def __post_init__(self) -> None:
        names = [s.name for s in self.specs]
        if len(set(names)) != len(names):
            raise ConfigurationError("SubAgents.specs", f"duplicate names in {names}")
        if self.max_depth < 1:
            raise ConfigurationError("SubAgents.max_depth", f"must be >= 1, got {self.max_depth}")
        self._by_name = {s.name: s for s in self.specs}
        self._graphs: dict[str, CompiledStateGraph[Any, Any, Any, Any]] = {}

    # -- running a child ---------------------------------------------------

    def graph(self, name: str) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The child's compiled graph (no checkpointer: it inherits the parent's)."""
        if name not in self._graphs:
            from langgraph_ctx.agent.prebuilt import build_context_agent

            spec = self._by_name[name]
            tools = list(spec.tools)
            if spec.children:
                nested = SubAgents(
                    spec.children,
                    max_depth=self.max_depth,
                    result_cap=self.result_cap,
                    archive=self.archive,
                    artifacts=self.artifacts,
                )
                tools.append(nested.tool())
            builder = build_context_agent(
                spec.model,
                tools,
                system_prompt=spec.system_prompt,
                budget=spec.effective_budget,
                always_include=[t.name for t in tools],
                think=False,
                archive=self.archive,
                strategy=spec.strategy,
            )
            self._graphs[name] = builder.compile(name=name)
        return self._graphs[name]

    def run(
        self, name: str, task: str, inputs: Mapping[str, Any], config: RunnableConfig
    ) -> SubAgentResult:
        """Run sub-agent ``name`` on ``task``; never raises for the child's failures."""
        child = self._prepare(name, task, inputs, config)
        if child.outcome is None:
            with child.capture():
                child.conclude(self.graph(name).invoke(child.input, child.config))
        return child.result()

    async def arun(
        self, name: str, task: str, inputs: Mapping[str, Any], config: RunnableConfig
    ) -> SubAgentResult:
        """Async :meth:`run`."""
        child = self._prepare(name, task, inputs, config)
        if child.outcome is None:
            with child.capture():
                child.conclude(await self.graph(name).ainvoke(child.input, child.config))
        return child.result()

    def _prepare(
        self, name: str, task: str, inputs: Mapping[str, Any], config: RunnableConfig
    ) -> _Delegation:
        spec = self._by_name.get(name)
        if spec is None:
            why = f"no sub-agent named {name!r}; known: {sorted(self._by_name)}"
            return _Delegation.refused(name, "failed", why)
        depth = int(config.get("configurable", {}).get(DEPTH_KEY, 0)) + 1
        if depth > self.max_depth:
            why = f"delegation depth {depth} exceeds the limit {self.max_depth}"
            return _Delegation.refused(name, "depth_exceeded", why)
        body = (
            task if not inputs else f"{task}\n\nInputs (JSON):\n{json.dumps(inputs, default=str)}"
        )
        child_config = merge_configs(
            config,
            {
                "configurable": {DEPTH_KEY: depth},
                # Each LLM step is about three graph steps: fetch_tools, call_llm, tools.
                "recursion_limit": 3 * spec.max_steps + 2,
            },
        )
        return _Delegation(name, {"messages": [HumanMessage(body)]}, child_config, spec, self)

    def _result(self, spec: SubAgentSpec, state: Mapping[str, Any]) -> SubAgentResult:
        messages: list[BaseMessage] = state.get("messages") or []
        replies = [m for m in messages if isinstance(m, AIMessage)]
        final = replies[-1].text if replies else ""
        tools_used = list(dict.fromkeys(c["name"] for m in replies for c in m.tool_calls))
        reported = [m.usage_metadata for m in replies if m.usage_metadata]
        consumed = (
            sum(u["input_tokens"] + u["output_tokens"] for u in reported)
            if reported
            else self.counter.count_messages(messages)
        )
        failed_tools = [
            m.text[:200] for m in messages if isinstance(m, ToolMessage) and m.status == "error"
        ]
        steps = len(replies)
        summary = (
            f"{spec.name} ({spec.kind}) took {steps} step(s)"
            + (f" using {', '.join(tools_used)}" if tools_used else "")
            + "."
        )
        return SubAgentResult(
            agent=spec.name,
            status="ok",
            output=final,
            summary=summary,
            tools_used=tools_used,
            # No self-assessment from the child: a clean finish is fairly, not fully, sure.
            confidence=0.6 if failed_tools else 0.8,
            caveats=failed_tools,
            tokens_consumed=consumed,
            steps=steps,
        )

    # -- what the parent sees ------------------------------------------------

    def render(self, result: SubAgentResult) -> tuple[str, SubAgentResult]:
        """The result as the parent sees it, within ``result_cap`` tokens."""
        text = result.model_dump_json(exclude_none=True)
        if self.counter.count_text(text) <= self.result_cap or result.output is None:
            return text, result
        artifact_id = self.artifacts.put(result.output)
        head = self._head(result.output, self.result_cap // 3)
        ref = ArtifactRef(
            type="subagent_output", id=artifact_id, summary=f"{result.agent} output, starts: {head}"
        )
        capped = result.model_copy(update={"output": None, "artifact": ref})
        return capped.model_dump_json(exclude_none=True), capped

    def _head(self, text: str, tokens: int) -> str:
        words = text.split()
        while words and self.counter.count_text(" ".join(words)) > tokens:
            words = words[: len(words) * 3 // 4]
        return " ".join(words) + " ..."

    def _update(
        self, result: SubAgentResult, text: str, tool_call_id: str, state: Mapping[str, Any]
    ) -> dict[str, Any]:
        update: dict[str, Any] = {
            "messages": [
                ToolMessage(
                    text,
                    tool_call_id=tool_call_id,
                    name="delegate",
                    status="success" if result.status == "ok" else "error",
                )
            ]
        }
        if result.artifact is not None:
            update["artifacts"] = {result.artifact["id"]: result.artifact}
        result_tokens = self.counter.count_text(text)
        update["context_ledger"] = [
            self._entry(
                state,
                tool_call_id,
                Delegation(
                    agent=result.agent,
                    status=result.status,
                    steps=result.steps,
                    tokens_consumed=result.tokens_consumed,
                    result_tokens=result_tokens,
                    boundary_ratio=round(result.tokens_consumed / max(result_tokens, 1), 2),
                ),
            )
        ]
        return update

    @staticmethod
    def _entry(state: Mapping[str, Any], tool_call_id: str, data: Delegation) -> LedgerEntry:
        # Parallel delegations in one step each take the next number after the
        # ledger's last, offset by their call's position, so none collide.
        ledger = state.get("context_ledger") or []
        last = (state.get("messages") or [None])[-1]
        ids = [c["id"] for c in getattr(last, "tool_calls", None) or []]
        offset = ids.index(tool_call_id) if tool_call_id in ids else 0
        entry = ledger_entry("delegation", "tools", data, after=ledger or None)
        entry["seq"] += offset
        return entry

    def share_archive(self, archive: MessageArchive | None) -> None:
        """Take the parent's ``archive`` if this has none and no child is built yet
        (a built child keeps the archive it was built with)."""
        if self.archive is None and not self._graphs:
            self.archive = archive

    def tool(self) -> BaseTool:
        """The ``delegate`` tool: the parent model hands a task to a sub-agent."""
        catalog = "\n".join(f"- {s.name} ({s.kind}): {s.description}" for s in self.specs)

        # The arguments are declared once, in _DelegateCall; the two functions
        # differ only in running the child with invoke or ainvoke.
        def delegate(config: RunnableConfig, **call: Any) -> Command[Any]:
            return self._reply(
                self.run(call["agent"], call["task"], call.get("inputs") or {}, config), call
            )

        async def adelegate(config: RunnableConfig, **call: Any) -> Command[Any]:
            return self._reply(
                await self.arun(call["agent"], call["task"], call.get("inputs") or {}, config), call
            )

        found = _DelegateTool.from_function(
            delegate,
            coroutine=adelegate,
            name="delegate",
            args_schema=_DelegateCall,
            description=(
                "Hand a self-contained task to a specialised sub-agent that works in a clean "
                "context and returns a compact result. Put everything it needs in `task` and "
                "`inputs` (JSON): it cannot see this conversation. Sub-agents:\n" + catalog
            ),
        )
        found.subagents = self  # how the parent's agent finds them, to share its archive
        return found

    def _reply(self, result: SubAgentResult, call: Mapping[str, Any]) -> Command[Any]:
        text, result = self.render(result)
        return Command(update=self._update(result, text, call["tool_call_id"], call["state"]))

    def node(
        self, name: str, task: Callable[[Mapping[str, Any]], tuple[str, dict[str, Any]]]
    ) -> Runnable[Any, dict[str, Any]]:
        """A graph node that always delegates to ``name``: ``task(state)`` gives task and inputs."""
        if name not in self._by_name:
            raise ConfigurationError("SubAgents.node", f"no sub-agent named {name!r}")

        def finish(result: SubAgentResult) -> dict[str, Any]:
            text, result = self.render(result)
            update: dict[str, Any] = {"messages": [AIMessage(text, name=name)]}
            if result.artifact is not None:
                update["artifacts"] = {result.artifact["id"]: result.artifact}
            return update

        def run(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            return finish(self.run(name, *task(state), config))

        async def arun(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            return finish(await self.arun(name, *task(state), config))

        return RunnableLambda(run, afunc=arun, name=name)


class _DelegateTool(StructuredTool):
    """The ``delegate`` tool, knowing the :class:`SubAgents` it runs."""

    subagents: Any = Field(default=None, exclude=True)
    """Read by ``build_context_agent`` (by name: it cannot import this module) to
    hand its archive to :meth:`SubAgents.share_archive`."""


class _DelegateCall(BaseModel):
    """The ``delegate`` tool's arguments: what the model writes, then what LangGraph injects."""

    agent: str
    task: str
    inputs: dict[str, Any] | None = None
    tool_call_id: Annotated[str, InjectedToolCallId]
    state: Annotated[dict[str, Any], InjectedState]


@dataclass
class _Delegation:
    """One child run: what it is given, then how it ended. ``run`` and ``arun`` differ
    only in how they invoke the child; everything else about a run is here."""

    name: str
    input: Any
    config: RunnableConfig
    spec: SubAgentSpec | None = None
    agents: SubAgents | None = None
    outcome: SubAgentResult | None = None

    @classmethod
    def refused(cls, name: str, status: Status, why: str) -> _Delegation:
        return cls(name, None, {}, outcome=failure(name, status, why))

    @contextmanager
    def capture(self) -> Iterator[None]:
        """Turn the child's exception into its result: its failure is the parent's information."""
        assert self.spec is not None
        try:
            yield
        except GraphRecursionError:
            self.outcome = failure(
                self.name, "step_limit", f"stopped after {self.spec.max_steps} steps"
            )
        except Exception as exc:
            self.outcome = failure(self.name, "failed", f"{type(exc).__name__}: {exc}")

    def conclude(self, state: Mapping[str, Any]) -> None:
        assert self.spec is not None and self.agents is not None
        self.outcome = self.agents._result(self.spec, state)

    def result(self) -> SubAgentResult:
        assert self.outcome is not None
        return self.outcome
