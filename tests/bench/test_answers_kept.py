"""The answers-kept benchmark on generated data (no ../shared/data): the conversation
generator keeps its promises, and the driver measures the prompt of the question's
``call_llm`` call, with recorded tools, and reports a failing cell instead of crashing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import answers_kept
import pytest
from answers_kept import Cell, Dialogue, Probe, Turn, conversations, play, run_cell
from harness.conversations import generate_conversation
from langchain_core.messages import AIMessage


def _has(text: str, value: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(value.casefold())}(?![a-z0-9])", text) is not None


def test_each_needed_word_is_said_once_and_never_in_its_question() -> None:
    conv = generate_conversation(8, seed=5)
    assert conv == generate_conversation(8, seed=5)  # a seed names a conversation
    questions = conv.questions
    assert {q.kind for q in questions} == {"single", "temporal", "multi-hop"}
    for q in questions:
        asked = next(t for t in conv.turns if t.question == q)
        assert all(conv.turns[i].session <= asked.session - 2 for i in q.stated)  # much later
        for group in q.needs:
            assert not any(_has(q.text.casefold(), v) for v in group), (q.text, group)
            said = [t.index for t in conv.turns if any(_has(t.user.casefold(), v) for v in group)]
            # A date is said by its session's opener too; anything else only where stated.
            assert set(said) - {t.index for t in conv.turns if t.user.startswith("(New")} <= set(
                q.stated
            ), (q.id, group, said)
            assert said, (q.id, group)
            assert not any(_has(t.reply.casefold(), v) for t in conv.turns for v in group)


def test_every_answer_is_kept_when_the_window_holds_the_whole_conversation(
    tmp_path: Path,
) -> None:
    load = conversations(True, seed=1, sessions=3)
    cell = run_cell(load, "tiered", True, 128_000, tmp_path, cache=True)
    assert cell.error is None
    assert cell.probes == sum(len(t.probes) for d in load.dialogues for t in d.turns) > 0
    assert cell.kept == cell.probes
    assert cell.calls == 2 * sum(len(d.turns) for d in load.dialogues)  # think, then call_llm
    oa_cached, oa_total, an_cached, an_total = cell.cache
    assert 0 < an_cached < an_total and 0 < oa_cached < oa_total
    assert cell.cost > 0


def test_an_answer_counts_only_if_the_question_call_was_sent_it(tmp_path: Path) -> None:
    # The first question's reply says the value: too late for that question's prompt,
    # in the history for the second. Reading any other call's prompt gets one wrong.
    probe = Probe("code", (("Z4471Q",),), True)
    turns = (
        Turn(("Hello there.",), (AIMessage("Hi."),)),
        Turn(("What is the code?",), (AIMessage("It is Z4471Q."),), (probe,)),
        Turn(("And the code again?",), (AIMessage("ok"),), (probe,)),
    )
    cell = Cell()
    assert play(Dialogue("late", turns), "tiered", True, 32_000, tmp_path / "l.sqlite", cell,
                None) is None  # fmt: skip
    assert (cell.kept, cell.probes) == (1, 2)


def _tool_dialogue(system: str | None = None) -> Dialogue:
    call = {"name": "lookup_booking", "args": {"ref": "K2"}, "id": "c1"}
    first = Turn(
        ("Find booking K2.",),
        (AIMessage("", tool_calls=[call]), AIMessage("Found it.")),
    )
    ask = Turn(("Which seat?",), (AIMessage("ok"),), (Probe("seat", (("14C",),), True),))
    return Dialogue(
        "tools",
        (first, ask),
        system=system,
        results={answers_kept._key("lookup_booking", {"ref": "K2"}): ('{"seat": "14C"}',)},
        tools=("lookup_booking",),
    )


def test_recorded_tools_are_bound_and_answer_with_their_results(tmp_path: Path) -> None:
    cell = Cell()
    error = play(_tool_dialogue(), "tiered", False, 32_000, tmp_path / "t.sqlite", cell, None)
    assert error is None
    assert (cell.kept, cell.probes) == (1, 1)  # the seat came from the tool's recorded result


def test_a_cell_that_raises_reports_the_error_class(tmp_path: Path) -> None:
    huge = "Policy. " + "Always be careful with bookings. " * 400  # over a 2K window alone
    cell = Cell()
    error = play(_tool_dialogue(huge), "tiered", False, 2_000, tmp_path / "e.sqlite", cell, None)
    assert error is not None and error.startswith("BudgetExceededError (tools, turn 0)")


def test_the_command_writes_tables_for_the_generated_workload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written: dict[str, Any] = {}
    monkeypatch.setattr(answers_kept, "emit", lambda name, lines: written.update({name: lines}))
    argv = ["--quick", "--workloads", "conversations", "--sessions", "3", "--windows", "2000",
            "--strategies", "tiered", "--workers", "1"]  # fmt: skip
    assert answers_kept.main(argv) == 0
    text = "\n".join(written["answers_kept"])
    assert "| tiered (default) |" in text and "% → " in text
    assert "Defaults (tiered) at 2K: recall on" in text
    assert "Command: `python benchmarks/answers_kept.py --quick" in text


def test_every_strategy_of_the_registry_is_run_by_default_the_baseline_after_the_default() -> None:
    from langgraph_ctx.strategies.registry import STRATEGIES as REGISTRY

    assert sorted(answers_kept.STRATEGIES) == sorted(REGISTRY)
    assert answers_kept.STRATEGIES[:2] == ("tiered", "none")
