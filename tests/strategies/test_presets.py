"""``preset="paper"``: AdaCoM, ARC, BACM and PACE run as their papers describe them,
seen in what the scripted models receive. Each mechanism is checked under both
presets: what the paper's shows, the default does not (so the test fails if the
preset stops flipping it)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.middleware.recall import query_of
from langgraph_ctx.pipeline import View
from langgraph_ctx.strategies import (
    AdaptiveContextManager,
    PaceSettings,
    ReflectiveContextManager,
    TieredCompression,
)
from langgraph_ctx.strategies.pace import middleware as pace_middleware
from langgraph_ctx.strategies.pace.scorer import LexicalScorer
from langgraph_ctx.strategies.pace.summaries import SummaryJob
from langgraph_ctx.strategies.registry import PRESETS
from langgraph_ctx.testing import ScriptedChatModel

PRESET_NAMES = ("default", "paper")
FILLER = "carrier manifest pallet customs tariff route ledger invoice " * 60


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the records."""
    return record(topic)


def record(topic: str) -> str:
    """A record of about 360 tokens and 2,700 characters, its end marked."""
    return f"Record {topic}: {FILLER[:2600]} END-OF-RECORD-{topic}"


def lookups(k: int) -> list[AIMessage | str]:
    """The agent's script: ``k`` lookups (t0, t1, ...), one a step, then an answer."""
    calls = [{"name": "lookup", "args": {"topic": f"t{i}"}, "id": f"c{i}"} for i in range(k)]
    return [*(AIMessage("", tool_calls=[c]) for c in calls), "Done."]


def run(
    strategy: str,
    preset: str,
    *,
    steps: int,
    manager: ScriptedChatModel | None = None,
    window: int | None = None,
    task: str = "Find the records.",
) -> tuple[ScriptedChatModel, dict[str, Any]]:
    """One turn of ``create_context_agent(strategy=..., preset=...)`` on the scripted
    agent; ``manager`` is its ``summary_model`` (the manager, policy or summarizer)."""
    model = ScriptedChatModel(responses=lookups(steps))
    options: dict[str, Any] = {"strategy": strategy, "preset": preset, "think": False}
    if manager is not None:
        options["summary_model"] = manager
    if window is not None:
        options["budget"] = Budget.for_window(window)
    agent = create_context_agent(model, [lookup], always_include=["lookup"], **options)
    out = agent.invoke({"messages": [HumanMessage(task)]}, {"configurable": {"thread_id": "t"}})
    return model, out


def structured(model: ScriptedChatModel, schema: str) -> list[Any]:
    return [c for c in model.calls if c.structured == schema]


# -- choosing a preset ----------------------------------------------------------


def test_every_paper_strategy_has_the_paper_preset_and_the_others_only_theirs() -> None:
    assert {n for n, names in PRESETS.items() if "paper" in names} == {
        "adacom",
        "arc",
        "bacm",
        "pace",
    }
    assert PRESETS["tiered"] == PRESETS["none"] == ("default",)


def test_an_unknown_preset_is_refused_naming_the_valid_ones() -> None:
    model = ScriptedChatModel(default="Done.")
    with pytest.raises(ConfigurationError, match=r"preset.*'fast'.*\['default', 'paper'\]"):
        create_context_agent(model, strategy="pace", preset="fast", think=False)


@pytest.mark.parametrize("strategy", ["tiered", "none"])
def test_a_paper_preset_on_a_strategy_without_a_paper_is_refused(strategy: str) -> None:
    model = ScriptedChatModel(default="Done.")
    with pytest.raises(ConfigurationError, match=rf"preset.*{strategy}.*only 'default'"):
        create_context_agent(model, strategy=strategy, preset="paper", think=False)
    create_context_agent(model, strategy=strategy, preset="default", think=False)


def test_a_preset_with_a_strategy_already_built_is_refused() -> None:
    model = ScriptedChatModel(default="Done.")
    with pytest.raises(ConfigurationError, match=r"preset.*from_preset"):
        create_context_agent(model, strategy=TieredCompression(), preset="paper", think=False)


def test_from_preset_takes_the_papers_settings_and_the_arguments_given_win() -> None:
    manager = AdaptiveContextManager.from_preset("paper", timeout=5.0, extract_for_task=False)
    assert (manager.every, manager.preview_chars, manager.timeout) == (1, None, 5.0)
    assert manager.extract_for_task is False
    assert AdaptiveContextManager.from_preset().every == AdaptiveContextManager().every == 3
    with pytest.raises(ConfigurationError, match="preset"):
        AdaptiveContextManager.from_preset("Paper")


def test_pace_settings_paper_are_the_papers_query_pressure_and_condensing() -> None:
    paper, ours = PaceSettings.paper(), PaceSettings()
    assert (paper.query_steps, paper.pressure_budget) == (paper.recent, 128_000)
    assert paper.condense_when_fits and paper.headroom == 0
    assert (ours.query_steps, ours.pressure_budget, ours.condense_when_fits) == (1, None, False)
    with pytest.raises(ConfigurationError, match="pressure_budget"):
        PaceSettings.paper(pressure_budget=0)


# -- AdaCoM ----------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_adacom_paper_manager_runs_every_step_and_reads_each_message_whole(preset: str) -> None:
    manager = ScriptedChatModel(structured_default={"modifications": []})
    model, _ = run("adacom", preset, steps=5, manager=manager)
    asked = structured(manager, "ManagerAction")
    # The first record is 2,700 characters: under the 2,000-character preview our
    # default had, its end never reached the manager that may rewrite it. Both
    # presets read it whole now; only the schedule differs.
    whole = [c for c in asked if "END-OF-RECORD-t0" in c.text]
    assert whole and all("more characters]" not in c.text for c in asked)
    if preset == "paper":
        assert len(asked) == len(model.calls) == 6  # before every one of the agent's steps
    else:
        assert len(asked) == 2  # every 3 rounds


CITIES = ("Oslo", "Bergen", "Bodø", "Molde", "Narvik", "Harstad", "Alta", "Hamar")


@tool
def manifest(region: str) -> str:
    """The shipping manifest of a region."""
    rows = [
        f"Warehouse W-{i} ships to {CITIES[i % len(CITIES)]} from dock D-{300 + 7 * i}, "
        f"carrier KX-{4400 + i}, invoice SO-{995000 + 13 * i}."
        for i in range(200)
    ]
    rows[97] = "Warehouse W-97 ships to Tromsø from dock D-979, carrier KX-4497."
    return "\n".join(rows)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_adacom_paper_extraction_keeps_the_line_the_task_asks_about(preset: str) -> None:
    # 200 rows alike, one about the city asked for: the offline manager's extraction
    # of the 5,000-token result keeps that one under the paper's preset; a digest of
    # the result alone keeps rows by what they hold, not by what the task asks.
    call = {"name": "manifest", "args": {"region": "north"}, "id": "m1"}
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[call]), "Done."])
    agent = create_context_agent(
        model,
        [manifest],
        strategy="adacom",
        preset=preset,
        think=False,
        always_include=["manifest"],
    )
    task = HumanMessage("Which warehouse ships to Tromsø? Give its dock code.")
    agent.invoke({"messages": [task]}, {"configurable": {"thread_id": "t"}})
    shown = model.calls[1].messages[-1]
    assert isinstance(shown, ToolMessage) and shown.text.startswith("[Extracted tool result]")
    assert ("dock D-979" in shown.text) is (preset == "paper")


# -- ARC -------------------------------------------------------------------------


def arc_manager(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """A manager model: a checklist of two items when asked for one."""
    if "checklist" in messages[0].text and "Before it starts" in messages[0].text:
        items = ["Find the dock code of warehouse W-7", "Confirm the code with the carrier"]
        return {"items": [{"id": f"x{i}", "text": text} for i, text in enumerate(items)]}
    return {"entry": "", "checklist": []}


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_arc_paper_first_checklist_comes_from_the_manager_model(preset: str) -> None:
    manager = ScriptedChatModel(structured_default=arc_manager)
    task = "Find the dock code of warehouse W-7 and confirm it with the carrier."
    model, _ = run("arc", preset, steps=0, manager=manager, task=task)
    seen = model.calls[0].text
    # Both presets: the manager model writes it (the rule wrote our default's once:
    # the task's one sentence, one item); initial_checklist="rule" keeps the rule.
    assert len(structured(manager, "Checklist")) == 1
    assert task in structured(manager, "Checklist")[0].text
    assert "c1: Find the dock code of warehouse W-7\n" in seen
    assert "c2: Confirm the code with the carrier" in seen


def test_arc_checklist_by_rule_when_asked_even_with_a_model() -> None:
    manager = ScriptedChatModel(structured_default=arc_manager)
    model = ScriptedChatModel(responses=["Done."])
    task = "Find the dock code of warehouse W-7 and confirm it with the carrier."
    strategy = ReflectiveContextManager(manager=manager, initial_checklist="rule")
    agent = create_context_agent(model, strategy=strategy, think=False)
    agent.invoke({"messages": [HumanMessage(task)]}, {"configurable": {"thread_id": "t"}})
    assert not structured(manager, "Checklist")
    assert f"c1: {task}" in model.calls[0].text and "c2:" not in model.calls[0].text


def test_arc_paper_checklist_falls_back_to_the_rule_when_the_model_fails() -> None:
    def broken(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        raise RuntimeError("provider down")

    manager = ScriptedChatModel(structured_default=broken)
    model, _ = run("arc", "paper", steps=0, manager=manager, task="Find the dock code of W-7.")
    assert structured(manager, "Checklist")  # asked, and it raised
    assert "c1: Find the dock code of W-7." in model.calls[0].text


# -- BACM ------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_bacm_paper_shows_the_budget_before_the_observation(preset: str) -> None:
    model, _ = run("bacm", preset, steps=1)
    observation = model.calls[1].messages[-1]
    assert isinstance(observation, ToolMessage)
    text = observation.text
    line, result = text.index("[Context budget:"), text.index("Record t0")
    assert (line < result) is (preset == "paper")


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_recall_searches_the_question_without_the_budget_line_either_side(preset: str) -> None:
    # The line opens the user's message under the paper's preset: its words ("tokens",
    # "fold", "steps") are no part of the question recall searches with.
    model, _ = run("bacm", preset, steps=0, task="Which dock serves warehouse W-7?")
    asked = [m for m in model.calls[0].messages if m.type == "human"][-1]
    blocks = [b["text"] for b in asked.content if isinstance(b, dict)]
    assert blocks[0 if preset == "paper" else -1].startswith("[Context budget:")
    assert query_of(View({"messages": [asked]})) == "Which dock serves warehouse W-7?"


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_bacm_paper_policy_reads_the_steps_it_folds_whole(preset: str) -> None:
    # Nine records at a 4K window: the prompt nears the red line and the policy
    # model is asked for a fold; our default once showed it each step cut to 600
    # characters. Both presets show them whole now.
    policy = ScriptedChatModel(structured_default={"commit_ids": "NONE", "merged": ""})
    run("bacm", preset, steps=9, window=4_000, manager=policy)
    asked = structured(policy, "FoldAction")
    assert asked
    assert "END-OF-RECORD-t0" in asked[0].text
    assert "more]" not in asked[0].text


# -- PACE ------------------------------------------------------------------------


class RecordingScorer(LexicalScorer):
    """The lexical scorer, keeping every query it encodes."""

    queries: ClassVar[list[str]] = []

    def encode(self, keys: Sequence[str], query: str) -> Any:
        self.queries.append(query)
        return super().encode(keys, query)

    async def aencode(self, keys: Sequence[str], query: str) -> Any:
        self.queries.append(query)
        return await super().aencode(keys, query)


@pytest.fixture
def pace_inline(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """PACE with the recording scorer and its summaries made before the call goes on
    (deterministic levels); yields the queries encoded."""
    real = pace_middleware.start

    def start(summarizer: Any, messages: Any, detailed: int, brief: int) -> SummaryJob:
        job = real(summarizer, messages, detailed, brief)
        job.future.result(timeout=30)
        return job

    queries: list[str] = []
    monkeypatch.setattr(RecordingScorer, "queries", queries)
    monkeypatch.setattr(pace_middleware, "start", start)
    monkeypatch.setattr(pace_middleware, "default_scorer", RecordingScorer)
    yield queries


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_pace_paper_query_holds_the_last_two_steps(preset: str, pace_inline: list[str]) -> None:
    run("pace", preset, steps=5, window=16_000)
    assert pace_inline
    for query in pace_inline:
        steps = set(re.findall(r"Record t\d", query))
        assert len(steps) == (2 if preset == "paper" else 1)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_pace_paper_condenses_a_history_that_fits_under_a_fixed_128k_pressure(
    preset: str, pace_inline: list[str]
) -> None:
    model, out = run("pace", preset, steps=5, window=16_000)
    last = [e["data"] for e in out["context_ledger"] if e["kind"] == "pace_context"][-1]
    assert last["tokens_before"] < last["budget"]  # the whole history fits
    prompt = model.calls[-1].text
    if preset == "paper":
        # Eq. 6 against 128K: the task's progress (5 of 100 steps) outweighs the fill.
        assert last["pressure"] == pytest.approx(5 / 100)
        assert last["full"] < last["scored"] and record("t0") not in prompt
    else:  # against the 8,750-token message room; nothing condensed while it fits
        assert last["pressure"] > 0.1
        assert last["full"] == last["scored"] and record("t0") in prompt
