"""PACE and the prompt cache: the share of each prompt a provider's prefix cache could
serve, with PACE's levels held between re-selections (``PaceSettings.headroom``, the
default 0.2) and with a new selection every call (``headroom=0``: the paper's rule,
and what PACE did before), side by side, and the planted facts each keeps.

Run from the repo root::

    python benchmarks/prompt_cache_pace.py [--turns N] [--window W] [--seed N]

``create_context_agent(model, tools, strategy="pace", think=False,
budget=Budget.for_window(W))`` on the project's generated session
(:func:`~langgraph_ctx.testing.workloads.generate_session`, tool results of 1.2-6 KB, the
demo's), with the lexical scorer (the same in both runs, no model load) and
summaries made before each next call (``--summaries inline``; the background
timing otherwise decides what a call can show). Every ``call_llm`` prompt is
rendered and measured as ``benchmarks/prompt_cache.py`` measures it
(:class:`prompt_cache.PrefixMeter`: the tokens that are an exact prefix of the
previous prompt). **Facts kept**: of the turns whose question asks about an
earlier fact, those whose prompt holds the fact's value.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _common import emit, header, table
from langchain_core.messages import AIMessage, HumanMessage
from prompt_cache import BASE_PER_MTOK, CACHE_READ, CACHE_WRITE, PrefixMeter

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.demo import workload_tools
from langgraph_ctx.ledger import event_data
from langgraph_ctx.ledger.strategies import PaceContext
from langgraph_ctx.strategies import LexicalScorer, PaceSettings, PredictiveExtraction
from langgraph_ctx.strategies.pace import middleware as pace_middleware
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import Workload, generate_session


def inline_summaries() -> None:
    """Each summary made before the call goes on: the same levels on every run."""
    real = pace_middleware.start

    def start(*args: Any) -> Any:
        job = real(*args)
        job.future.result(timeout=60)
        return job

    pace_middleware.start = start  # type: ignore[assignment]


def run(workload: Workload, window: int, headroom: float) -> list[str]:
    meter = PrefixMeter()
    cached, total, calls, kept, asked = 0, 0, 0, 0, 0
    respond = workload.responder()

    def reply(messages: Any) -> AIMessage:
        nonlocal cached, total, calls
        c, t = meter.measure(messages)
        cached, total, calls = cached + c, total + t, calls + 1
        return respond(messages)

    model = ScriptedChatModel(default=reply, keep_calls=1)
    pace = PredictiveExtraction(
        scorer=LexicalScorer(), settings=PaceSettings(headroom=headroom), nodes=["call_llm"]
    )
    agent = create_context_agent(
        model,
        workload_tools(workload),
        strategy=pace,
        think=False,
        always_include=list(workload.tool_names),
        budget=Budget.for_window(window),
    )
    config: Any = {"configurable": {"thread_id": "pace"}, "recursion_limit": 60}
    started = time.perf_counter()
    held = selected = seen = 0
    for turn in workload.turns:
        message = HumanMessage(turn.user, id=f"t{turn.index:04d}-user")
        agent.invoke({"messages": [message]}, config)
        sent = "\n".join(m.text for m in model.calls[-1].messages) if model.calls else ""
        if turn.probe is not None:
            asked += 1
            kept += turn.probe.value in sent
        for e in agent.get_state(config).values["context_ledger"]:
            if e["seq"] < seen:
                continue
            seen = e["seq"] + 1
            pace = event_data(e, PaceContext)
            if pace is not None and pace["full"] < pace["scored"]:
                held += bool(pace.get("held"))
                selected += not pace.get("held")
    per_call = total / calls
    uncached = (total - cached) / calls
    cost = (CACHE_WRITE * uncached + CACHE_READ * (per_call - uncached)) * BASE_PER_MTOK / 1000
    label = f"headroom={headroom:g}" + (" (default)" if headroom == 0.2 else " (as before)")
    return [
        label,
        f"{calls:,}",
        f"{per_call:,.0f}",
        f"{100 * cached / total:.1f}%",
        f"${cost:,.2f}",
        f"{kept}/{asked}",
        f"{selected} / {held}",
        f"{time.perf_counter() - started:.0f}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--headroom", type=float, nargs="+", default=[0.0, 0.2])
    args = parser.parse_args()
    inline_summaries()
    workload = generate_session(args.turns, seed=args.seed, result_chars=(1_200, 6_000))
    rows = [run(workload, args.window, h) for h in args.headroom]
    head = [
        "PACE",
        "calls",
        "prompt tokens / call",
        "cacheable",
        "Anthropic-priced $/1K calls (reads 0.1x, writes 1.25x)",
        "facts kept",
        "condensing calls: selected anew / held",
        "seconds",
    ]
    lines = header("PACE and the prompt cache: levels held between re-selections")
    lines += [
        f"Generated session, {args.turns} turns (seed {args.seed}), {args.window:,}-token "
        "window, `think=False`, lexical scorer, summaries made before the next call. "
        "Cacheable: tokens of a prompt that are an exact prefix of the previous one "
        "(cl100k_base), as `benchmarks/prompt_cache.py` measures. `headroom=0` is PACE's "
        "selection before levels were held (every call, by relevance to that call's step), "
        "with the step holding the user's latest message whole, as now. Held prompts are "
        "larger (new steps join whole until the budget is reached) and cost less.",
        "",
        *table(head, rows),
        "",
        f"Command: `python benchmarks/prompt_cache_pace.py --turns {args.turns} "
        f"--window {args.window} --seed {args.seed}`.",
    ]
    emit("prompt_cache_pace", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
