"""Prompt caching when the agent thinks: what the per-call thought costs each provider.

Run from the repo root::

    python benchmarks/prompt_cache_think.py [--turns N] [--seed N] [--window N]

``create_context_agent`` thinks before acting by default: the ``think`` node asks
the model for a structured thought, and ``call_llm`` shows that thought to the
model in the turn's user message, for that call only. The next turn sends that
user message without it. A prefix cache (OpenAI's) loses one turn; Anthropic's
finds entries only where a breakpoint was, and every entry written at the end of
a prompt held the thought, so unless a breakpoint sits before the message that
carries it, nothing after the system block is found again.

The agent (a compiled graph, an in-memory checkpointer, one ``invoke`` per turn,
the scripted model) replays the long-horizon workload's turns
(:func:`~langgraph_ctx.testing.workloads.generate_session`, the same generator as
``prompt_cache``): each turn's user message, one tool call whose result is that
turn's tool results, then the turn's answer. Every model call, ``call_llm``'s and
``think``'s, is measured on the real ``ChatOpenAI`` and ``ChatAnthropic``
payloads under each provider's caching rules (``benchmarks/harness/provider_cache.py``),
with the breakpoints ``mark_breakpoints`` adds (what ``call_llm`` and ``think``
send an Anthropic model) and with those of LangChain's
``AnthropicPromptCachingMiddleware`` alone (the last tool, the end of the system
block, the end of the prompt).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from _common import emit, header, table
from harness.provider_cache import ProviderMeters
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.testing import ScriptedChatModel, thought_about_the_question
from langgraph_ctx.testing.workloads import generate_session
from langgraph_ctx.tokens import load_encoding

BASE_PER_MTOK, CACHE_READ, CACHE_WRITE = 3.00, 0.10, 1.25  # Claude Sonnet 4.5 (prompt_cache.py)
SYSTEM = "You are an operations agent for a logistics company. Be exact about ids and amounts."


def run(turns: int, seed: int, window: int, think: bool) -> dict[str, list[Any]]:
    """Every model call of one session: ``{"call_llm": [...], "think": [...]}``, each a
    ``(messages, tools)`` pair as the model received it."""
    script = generate_session(
        turns, seed=seed, tool_rate=1.0, result_chars=(2_400, 4_800), probe_rate=0.05
    )

    @tool
    def lookup(turn: int) -> str:
        """What the operations systems hold for this step (orders, logs, documents)."""
        return "\n\n".join(s.result for s in script.turns[turn].tool_steps) or "nothing"

    def act(messages: Sequence[BaseMessage]) -> AIMessage:
        asked = next(m for m in reversed(messages) if m.type == "human").text
        turn = next(t for t in script.turns if t.user in asked)
        if messages[-1].type == "tool":
            return AIMessage(turn.answer)
        call = {"name": "lookup", "args": {"turn": turn.index}, "id": f"l{turn.index}"}
        return AIMessage("", tool_calls=[call])

    model = ScriptedChatModel(default=act)
    thinker = ScriptedChatModel(
        structured_default=thought_about_the_question("tool_call", "lookup")
    )
    agent = create_context_agent(
        model,
        [lookup],
        always_include=["lookup"],
        system_prompt=SYSTEM,
        budget=Budget.for_window(window),
        think=think,
        think_model=thinker,
    )
    config: Any = {"configurable": {"thread_id": "think"}}
    for turn in script.turns[:turns]:
        agent.invoke({"messages": [HumanMessage(turn.user)]}, config)
    return {
        "call_llm": [(c.messages, c.tools) for c in model.calls],
        "think": [(c.messages, c.tools) for c in thinker.calls],
    }


def measure(calls: list[Any], marks: bool) -> list[float]:
    """OpenAI's cached share, Anthropic's, Anthropic's uncached tokens a call and its
    cost per 1,000 calls (reads 0.1x, the rest written at 1.25x)."""
    encoding = load_encoding()
    assert encoding is not None
    meters = ProviderMeters(encoding.encode, marks=marks)
    totals = [0, 0, 0, 0]
    for messages, tools in calls:
        for i, value in enumerate(meters.measure(messages, tools)):
            totals[i] += value
    oa_cached, oa_total, an_cached, an_total = totals
    n = max(1, len(calls))
    uncached, per_call = (an_total - an_cached) / n, an_total / n
    cost = (CACHE_WRITE * uncached + CACHE_READ * (per_call - uncached)) * BASE_PER_MTOK / 1000
    return [oa_cached / max(1, oa_total), an_cached / max(1, an_total), uncached, cost]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--window", type=int, default=32_000)
    args = parser.parse_args(argv)
    rows = []
    for think in (False, True):
        sessions = run(args.turns, args.seed, args.window, think)
        for node in ("call_llm", "think") if think else ("call_llm",):
            calls = sessions[node]
            for marks in (False, True):
                oa, an, uncached, cost = measure(calls, marks)
                breakpoints = "ours (`mark_breakpoints`)" if marks else "LangChain's only"
                rows.append(
                    [
                        "on" if think else "off",
                        f"`{node}`",
                        breakpoints,
                        f"{len(calls):,}",
                        f"{100 * oa:.1f}%",
                        f"{100 * an:.1f}%",
                        f"{uncached:,.0f}",
                        f"${cost:,.2f}",
                    ]
                )
                print(rows[-1], file=sys.stderr)
    head = [
        "think",
        "calls of",
        "Anthropic breakpoints",
        "calls",
        "OpenAI: cached",
        "Anthropic: cached",
        "Anthropic: uncached / call",
        "Anthropic $/1K (reads 0.1x, writes 1.25x)",
    ]
    lines = header("Prompt caching when the agent thinks")
    lines += [
        f"`create_context_agent` with and without `think` (its default is on), "
        f"{args.turns:,} turns of the long-horizon workload (seed {args.seed}, a "
        f"{args.window:,}-token window, so it compresses), one tool call a turn. Every "
        "call measured on the real `ChatOpenAI` and `ChatAnthropic` payloads, tools "
        "included, under each provider's caching rules "
        "(`benchmarks/harness/provider_cache.py`; prices as in `prompt_cache`), with "
        "the breakpoints `call_llm` and `think` mark for an Anthropic model, and with "
        "those of LangChain's `AnthropicPromptCachingMiddleware` alone (the last tool, "
        "the end of the system block, the end of the prompt).",
        "",
        *table(head, rows),
        "",
    ]
    command = "python benchmarks/prompt_cache_think.py"
    if argv:
        command += " " + " ".join(argv)
    lines += [f"Command: `{command}`."]
    emit("prompt_cache_think", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
