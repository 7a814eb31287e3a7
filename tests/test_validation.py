"""Every built-in refuses a bad setting at construction, naming the parameter.

Before, many of these were accepted and failed only when the graph ran (a string
timeout inside the first recall, a ``bool`` as a turn count, a bare string as a
node filter taken letter by letter), or never (a negative ratio as a number).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import (
    AdaptiveContextManager,
    Budget,
    BudgetAwareFolding,
    ConfigurationError,
    DeltaReadCache,
    MemoryRecall,
    Pipeline,
    PredictiveExtraction,
    PreflightCheck,
    ProviderPlacement,
    RuntimeStore,
    SummaryObserver,
    TieredCompression,
    TokenCounter,
    ToolEviction,
    as_middleware,
    pin,
    place_messages,
    remember_tool,
)
from langgraph_ctx.agent import ThinkSettings, create_context_agent
from langgraph_ctx.agent.subagents import SubAgentSpec
from langgraph_ctx.budget import Zones
from langgraph_ctx.compression.summarizers import ChatModelSummarizer
from langgraph_ctx.interop import ContextMiddleware
from langgraph_ctx.retrieval.memory import MemoryBank
from langgraph_ctx.storage.archive import InMemoryArchive, SQLiteArchive
from langgraph_ctx.strategies.adacom.offline import OfflinePolicy
from langgraph_ctx.strategies.adacom.policy import ChatModelManager
from langgraph_ctx.strategies.arc.offline import OfflineArcManager
from langgraph_ctx.strategies.bacm.offline import OfflineFoldPolicy
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tools import ToolRegistry

MODEL = ScriptedChatModel(default="ok")
NAN = float("nan")
BANK = MemoryBank()
REGISTRY = ToolRegistry([])


def spec(**overrides: Any) -> SubAgentSpec:
    options: dict[str, Any] = {
        "name": "helper",
        "kind": "analysis",
        "description": "Analyses.",
        "system_prompt": "You analyse.",
        "model": MODEL,
    }
    return SubAgentSpec(**{**options, **overrides})


CASES: list[tuple[str, Callable[[Any], object], Any]] = [
    # (the parameter, how to build with it, a bad value)
    ("priority", lambda v: PreflightCheck(priority=v), "10"),
    ("priority", lambda v: PreflightCheck(priority=v), 1.5),
    ("nodes", lambda v: PreflightCheck(nodes=v), "call_llm"),
    ("nodes", lambda v: PreflightCheck(nodes=v), ["call_llm", ""]),
    ("name", lambda v: PreflightCheck(name=v), 3),
    ("summarizer", lambda v: TieredCompression(summarizer=v), "extractive"),
    ("archive", lambda v: TieredCompression(archive=v), {}),
    ("target_utilization", lambda v: TieredCompression(target_utilization=v), "0.7"),
    ("target_utilization", lambda v: TieredCompression(target_utilization=v), float("nan")),
    ("protected_share", lambda v: TieredCompression(protected_share=v), 0.0),
    ("max_summary_share", lambda v: TieredCompression(max_summary_share=v), True),
    ("min_protected_turns", lambda v: TieredCompression(min_protected_turns=v), 2.5),
    ("min_protected_turns", lambda v: TieredCompression(min_protected_turns=v), True),
    ("expected_ratio", lambda v: TieredCompression(expected_ratio=v), "5"),
    ("expected_ratio", lambda v: TieredCompression(expected_ratio=v), float("inf")),
    ("summary_tokens", lambda v: TieredCompression(summary_tokens=v), 500),
    ("summary_tokens", lambda v: TieredCompression(summary_tokens=v), (100, "2000")),
    ("max_summary_layers", lambda v: TieredCompression(max_summary_layers=v), "4"),
    ("pin_task", lambda v: TieredCompression(pin_task=v), "yes"),
    ("summarizer_timeout", lambda v: TieredCompression(summarizer_timeout=v), 0),
    ("summarizer_timeout", lambda v: TieredCompression(summarizer_timeout=v), "30"),
    ("registry", lambda v: ToolEviction(v), ["search"]),
    ("capacity", lambda v: ToolEviction(REGISTRY, capacity=v), -1),
    ("capacity", lambda v: ToolEviction(REGISTRY, capacity=v), 4.0),
    ("MemoryRecall.bank", lambda v: MemoryRecall(v), None),
    ("MemoryRecall.timeout", lambda v: MemoryRecall(BANK, timeout=v), "2"),
    ("MemoryRecall.timeout", lambda v: MemoryRecall(BANK, timeout=v), float("inf")),
    ("MemoryRecall.max_tokens", lambda v: MemoryRecall(BANK, max_tokens=v), 0),
    ("MemoryRecall.task_key", lambda v: MemoryRecall(BANK, task_key=v), ""),
    ("SummaryObserver.bank", lambda v: SummaryObserver(v), object()),
    ("SummaryObserver.timeout", lambda v: SummaryObserver(BANK, timeout=v), -1),
    ("Budget.window", lambda v: Budget(window=v), "128000"),
    ("Budget.messages", lambda v: Budget.for_window(8_000, messages=v), -5),
    ("Budget.window", lambda v: Budget.for_window(4_000, messages=v), 10_000),
    ("Zones.yellow", lambda v: Zones(yellow=v), "0.7"),
    ("Zones.red", lambda v: Zones(red=v), 0.5),
    ("model", lambda v: ChatModelSummarizer(v), "gpt-4o-mini"),
    ("prompt", lambda v: ChatModelSummarizer(MODEL, prompt=v), ""),
    ("timeout", lambda v: ChatModelSummarizer(MODEL, timeout=v), -1.0),
    ("fallback", lambda v: ChatModelSummarizer(MODEL, fallback=v), "extractive"),
    ("on_fallback", lambda v: ChatModelSummarizer(MODEL, on_fallback=v), "log"),
    ("SubAgentSpec.name", lambda v: spec(name=v), "two words"),
    ("SubAgentSpec.kind", lambda v: spec(kind=v), "wizard"),
    ("SubAgentSpec.model", lambda v: spec(model=v), "gpt-4o"),
    ("SubAgentSpec.max_steps", lambda v: spec(max_steps=v), 0),
    ("SubAgentSpec.max_steps", lambda v: spec(max_steps=v), "12"),
    ("SubAgentSpec.budget", lambda v: spec(budget=v), {"window": 1000}),
    ("SubAgentSpec.tools", lambda v: spec(tools=v), ["search"]),
    ("SubAgentSpec.children", lambda v: spec(children=v), ["helper"]),
    ("SubAgentSpec.description", lambda v: spec(description=v), None),
    ("manager", lambda v: AdaptiveContextManager(manager=v), "gpt-4o-mini"),
    ("archive", lambda v: AdaptiveContextManager(archive=v), {}),
    ("every", lambda v: AdaptiveContextManager(every=v), "3"),
    ("every", lambda v: AdaptiveContextManager(every=v), 0),
    ("every", lambda v: AdaptiveContextManager(every=v), True),
    ("utilization", lambda v: AdaptiveContextManager(utilization=v), "0.7"),
    ("utilization", lambda v: AdaptiveContextManager(utilization=v), 1.5),
    ("target_utilization", lambda v: AdaptiveContextManager(target_utilization=v), 0),
    ("extract_threshold", lambda v: AdaptiveContextManager(extract_threshold=v), 2.5),
    ("extract_tokens", lambda v: AdaptiveContextManager(extract_tokens=v), 10),
    ("background", lambda v: AdaptiveContextManager(background=v), None),
    ("timeout", lambda v: AdaptiveContextManager(timeout=v), "30"),
    ("timeout", lambda v: AdaptiveContextManager(timeout=v), 0),
    ("preview_chars", lambda v: AdaptiveContextManager(preview_chars=v), -1),
    ("pin_task", lambda v: AdaptiveContextManager(pin_task=v), 1),
    ("ChatModelManager.model", lambda v: ChatModelManager(v), "gpt-4o"),
    ("ChatModelManager.prompt", lambda v: ChatModelManager(MODEL, prompt=v), ""),
    ("OfflinePolicy.stale_rounds", lambda v: OfflinePolicy(stale_rounds=v), 0),
    ("OfflinePolicy.keep_rounds", lambda v: OfflinePolicy(keep_rounds=v), "2"),
    ("OfflinePolicy.note_tokens", lambda v: OfflinePolicy(note_tokens=v), 0),
    ("OfflinePolicy.fact_tokens", lambda v: OfflinePolicy(fact_tokens=v), 4.5),
    ("OfflinePolicy.counter", lambda v: OfflinePolicy(counter=v), "cl100k"),
    ("OfflineFoldPolicy.keep_last", lambda v: OfflineFoldPolicy(keep_last=v), "1"),
    ("OfflineFoldPolicy.ratio", lambda v: OfflineFoldPolicy(ratio=v), 0.5),
    ("OfflineFoldPolicy.max_share", lambda v: OfflineFoldPolicy(max_share=v), 1.5),
    ("OfflineFoldPolicy.summarizer", lambda v: OfflineFoldPolicy(summarizer=v), "extractive"),
    ("OfflineFoldPolicy.counter", lambda v: OfflineFoldPolicy(counter=v), None),
    ("OfflineArcManager.entry_tokens", lambda v: OfflineArcManager(entry_tokens=v), 0),
    ("OfflineArcManager.done_share", lambda v: OfflineArcManager(done_share=v), "most"),
    ("ProviderPlacement.placement", lambda v: ProviderPlacement(v), "merged"),
    ("prepare_headroom", lambda v: TieredCompression(prepare_headroom=v), "0.1"),
    ("prepare_ahead", lambda v: TieredCompression(prepare_ahead=v), "yes"),
    ("Pipeline.budget", lambda v: Pipeline(budget=v), 128_000),
    ("Pipeline.counter", lambda v: Pipeline(counter=v), "cl100k"),
    ("Pipeline.tools", lambda v: Pipeline(tools=v), "search"),
    ("Pipeline.system_prompt", lambda v: Pipeline(system_prompt=v), 42),
    ("Pipeline.max_sessions", lambda v: Pipeline(max_sessions=v), 0),
    ("Pipeline.events", lambda v: Pipeline(events=v), "events.sqlite"),
    ("ThinkSettings.tau", lambda v: ThinkSettings(tau=v), "0.7"),
    ("ThinkSettings.max_rounds", lambda v: ThinkSettings(max_rounds=v), 2.0),
    ("strategy", lambda v: create_context_agent(MODEL, strategy=v), "arc-typo"),
    ("summary_model", lambda v: create_context_agent(MODEL, summary_model=v), "gpt-4o-mini"),
    ("system_prompt", lambda v: create_context_agent(MODEL, system_prompt=v), ["Be brief."]),
    ("budget", lambda v: create_context_agent(MODEL, budget=v), 128_000),
    ("think", lambda v: create_context_agent(MODEL, think=v), "no"),
    ("think_settings", lambda v: create_context_agent(MODEL, think_settings=v), {"tau": 1}),
    ("middleware", lambda v: create_context_agent(MODEL, middleware=v), ["preflight"]),
    ("always_include", lambda v: create_context_agent(MODEL, always_include=v), "search"),
    ("state_schema", lambda v: create_context_agent(MODEL, state_schema=v), {"messages": []}),
    ("placement", lambda v: create_context_agent(MODEL, placement=v), "top"),
    ("tool_capacity", lambda v: create_context_agent(MODEL, tool_capacity=v), "16"),
    # Found by the newcomer audit: each crashed deep inside (AttributeError,
    # TypeError) or was accepted and could not work.
    ("model", lambda v: create_context_agent(v), "openai:gpt-4o"),
    ("model", lambda v: create_context_agent(v), None),
    ("tools", lambda v: create_context_agent(MODEL, v), ["lookup"]),
    ("tools", lambda v: create_context_agent(MODEL, v), [print]),
    ("middleware", lambda v: create_context_agent(MODEL, middleware=v), PreflightCheck()),
    ("recall", lambda v: create_context_agent(MODEL, recall=v), "yes"),
    ("strategy", lambda v: create_context_agent(MODEL, strategy=v), PreflightCheck()),
    ("nodes", lambda v: PreflightCheck(nodes=v), []),
    ("Pipeline.middleware", lambda v: Pipeline(v), PreflightCheck()),
    ("Pipeline.use", lambda v: Pipeline([v, v]), PreflightCheck()),
    ("ContextMiddleware.middleware", lambda v: ContextMiddleware(v), PreflightCheck()),
    ("ContextMiddleware.recall", lambda v: ContextMiddleware([PreflightCheck()], recall=v), 0),
    ("ProviderPlacement.recall_per_turn", lambda v: ProviderPlacement(recall_per_turn=v), 2.0),
    ("placement", lambda v: place_messages([], v), "merged"),
    ("settings", lambda v: PredictiveExtraction(settings=v), {"adaptation": 0.7}),
    ("policy", lambda v: BudgetAwareFolding(policy=v), "gpt-4o-mini"),
    ("guard", lambda v: BudgetAwareFolding(guard=v), True),
    ("decide_at", lambda v: BudgetAwareFolding(decide_at=v), "0.9"),
    ("timeout", lambda v: BudgetAwareFolding(timeout=v), "30"),
    ("MemoryBank.store", lambda v: MemoryBank(store=v), "memory://"),
    ("MemoryBank.boosts['principle']", lambda v: MemoryBank(boosts={"principle": v}), NAN),
    ("MemoryBank.index", lambda v: MemoryBank(index=v), "lexical"),
    ("MemoryBank.candidates", lambda v: MemoryBank(candidates=v), 2.5),
    ("limit", lambda v: BANK.search(("alice",), "rail", limit=v), 0),
    ("messages", lambda v: InMemoryArchive().put("t", v, reason="compressed"), ["text"]),
    ("SQLiteArchive.path", lambda v: SQLiteArchive(v), None),
    ("SQLiteArchive.path", lambda v: SQLiteArchive(v), "sqlite:///archive.sqlite"),
    ("pin", lambda v: pin(v), "Remember SHP-0042."),
    ("as_middleware", lambda v: as_middleware()(v), 42),
    ("TokenCounter.encoding", lambda v: TokenCounter(v), "cl100k"),
    ("DeltaReadCache.saver", lambda v: DeltaReadCache(v), None),
    ("DeltaReadCache.max_threads", lambda v: DeltaReadCache(InMemorySaver(), max_threads=v), 0),
    ("RuntimeStore.fallback", lambda v: RuntimeStore(v), "memory://"),
    ("remember_tool.bank", lambda v: remember_tool(v), None),
    ("Budget.window", lambda v: Budget(window=v), -1),
]


def case_id(field: str, value: Any) -> str:
    """Stable across processes (xdist compares them): no object addresses."""
    shown = repr(value)
    return f"{field}={type(value).__name__ + '()' if ' at 0x' in shown else shown}"


@pytest.mark.parametrize(
    ("field", "build", "value"), CASES, ids=[case_id(f, v) for f, _, v in CASES]
)
def test_a_bad_setting_is_refused_at_construction_naming_it(
    field: str, build: Callable[[Any], object], value: Any
) -> None:
    with pytest.raises(ConfigurationError) as info:
        build(value)
    assert info.value.field == field
    assert field in str(info.value)


def test_a_path_that_is_a_url_or_none_creates_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # str(None) was a file called "None"; a URL, a folder "sqlite:"
    for bad in (None, "sqlite:///archive.sqlite"):
        with pytest.raises(ConfigurationError):
            SQLiteArchive(bad)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_the_defaults_are_valid() -> None:
    for make in (
        PreflightCheck,
        TieredCompression,
        lambda: ToolEviction(REGISTRY),
        lambda: MemoryRecall(BANK),
        lambda: SummaryObserver(BANK),
        Budget,
        lambda: ChatModelSummarizer(MODEL),
        spec,
        AdaptiveContextManager,
        lambda: AdaptiveContextManager(manager=MODEL),
        OfflinePolicy,
        OfflineFoldPolicy,
        OfflineArcManager,
        lambda: ProviderPlacement(),
        Pipeline,
        ThinkSettings,
        lambda: create_context_agent(MODEL),
    ):
        make()
