"""Random sessions through a real compiled graph, with the invariants checked at
every model call. Shared by the fuzz test (a CI-sized run) and
``benchmarks/fuzz.py`` (the long run).

A session is drawn from a seed and a strategy (every name in the agent's
``strategy=`` registry, :data:`~langgraph_ctx.strategies.registry.STRATEGIES`, so a strategy
added there is fuzzed too): a window, a provider placement, a random order of
middleware around pre-flight, the strategy and placement, sync or async runs,
and a sequence of steps a new user (or a sloppy server) produces: plain, CJK
and emoji text; multimodal content blocks; tool exchanges with unique or reused
(``call_0``) ids, parallel calls, results out of order or before their call, a
lost result, a result with no call, results larger than the whole window; and
``RemoveMessage`` from the user's own node.

Invariants, at every call the model receives:

- no orphan in either direction: every call immediately answered, once per id,
  and no result without its call (what an OpenAI-style API accepts);
- the task (the first user message) is present;
- the prompt is within the budget's prompt limit;
- the usage report the call ends with is not under the prompt sent (the prompt
  ceiling trusts a report clearly under the limit);
- after each step, nothing is lost: every message ever added and not removed by
  the user is in the active state or the archive.

A prompt that cannot fit (pinned content over the limit) may be refused with
``BudgetExceededError``, but only before the model is called, and only when
the pinned messages alone (the task, pinned messages) are over the limit: any
other refusal is a violation.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from langgraph_ctx import (
    Budget,
    BudgetExceededError,
    ContextState,
    Middleware,
    Pipeline,
    PreflightCheck,
    ProviderPlacement,
    as_middleware,
    call_llm_node,
    is_pinned,
    pin,
)
from langgraph_ctx.middleware.placement import PLACEMENTS
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.strategies import LexicalScorer, PaceState, PredictiveExtraction
from langgraph_ctx.strategies.registry import STRATEGIES, strategy_middleware
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

COUNTER = TokenCounter()
WINDOWS = (2_000, 3_000, 4_000)
WORDS = [
    "invoice",
    "INV-2041",
    "ACME Corp",
    "shipment",
    "2026-03-01",
    "発注書",
    "請求額は 4,200 円",
    "納期",
    "🚚",
    "📦✅",
    "ledger",
    "Zürich",
    "contract §4.2",
    "refund",
    "😀👍🏽",
]


class FuzzState(ContextState, PaceState, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    remove: list[str]
    """Ids the user's node removes this step."""


def provider_rejects(messages: list[BaseMessage]) -> str | None:
    """Why an OpenAI-style chat API would refuse ``messages``, or ``None``."""
    expected: list[str] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in expected:
                return f"tool message {m.id} answers no open call ({m.tool_call_id})"
            expected.remove(m.tool_call_id)
            continue
        if expected:
            return f"calls {expected} not answered before {m.type} message {m.id}"
        if isinstance(m, AIMessage) and m.tool_calls:
            expected = [str(c["id"]) for c in m.tool_calls]
    return f"calls {expected} never answered" if expected else None


@dataclass
class Outcome:
    """One session's result."""

    seed: int
    strategy: str = ""
    calls: int = 0
    steps: int = 0
    refused: int = 0
    violations: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)
    ledger: Counter[str] = field(default_factory=Counter)
    """How many of each ledger event of interest (what the ceiling did)."""
    prompt_tokens: list[int] = field(default_factory=list)
    """The exact count of each prompt the model received, in order."""
    reported: list[int] = field(default_factory=list)
    """The usage report's raw total (tools aside) when each of those calls returned."""


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _content(rng: random.Random, words: int) -> Any:
    if rng.random() < 0.15:  # multimodal content blocks
        return [
            {"type": "text", "text": _text(rng, words)},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    return _text(rng, words)


def _rows(rng: random.Random, n: int) -> str:
    return json.dumps(
        [{"id": f"R-{k:05d}", "note": rng.choice(WORDS), "amount": k * 7} for k in range(n)],
        ensure_ascii=False,
    )


class _Ids:
    def __init__(self, seed: int) -> None:
        self.n = 0
        self.seed = seed

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def _tool_step(rng: random.Random, ids: _Ids, reuse: bool, kinds: set[str]) -> list[BaseMessage]:
    width = rng.choice((1, 1, 1, 2, 3))
    calls = []
    for k in range(width):
        call_id = f"call_{k}" if reuse else ids("call-")
        calls.append({"name": rng.choice(("search", "lookup")), "args": {"q": k}, "id": call_id})
    ai = AIMessage(_text(rng, rng.randint(0, 6)), tool_calls=calls, id=ids("c"))
    results: list[BaseMessage] = []
    for call in calls:
        # Rows of ~25 tokens: 150 rows (3.6K tokens) are over the smallest window,
        # 400 (10K) over every window.
        size = rng.choice((3, 10, 20, 40)) if rng.random() < 0.92 else rng.choice((150, 400))
        if size >= 150:
            kinds.add("oversized")
        results.append(ToolMessage(_rows(rng, size), tool_call_id=call["id"], id=ids("r")))
    roll = rng.random()
    if roll < 0.1 and len(results) > 1:
        results.reverse()
        kinds.add("reordered")
    elif roll < 0.15:
        kinds.add("result_first")
        return [results[0], ai, *results[1:]]
    elif roll < 0.2:
        kinds.add("lost_result")
        results.pop()
    elif roll < 0.25:
        kinds.add("stray_result")
        results.append(
            ToolMessage("stray " + _text(rng, 5), tool_call_id=ids("ghost-"), id=ids("r"))
        )
    return [ai, *results]


@dataclass
class Session:
    """One fuzzed graph and what the checks need from it."""

    graph: Any
    model: ScriptedChatModel
    archive: InMemoryArchive
    budget: Budget
    order: list[str]
    """The user layers' names, each time one ran."""


def build(
    seed: int,
    strategy: str = "tiered",
    probes: Sequence[Middleware] = (),
    *,
    lexical_pace: bool = False,
) -> Session:
    """The session of ``seed``; ``probes``: more layers, to look at each call.
    ``lexical_pace``: PACE scores steps with its lexical fallback (no encoder), as
    without the embeddings extra: the same assembly, a ninth of the cost."""
    rng = random.Random(seed)
    window = rng.choice(WINDOWS)
    budget = Budget.for_window(window)
    model = ScriptedChatModel(default="ok", report_usage=False)
    archive = InMemoryArchive()
    order: list[str] = []

    def noted(name: str) -> Any:
        def mw(view: Any, ctx: Any, call_next: Any) -> Any:
            order.append(name)
            return call_next(view)

        return mw

    # Random priorities around pre-flight (10), the strategy (30) and placement
    # (1000), ties included, and a random registration order.
    extra = [
        as_middleware(priority=rng.choice((0, 10, 20, 30, 45, 1000, 2000)), name=f"user{k}")(
            noted(f"user{k}")
        )
        for k in range(rng.randint(0, 2))
    ]
    layers: list[Any] = [
        PreflightCheck(),
        ProviderPlacement(rng.choice(PLACEMENTS), nodes=["call_llm"]),
        *extra,
    ]
    if strategy == "pace" and lexical_pace:
        layers.append(PredictiveExtraction(scorer=LexicalScorer(), nodes=["call_llm"]))
    elif strategy != NO_STRATEGY:
        layers.append(strategy_middleware(strategy, archive=archive, nodes=["call_llm"]))
    rng.shuffle(layers)  # registration order, for ties
    # A system prompt the node adds itself, after every layer (counted by pre-flight).
    prompt = "You keep the books. " + _text(rng, rng.randint(5, 60)) if rng.random() < 0.3 else None
    builder = StateGraph(FuzzState)
    builder.add_node("prep", _prep)
    builder.add_node("call_llm", call_llm_node(model, system_prompt=prompt))
    builder.add_edge(START, "prep")
    builder.add_edge("prep", "call_llm")
    pipeline = Pipeline([*layers, *probes], budget=budget, system_prompt=prompt)
    graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())
    return Session(graph, model, archive, budget, order)


def _prep(state: FuzzState) -> dict[str, Any]:
    present = {m.id for m in state.get("messages", [])}
    gone = [RemoveMessage(id=i) for i in state.get("remove") or [] if i in present]
    return {"messages": gone, "remove": []}


NO_STRATEGY = "none"
"""A pipeline with no strategy at all: pre-flight's ceiling alone keeps the prompt in."""
FUZZED = tuple(dict.fromkeys((*STRATEGIES, NO_STRATEGY)))
"""What the sessions rotate through: every registered strategy, and none (which the
registry also names: once here)."""


def _report_probe(reported: list[int]) -> Middleware:
    """The outermost layer: the usage report as the call leaves it, once the model answered."""

    def probe(view: Any, ctx: Any, call_next: Any) -> Any:
        result = call_next(view)
        reported.append(ctx.measured().raw_total - sum(map(COUNTER.count_tool, ctx.tools)))
        return result

    return as_middleware(priority=-(10**6), nodes=["call_llm"], name="report_probe")(probe)


LEDGER_KINDS = ("ceiling_enforced", "tool_pairs_repaired", "context_edit", "compression")


def run_session(
    seed: int,
    *,
    steps: int | None = None,
    strategy: str | None = None,
    probes: Sequence[Middleware] = (),
    lexical_pace: bool = False,
) -> Outcome:
    """Run the session drawn from ``seed`` (and ``strategy``: by default the one of
    :data:`FUZZED` at ``seed`` modulo its size); its outcome, with any violations."""
    strategy = strategy or FUZZED[seed % len(FUZZED)]
    rng = random.Random(seed)
    out = Outcome(seed=seed, strategy=strategy)
    probes = [*probes, _report_probe(out.reported)]
    session = build(seed, strategy, probes, lexical_pace=lexical_pace)
    graph, model = session.graph, session.model
    ids = _Ids(seed)
    thread = f"fuzz-{seed}"
    config = {"configurable": {"thread_id": thread}}
    run_async = rng.random() < 0.25
    if run_async:
        out.kinds.add("async")
    reuse = rng.random() < 0.4
    if reuse:
        out.kinds.add("reused_ids")
    task = HumanMessage("Task: " + _text(rng, 12), id="task")
    added: dict[str, BaseMessage] = {}
    removed: set[str] = set()
    pending: list[BaseMessage] = [task]
    limit = session.budget.prompt_limit
    active: list[BaseMessage] = []
    for step in range(steps or rng.randint(4, 12)):
        remove: list[str] = []
        roll = rng.random()
        if step and roll < 0.3:
            pending.append(HumanMessage(_content(rng, rng.randint(3, 60)), id=ids("u")))
        elif step and roll < 0.35 and added:
            victim = rng.choice(sorted(added))
            if victim != "task":
                remove.append(victim)
                out.kinds.add("user_remove")
        elif step and roll < 0.38:
            pinned = pin(HumanMessage(_text(rng, rng.randint(5, 40)), id=ids("p")))
            pending.append(pinned)
        else:
            pending += _tool_step(rng, ids, reuse, out.kinds)
        if any(isinstance(m.content, list) for m in pending):
            out.kinds.add("multimodal")
        before = len(model.calls)
        update = {"messages": pending, "remove": remove}
        try:
            if run_async:
                asyncio.run(graph.ainvoke(update, config))
            else:
                graph.invoke(update, config)
        except BudgetExceededError:
            out.refused += 1
            if len(model.calls) != before:
                out.violations.append(f"step {step}: refused after the model was called")
            pinned_tokens = COUNTER.count_messages(
                [m for m in [*active, *pending] if is_pinned(m) or m.id == "task"]
            )
            if pinned_tokens <= limit // 2:
                out.violations.append(
                    f"step {step}: refused with {pinned_tokens} pinned tokens of {limit}"
                )
            break
        finally:
            for m in pending:
                added[str(m.id)] = m
            pending = []
        removed.update(remove)
        out.steps += 1
        for call in model.calls[before:]:
            out.calls += 1
            sent = list(call.messages)
            why = provider_rejects(sent)
            if why:
                out.violations.append(f"step {step}: orphan: {why}")
            if not any(m.id == "task" for m in sent):
                out.violations.append(f"step {step}: the task is missing")
            tokens = COUNTER.count_messages(sent)
            out.prompt_tokens.append(tokens)
            if tokens > limit:
                out.violations.append(f"step {step}: prompt {tokens} > limit {limit}")
            reported = out.reported[out.calls - 1]
            if reported < tokens:  # the prompt ceiling trusts the report
                out.violations.append(f"step {step}: usage {reported} < the {tokens} sent")
        values = graph.get_state(config).values
        active = list(values["messages"])
        present = {str(m.id) for m in active}
        for mid in added:
            if mid in removed or mid in present:
                continue
            if session.archive.get(thread, mid) is None:
                out.violations.append(f"step {step}: message {mid} lost")
    ledger = graph.get_state(config).values.get("context_ledger") or []
    for entry in ledger:
        kind = entry["kind"]
        if kind == "ceiling_enforced":
            kind = f"ceiling_enforced:{entry['data'].get('scope')}"
        elif kind == "compression" and entry["data"].get("path") == "ceiling":
            kind = "compression:ceiling"
        if kind.split(":")[0] in LEDGER_KINDS:
            out.ledger[kind] += 1
    return out
