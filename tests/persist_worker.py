"""Drives ``create_context_agent(..., checkpointer=URL)`` with its default stores, in a
process of its own (``python -m tests.persist_worker``), and prints what a probe turn
gets back from the archive: a restart must not change any of it.

``--turns A:B`` runs user turns A..B-1 (each states a crate's code in a page of
filler, so the strategy compresses, folds or reflects); the probe turn then asks about
an early crate, and the scripted model glimpses at a turn message by id, at an id no
message has, and (by words) at a crate; the turn stops after the glimpses. The probe
runs from a given checkpoint (``--at``, default: the latest), so two processes probe
the very same state. The JSON on stdout: that checkpoint, then the probe's view: the
probe call's last message (the question and what recall put in it), the glimpse
answers, every archived original (type and text, in archive order), what
``original()`` returns for each archived id and an archive search; then what
``original()`` returns for those ids after ``--more`` turns. The model's replies
depend only on what it is sent, so a probe from one checkpoint prints the same in any
process.
"""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.markers import GLIMPSE
from langgraph_ctx.storage.checkpointers import archive_from_url

PROBE = "Which code did crate 2 carry, again?"
GLIMPSED = ("u1", "u-missing", "crate 3 code")
WINDOW = 6_000
FILLER = " ".join(f"row {k}: pallets stacked and wrapped, aisle {k % 7}." for k in range(40))


def code(i: int) -> str:
    return f"K{(i * 7919) % 10_000:04d}"


def turn(i: int) -> HumanMessage:
    return HumanMessage(
        f"Crate {i} carries code {code(i)}. Manifest page {i}: {FILLER}", id=f"u{i}"
    )


def reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """Deterministic in what it is sent: the probe glimpses, other turns are noted."""
    asked = next((m for m in reversed(messages) if m.type == "human"), None)
    if asked is not None and PROBE in asked.text and not isinstance(messages[-1], ToolMessage):
        calls: list[Any] = [
            {"name": GLIMPSE, "args": {"reference": ref}, "id": f"g{k}"}
            for k, ref in enumerate(GLIMPSED)
        ]
        return AIMessage("", tool_calls=calls, id="probe-call")
    n = sum(1 for m in messages if m.type == "human")
    return AIMessage(f"Noted ({n} user messages in view).", id=f"a-{n}-{len(messages)}")


def agent(url: str, strategy: str) -> Any:
    from langgraph_ctx.testing import ScriptedChatModel

    model = ScriptedChatModel(default=reply, report_usage=False)
    return model, create_context_agent(
        model,
        checkpointer=url,
        strategy=strategy,
        recall=True,
        think=False,
        budget=Budget.for_window(WINDOW),
    )


def strategy_of(graph: Any) -> Any:
    """The strategy middleware inside a compiled agent (for ``original()``)."""
    from langgraph_ctx.strategies.base import ContextStrategy

    run = graph.builder.nodes["call_llm"].runnable._run.func  # the pipeline's wrapper
    pipeline = inspect.getclosurevars(run).nonlocals["self"]
    return next(
        ly.middleware for ly in pipeline._registered if isinstance(ly.middleware, ContextStrategy)
    )


def probe(url: str, thread: str, at: str, model: Any, graph: Any) -> dict[str, Any]:
    """The probe turn, run from checkpoint ``at`` (a fork: the same state in any process)."""
    config = {"configurable": {"thread_id": thread, "checkpoint_id": at}}
    before = len(model.calls)
    answers: list[str] = []  # as the tools node returned them (ARC folds them away)
    # Stopped after the glimpses: the model is not called again, so the probe writes
    # nothing after it read (a later compression's rows would be in another process's
    # archive before its own probe read it).
    probing = {"messages": [HumanMessage(PROBE, id="probe")]}
    for update in graph.stream(probing, config, stream_mode="updates", interrupt_after=["tools"]):
        sent = (update.get("tools") or {}).get("messages") or []
        answers += [m.text for m in sent if isinstance(m, ToolMessage)]
    asked = model.calls[before].messages[-1].text
    with archive_from_url(url) as archive:  # type: ignore[attr-defined]
        kept = archive.list(thread)
        hits = archive.search(thread, "crate 3 code", limit=3)
    return {
        "asked": asked,
        "glimpse": answers,
        "archived": [[m.type, m.text] for m in kept],
        "original": originals(graph, thread, [str(m.id) for m in kept]),
        "search": [h.message.text for h in hits],
    }


def originals(graph: Any, thread: str, ids: list[str]) -> dict[str, str | None]:
    mw = strategy_of(graph)
    return {i: None if (m := mw.original(thread, i)) is None else m.text for i in ids}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--strategy", required=True)
    parser.add_argument("--thread", required=True)
    parser.add_argument("--turns", default="0:0", help="A:B, the user turns to run first")
    parser.add_argument("--at", help="probe from this checkpoint (default: the latest)")
    parser.add_argument("--more", default="0:0", help="A:B, the user turns to run after")
    args = parser.parse_args()
    model, graph = agent(args.url, args.strategy)
    config = {"configurable": {"thread_id": args.thread}}
    start, stop = (int(x) for x in args.turns.split(":"))
    for i in range(start, stop):
        graph.invoke({"messages": [turn(i)]}, config)
    at = args.at or graph.get_state(config).config["configurable"]["checkpoint_id"]
    seen = probe(args.url, args.thread, at, model, graph)
    start, stop = (int(x) for x in args.more.split(":"))
    for i in range(start, stop):  # on from the probed checkpoint, not from the probe
        on = {"configurable": {**config["configurable"], "checkpoint_id": at}}
        graph.invoke({"messages": [turn(i)]}, on if i == start else config)
    later = originals(graph, args.thread, list(seen["original"]))
    print(json.dumps({"at": at, "probe": seen, "later": later}))


if __name__ == "__main__":
    main()
