"""Tool-schema tokens per call with 60 realistic tools, and task success, side by side.

Strategies, all on the same scripted task sequence in one session:
- bind all 60 tools on every call;
- LangChain's LLMToolSelectorMiddleware in create_agent (an extra selection
  call per model step: its prompt, the user message and a schema listing all
  60 tools; counted);
- ours: create_context_agent (search_tools + session LRU cache, capacity 8,
  eviction to the tool budget), without and with the think node (a thought
  that names the planned tool lets fetch_tools load it with no search round).
The scripted model calls the task's tool when it is bound, else searches for
it. Success: the task's tool ran with the task's id.

Run: python benchmarks/tool_budget.py
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from _common import emit, header, table
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import TokenCounter
from langgraph_ctx.agent.nodes import reasoning_overhead
from langgraph_ctx.agent.prebuilt import create_context_agent
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.catalog import catalog_tools

TASKS = 40
COUNTER = TokenCounter()
TOOLS = catalog_tools(60)
PHRASES = {
    "get": "Fetch {noun} {id} and tell me about it",
    "search": "Search our {noun}s for anything about {id}",
    "update": "Update {noun} {id}: mark it reviewed",
    "list_recent": "List the recent {noun}s related to {id}",
    "export": "Export the {noun}s matching {id} to CSV",
    "create": "Create a {noun} record for {id}",
}


def tasks(seed: int = 7) -> list[tuple[str, str, str, str]]:
    """(user text, tool name, id argument name, id) per task; domains recur, as in real work."""
    rng = random.Random(seed)
    out = []
    hot = rng.sample(TOOLS, 10)  # most tasks reuse a small working set
    for i in range(TASKS):
        tool = rng.choice(hot) if rng.random() < 0.7 else rng.choice(TOOLS)
        verb, domain = tool.name.rsplit("_", 1)
        arg = next(iter(tool.args))
        noun = arg.removesuffix("_id")
        ident = f"{noun[:3].upper()}-{1000 + i}"
        text = PHRASES[verb].format(noun=noun, id=ident) + f" ({domain})."
        out.append((text, tool.name, arg, ident))
    return out


def responder(plan: dict[str, tuple[str, str, str]]) -> Any:
    def reply(messages: Sequence[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        user = next(m for m in reversed(messages) if m.type == "human")
        name, arg, ident = plan[user.text]
        last = next(m for m in reversed(messages) if m.type != "system")  # skip the thought
        if isinstance(last, ToolMessage) and last.name == name:
            return AIMessage(f"Done with {ident}.")
        bound = {t["function"]["name"] for t in tools}
        if name in bound:
            call = {"name": name, "args": {arg: ident}, "id": f"c-{ident}"}
        else:
            query = user.text.split("(")[-1].rstrip(").") + " " + name.replace("_", " ")
            call = {"name": "search_tools", "args": {"query": query}, "id": f"s-{ident}"}
        return AIMessage("", tool_calls=[call])

    return reply


def thought_for(plan: dict[str, tuple[str, str, str]]) -> Any:
    def think(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        user = next(m for m in reversed(messages) if m.type == "human")
        name, _, ident = plan[user.text]
        return {
            "hypothesis": f"the user needs {name} on {ident}",
            "confidence": 0.9,
            "gaps": [],
            "next_thought_needed": False,
            "actions": [{"kind": "tool_call", "detail": name, "expected_utility": 0.9}],
        }

    return think


def prompt_tokens(model: ScriptedChatModel) -> tuple[int, int, int]:
    """(tool-schema tokens, message tokens, calls) over every call the model received."""
    schemas = sum(COUNTER.count_tool(t) for c in model.calls for t in c.tools)
    messages = sum(COUNTER.count_messages(c.messages) for c in model.calls)
    return schemas, messages, len(model.calls)


def run_ours(work: list[tuple[str, str, str, str]], *, think: bool) -> dict[str, Any]:
    plan = {t: (n, a, i) for t, n, a, i in work}
    model = ScriptedChatModel(default=responder(plan), structured_default=thought_for(plan))
    agent = create_context_agent(
        model, TOOLS, think=think, tool_capacity=8, checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "ours"}, "recursion_limit": 60}
    ok = 0
    state: dict[str, Any] = {}
    for text, name, _, ident in work:
        state = agent.invoke({"messages": [HumanMessage(text)]}, config)
        ran = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == name]
        ok += bool(ran) and ident in ran[-1].text
    main = ScriptedChatModel()
    main._calls = [c for c in model.calls if not c.structured]
    think_calls = [c for c in model.calls if c.structured]
    return {
        "model": main,
        "ok": ok,
        "think": think_calls,
        "overhead": reasoning_overhead(state) if think else None,
    }


def run_create_agent(work: list[tuple[str, str, str, str]], *, selector: bool) -> dict[str, Any]:
    from langchain.agents import create_agent
    from langchain.agents.middleware import LLMToolSelectorMiddleware

    plan = {t: (n, a, i) for t, n, a, i in work}
    model = ScriptedChatModel(default=responder(plan))
    middleware: list[Any] = []
    picker = None
    if selector:

        def pick(messages: Sequence[BaseMessage]) -> dict[str, Any]:
            name = plan[messages[-1].text][0]
            others = [t.name for t in TOOLS if t.name != name][:2]
            return {"tools": [name, *others]}

        picker = ScriptedChatModel(structured_default=pick)
        middleware.append(LLMToolSelectorMiddleware(model=picker, max_tools=3))
    agent = create_agent(model, TOOLS, middleware=middleware, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "lc"}, "recursion_limit": 60}
    ok = 0
    for text, name, _, ident in work:
        state = agent.invoke({"messages": [HumanMessage(text)]}, config)
        ran = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == name]
        ok += bool(ran) and ident in ran[-1].text
    return {"model": model, "ok": ok, "think": picker.calls if picker else []}


def main() -> None:
    work = tasks()
    runs = {
        "bind all 60 tools": run_create_agent(work, selector=False),
        "LLMToolSelectorMiddleware (max 3)": run_create_agent(work, selector=True),
        "ours (search + LRU cache)": run_ours(work, think=False),
        "ours + think": run_ours(work, think=True),
    }
    rows = []
    for name, run in runs.items():
        schemas, messages, calls = prompt_tokens(run["model"])
        extra = sum(
            COUNTER.count_messages(c.messages) + sum(COUNTER.count_tool(t) for t in c.tools)
            for c in run["think"]
        )
        total = schemas + messages + extra
        rows.append(
            [
                name,
                f"{run['ok']}/{len(work)}",
                str(calls),
                f"{schemas / calls:,.0f}",
                f"{len(run['think'])}",
                f"{extra / len(work):,.0f}",
                f"{total / len(work):,.0f}",
            ]
        )
    all_tools = sum(COUNTER.count_tool(t) for t in TOOLS)
    ours = runs["ours + think"]
    lines = header("Tool schema budget: 60 tools")
    lines += [
        "Command: `python benchmarks/tool_budget.py`",
        "",
        f"{len(work)} tasks in one session, each needing one of 60 catalog tools "
        f"(schemas total {all_tools:,} tokens, cl100k_base); a working set of 10 tools "
        "covers 70% of tasks. Scripted models; the same task script for every strategy.",
        "",
        *table(
            [
                "strategy",
                "tasks done",
                "model calls",
                "schema tokens / call",
                "extra calls",
                "extra tokens / task",
                "prompt tokens / task",
            ],
            rows,
        ),
        "",
        "Extra calls: the selector's structured call (its prompt, the user message and a "
        "schema listing every tool) or our think node's structured call.",
        f"Reasoning overhead ratio with think (reasoning tokens / actionable tokens): "
        f"{ours['overhead']:.2f}.",
        "",
        json.dumps({"tasks": len(work), "tool_schema_tokens_all": all_tools}),
    ]
    emit("tool_budget", lines)


if __name__ == "__main__":
    main()
