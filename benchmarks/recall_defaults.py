"""Answers kept with ``create_context_agent``'s defaults, recall on and off, per window.

Run from the repo root::

    python benchmarks/recall_defaults.py [--quick] [--seeds N] [--turns N]
        [--windows 4096 8192 ...] [--strategies tiered ...]

Each seed scripts one session (:func:`~langgraph_ctx.testing.workloads.generate_session`):
facts stated once (by the user or in a tool result), long tool results as filler,
and later turns that ask about a fact in other words. The agent is
``create_context_agent(model, tools, budget=Budget.for_window(W), recall=...,
think=False)``, everything else its defaults; the model is the scripted one. A
probe is **kept** when the fact's value is in the prompt of the question's call
(the first model call of the turn that asks it). Also counted: compressions that
ended ``budget_unreachable``, and the question call's prompt as a share of the
red line (how much of the room it used).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from _common import emit, header, table
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.cli.demo import workload_tools
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.testing.workloads import NO_CONTEXT, Turn, Workload, generate_session
from langgraph_ctx.tokens import TokenCounter


def responder(workload: Workload) -> Any:
    """Replies for the turn the prompt is at: the last user message holding a turn's
    text (recall may have put its block before it), else the turn of a tool call id."""
    by_call = {s.call_id: t for t in workload.turns for s in t.tool_steps}
    by_user = {t.user: t for t in workload.turns}

    def reply(turn: Turn, called: bool) -> AIMessage:
        if turn.tool_steps and not called:
            calls = [
                {"name": s.name, "args": s.args, "id": s.call_id, "type": "tool_call"}
                for s in turn.tool_steps
            ]
            return AIMessage("", tool_calls=calls)
        return AIMessage(turn.answer)

    def respond(messages: Sequence[BaseMessage]) -> AIMessage:
        for m in reversed(messages):
            if isinstance(m, ToolMessage) and m.tool_call_id in by_call:
                return reply(by_call[m.tool_call_id], True)
            if isinstance(m, HumanMessage):
                text = m.text
                for user, turn in by_user.items():
                    if text.endswith(user):
                        return reply(turn, False)
        return AIMessage(NO_CONTEXT)

    return respond


class Events:
    """Every ledger event the agent writes, by kind."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()

    def write(self, thread_id: str, namespace: str, entries: Sequence[Any]) -> None:
        self.kinds.update(e["kind"] for e in entries)

    async def awrite(self, thread_id: str, namespace: str, entries: Sequence[Any]) -> None:
        self.write(thread_id, namespace, entries)


def run(
    seed: int, turns: int, window: int, recall: bool, strategy: str
) -> tuple[int, int, int, int, list[float]]:
    """``(kept, probes, compressions, unreachable, question prompt / red line)``."""
    workload = generate_session(turns, seed=seed)
    model = ScriptedChatModel(default=responder(workload), keep_calls=None)
    events = Events()
    budget = Budget.for_window(window)
    agent = create_context_agent(
        model,
        workload_tools(workload),
        budget=budget,
        recall=recall,
        think=False,
        strategy=strategy,
        always_include=list(workload.tool_names),
        events=events,
    )
    config = {"configurable": {"thread_id": f"s{seed}"}, "recursion_limit": 50}
    counter = TokenCounter()
    kept = probes = 0
    shares: list[float] = []
    for turn in workload.turns:
        first = len(model.calls)
        agent.invoke({"messages": [HumanMessage(turn.user, id=f"u{turn.index}")]}, config)
        if turn.probe is not None and turn.index > 0:
            prompt = model.calls[first]
            probes += 1
            kept += turn.probe.value in prompt.text
            used = sum(counter.count_message(m) for m in prompt.messages)
            shares.append(used / budget.red_line)
        del model.calls[: len(model.calls)]
    kinds = events.kinds
    return kept, probes, kinds["compression"], kinds["budget_unreachable"], shares


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds of 60 turns")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--windows", type=int, nargs="+", default=[4096, 8192, 32_768])
    parser.add_argument("--strategies", nargs="+", default=["tiered"])
    parser.add_argument(
        "--recall", nargs="+", choices=["off", "on"], default=["off", "on"], help="settings run"
    )
    args = parser.parse_args(argv)
    seeds = args.seeds or (3 if args.quick else 8)
    turns = args.turns or (60 if args.quick else 120)
    logging.getLogger("langgraph_ctx").setLevel(logging.ERROR)
    rows = []
    for strategy in args.strategies:
        for window in args.windows:
            for recall in (setting == "on" for setting in args.recall):
                total = [0, 0, 0, 0]
                shares: list[float] = []
                for seed in range(seeds):
                    *counts, share = run(seed, turns, window, recall, strategy)
                    total = [a + b for a, b in zip(total, counts, strict=True)]
                    shares += share
                kept, probes, compressions, unreachable = total
                rows.append(
                    [
                        strategy,
                        f"{window:,}",
                        "on" if recall else "off",
                        f"{kept}/{probes} ({kept / max(probes, 1):.0%})",
                        str(compressions),
                        str(unreachable),
                        f"{sum(shares) / max(len(shares), 1):.2f}",
                    ]
                )
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    command = "python benchmarks/recall_defaults.py" + (" --quick" if args.quick else "")
    lines = header("Answers kept with the defaults, recall on and off")
    lines += [
        "`create_context_agent(model, tools, budget=Budget.for_window(W), recall=..., "
        "strategy=S, think=False)`, everything else its defaults, the scripted model. Each "
        "seed is one generated session (facts stated once, by the user or in a tool "
        "result, long tool results between, questions about them many turns later in "
        "other words). Kept: the fact's value is in the prompt of the question's call. "
        "Question prompt / red line: how much of the room that call used.",
        "",
        f"Command: `{command}` ({seeds} seeds x {turns} turns).",
        "",
    ]
    head = [
        "strategy",
        "window",
        "recall",
        "answers kept",
        "compressions",
        "budget_unreachable",
        "question prompt / red line",
    ]
    lines += table(head, rows, left=3)
    emit("recall_defaults", [*lines, ""])


if __name__ == "__main__":
    main()
