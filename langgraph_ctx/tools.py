"""Dynamic tool context: a registry, a session LRU cache in state, search, and a tools node.

Tool schemas cost tokens on every call whether or not they are used. The
registry knows every tool and what its schema costs; a session binds only
the always-include set plus the tools it has discovered, kept in the state's
``tool_cache`` (least recently used first) so a resumed session keeps them.
``search_tools`` discovers tools by name and description; the
:class:`~langgraph_ctx.middleware.ToolEviction` middleware drops the least
recently used when the cache is over capacity or over the tool budget.

``tool_cache`` updates are operations, merged by :func:`lru_reducer`: a
name moves that tool to the most-recently-used end; ``"-name"`` evicts it.
Operations, not whole lists, so that two writers in one step (the tools node
and ``search_tools``) cannot overwrite each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.text import BM25
from langgraph_ctx.state import lru_reducer
from langgraph_ctx.tokens import TokenCounter

__all__ = ["SEARCH_TOOLS", "ToolRegistry", "lru_reducer", "search_tools_tool", "tools_node"]

SEARCH_TOOLS = "search_tools"


class ToolRegistry:
    """Every tool an agent may use, with the token cost of each schema."""

    def __init__(
        self,
        tools: Sequence[BaseTool],
        *,
        always_include: Sequence[str] = (),
        counter: TokenCounter | None = None,
    ) -> None:
        self._tools: dict[str, BaseTool] = {}
        if isinstance(tools, BaseTool) or not isinstance(tools, Sequence):
            raise ConfigurationError("tools", f"expected a list of tools, got {tools!r:.80}")
        for i, t in enumerate(tools):
            if not isinstance(t, BaseTool):
                raise ConfigurationError(
                    "tools",
                    f"item {i}: expected a LangChain tool (decorate a function with @tool), "
                    f"got {t!r:.80}",
                )
            if t.name in self._tools or t.name == SEARCH_TOOLS:
                raise ConfigurationError("tools", f"duplicate or reserved tool name {t.name!r}")
            self._tools[t.name] = t
        unknown = sorted(set(always_include) - set(self._tools))
        if unknown:
            raise ConfigurationError("always_include", f"names unknown tools {unknown}")
        self.always = tuple(always_include)
        self._order = {name: i for i, name in enumerate(self._tools)}
        counter = counter or TokenCounter()
        self.cost = {name: counter.count_tool(t) for name, t in self._tools.items()}
        """Schema tokens per tool."""
        self.search_tool = search_tools_tool(self)
        self.cost[SEARCH_TOOLS] = counter.count_tool(self.search_tool)
        # The name twice: it says what a tool does in the fewest words.
        self._index = BM25([f"{n} {n} {t.description}" for n, t in self._tools.items()])

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> BaseTool | None:
        return self.search_tool if name == SEARCH_TOOLS else self._tools.get(name)

    def search(self, query: str, *, k: int = 5) -> list[str]:
        """Tool names ranked by relevance to the query (BM25 on name and description)."""
        scores = dict(zip(self._tools, self._index.scores(query), strict=True))
        ranked = sorted((n for n, s in scores.items() if s > 0), key=lambda n: -scores[n])
        return ranked[:k]

    def bound_names(self, cache: Sequence[str]) -> list[str]:
        """What a call binds: ``search_tools``, the always-include set, then the cache's
        tools in the registry's order.

        Not in the cache's LRU order: tool schemas come first in a provider's prompt,
        so a list reordered each time a tool is used would cost the prompt cache
        everything after it. Only a change of the set (a tool found, one evicted)
        changes what is bound.
        """
        names = [SEARCH_TOOLS, *self.always]
        fixed = set(names)
        cached = [n for n in cache if n in self._order and n not in fixed]
        names += sorted(cached, key=lambda n: self._order[n])
        return names

    def bound(self, state: Mapping[str, Any]) -> list[BaseTool]:
        """The tools bound for a state: use as ``Pipeline(tools=registry.bound)``."""
        names = self.bound_names(state.get("tool_cache") or ())
        return [t for t in (self.get(n) for n in names) if t is not None]

    def all_tools(self) -> list[BaseTool]:
        return [self.search_tool, *self._tools.values()]


def search_tools_tool(registry: ToolRegistry, *, k: int = 5) -> BaseTool:
    """The meta-tool: finds tools by name and description and loads them."""

    @tool(SEARCH_TOOLS)
    def search_tools(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Find tools by what they do and load them for your next steps.

        Use it when you need a capability you do not have, or when a tool you
        called is not loaded. ``query``: words describing the capability.
        """
        found = registry.search(query, k=k)
        if found:
            lines = [
                f"- {n}: {registry.get(n).description.splitlines()[0]}"  # type: ignore[union-attr]
                for n in found
            ]
            text = "Loaded these tools; call them directly now:\n" + "\n".join(lines)
        else:
            text = f"No tool matches {query!r}. Try other words."
        return Command(
            update={
                "tool_cache": found,
                "messages": [ToolMessage(text, tool_call_id=tool_call_id, name=SEARCH_TOOLS)],
            }
        )

    return search_tools


def tools_node(registry: ToolRegistry) -> Runnable[Any, Any]:
    """Runs the last assistant message's tool calls; refuses tools that are not bound.

    A call to a tool that exists but is not loaded (evicted, or never
    discovered) gets a tool message telling the agent to use ``search_tools``;
    an unknown tool gets one too. Neither raises. Used tools are touched in
    the LRU cache.
    """
    runner = ToolNode(registry.all_tools(), handle_tool_errors=True)

    def split(state: Mapping[str, Any]) -> tuple[AIMessage, list[Any], list[ToolMessage]]:
        message = state["messages"][-1]
        if not isinstance(message, AIMessage):
            raise ConfigurationError("tools", "the tools node must follow an assistant message")
        bound = set(registry.bound_names(state.get("tool_cache") or ()))
        ok, refused = [], []
        for call in message.tool_calls:
            if call["name"] in bound:
                ok.append(call)
                continue
            known = registry.get(call["name"]) is not None
            refused.append(
                ToolMessage(
                    f"Tool {call['name']!r} is {'not loaded' if known else 'unknown'}. "
                    f"Call {SEARCH_TOOLS} with a description of what you need to load it.",
                    tool_call_id=str(call["id"]),
                    name=call["name"],
                    status="error",
                )
            )
        return message, ok, refused

    def finish(output: Any, ok: list[Any], refused: list[ToolMessage]) -> list[Any]:
        updates = list(output) if isinstance(output, list) else [output] if output else []
        used = [c["name"] for c in ok if c["name"] != SEARCH_TOOLS]
        extra: dict[str, Any] = {"tool_cache": used}
        if refused:
            extra["messages"] = refused
        return [*updates, Command(update=extra)]

    def with_calls(state: Mapping[str, Any], message: AIMessage, ok: list[Any]) -> dict[str, Any]:
        narrowed = message.model_copy(update={"tool_calls": ok})
        return {**state, "messages": [*state["messages"][:-1], narrowed]}

    def run(state: Mapping[str, Any], config: RunnableConfig) -> list[Any]:
        message, ok, refused = split(state)
        output = runner.invoke(with_calls(state, message, ok), config) if ok else None
        return finish(output, ok, refused)

    async def arun(state: Mapping[str, Any], config: RunnableConfig) -> list[Any]:
        message, ok, refused = split(state)
        output = await runner.ainvoke(with_calls(state, message, ok), config) if ok else None
        return finish(output, ok, refused)

    return RunnableLambda(run, afunc=arun, name="tools")
