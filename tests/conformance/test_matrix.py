"""The conformance matrix: what a user gets from ``create_context_agent``, for every
strategy of the registry x recall on/off x think on/off x window {4K, 32K, 128K}
x saver {memory, SQLite file, PostgreSQL}, across a restart.

Each cell runs a session until its strategy has acted, restarts, and runs more
turns; every model call and every turn is checked (see
:mod:`tests.conformance.session` for what). For a database, the first part of
the session runs in a subprocess of its own in :data:`SUBPROCESS` cells, so the
restart is a real one; elsewhere the restart is a new graph and a new model on
the same saver (for an in-memory saver, the same saver object).

The whole matrix, databases at every window too, is ``python benchmarks/conformance.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_ctx import Budget
from langgraph_ctx.markers import RECALL_PREFIX
from langgraph_ctx.testing.scripted import ModelCall
from tests.conformance.session import (
    LEXICAL_PACE,
    MATRIX,
    MORE,
    TURNS,
    Cell,
    Record,
    call_violations,
    lost,
    provider_violations,
    run_phase,
    run_worker,
)
from tests.postgres_fixture import fresh_database

CELLS = [c for c in MATRIX if c.saver == "memory" or c.window == "4K"]
"""What the suite runs, within CI's time: every strategy x recall x think at every
window on the in-memory saver, and at 4K on SQLite and PostgreSQL. A database
changes where the session lives, not what the window makes the strategies do; a
128K session costs ten 4K ones."""
SUBPROCESS = {c for c in CELLS if c.saver != "memory" and c.window == "4K" and c.recall and c.think}
"""Where the session's first part runs in a process of its own: every strategy on
both databases, with recall and think on (every layer the agent has)."""

KNOWN: list[tuple[Any, str, bool]] = []
"""(which cells, why, strict): the defects this matrix finds, until they are fixed.
Strict where the cell fails every run: once it passes, the run fails, so the mark
goes with the fix."""


def _param(cell: Cell) -> Any:
    found = [(why, strict) for applies, why, strict in KNOWN if applies(cell)]
    marks = (
        [
            pytest.mark.xfail(
                strict=all(strict for _, strict in found),
                reason="; ".join(dict.fromkeys(why for why, _ in found)),
            )
        ]
        if found
        else []
    )
    return pytest.param(cell, id=cell.id, marks=marks)


@pytest.fixture(scope="module")
def matrix_database(postgres_url: str) -> Iterator[str]:
    """One database for every PostgreSQL cell: each is its own thread (the cell's id)."""
    with fresh_database(postgres_url) as url:
        yield url


def _saver(cell: Cell, request: pytest.FixtureRequest, tmp_path: Any) -> tuple[Any, str | None]:
    """The checkpointer both parts of the session get, and its URL (``None``: in memory)."""
    if cell.saver == "memory":
        return InMemorySaver(), None
    if cell.saver == "sqlite":
        url = f"sqlite:///{tmp_path / 'session.sqlite'}"
        return url, url
    url = request.getfixturevalue("matrix_database")
    return url, url


@pytest.mark.parametrize("cell", [_param(c) for c in CELLS])
def test_every_call_and_turn_keeps_its_promises_across_a_restart(
    cell: Cell, request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(*LEXICAL_PACE)
    saver, url = _saver(cell, request, tmp_path)
    if cell in SUBPROCESS:
        assert url is not None
        first = run_worker(cell, url, range(TURNS))
    else:
        first = run_phase(cell, saver, range(TURNS), url, {})
    record = Record()
    record.add(first)
    if not first.raised:  # a session that could not go on has no restart to check
        more = range(TURNS, TURNS + MORE)
        record.add(run_phase(cell, saver, more, url, first.events))
    shown = "\n".join(record.violations[:15])
    assert not record.violations, f"{len(record.violations)} violations:\n{shown}"
    assert first.acted, f"{cell.strategy} never acted before the restart: {first.events}"


def test_pace_with_its_default_encoder_keeps_them_too() -> None:
    """The cell above with PACE's default scorer where the ``embeddings`` extra is
    installed (all-MiniLM-L6-v2): the encoder changes what is condensed."""
    cell = Cell("pace", True, True, "32K", "memory")
    saver = InMemorySaver()
    record = run_phase(cell, saver, range(TURNS), None, {})
    assert record.acted
    record.add(run_phase(cell, saver, range(TURNS, TURNS + MORE), None, record.events))
    assert not record.violations, "\n".join(record.violations[:15])


# -- the checks can fail ------------------------------------------------------

TASK, QUESTION = "Audit the vendors.", "What is the invoice for Acme?"
CALL = {"name": "query_orders", "args": {}, "id": "c1", "type": "tool_call"}


def _call(*messages: Any, tools: tuple[dict[str, Any], ...] = ()) -> ModelCall:
    return ModelCall(tuple(messages), tools, text="\n".join(m.text for m in messages))


def test_the_call_checks_catch_each_violation() -> None:
    budget = Budget.for_window(4_000)
    good = _call(HumanMessage(TASK), AIMessage("ok"), HumanMessage(QUESTION))
    assert call_violations(good, budget, TASK, QUESTION, "t") == []
    orphan = _call(HumanMessage(TASK), ToolMessage("r", tool_call_id="c1"), HumanMessage(QUESTION))
    assert any("orphan" in v for v in call_violations(orphan, budget, TASK, QUESTION, "t"))
    unanswered = _call(HumanMessage(TASK), AIMessage("", tool_calls=[CALL]), HumanMessage(QUESTION))
    assert any("orphan" in v for v in call_violations(unanswered, budget, TASK, QUESTION, "t"))
    big = _call(HumanMessage(TASK + " word" * 4_000), HumanMessage(QUESTION))
    assert any("over the limit" in v for v in call_violations(big, budget, TASK, QUESTION, "t"))
    # Tool schemas are sent too: they count against the limit.
    schema = {"type": "function", "function": {"name": "f", "description": "x " * 4_000}}
    tooled = _call(HumanMessage(TASK), HumanMessage(QUESTION), tools=(schema,))
    assert any("over the limit" in v for v in call_violations(tooled, budget, TASK, QUESTION, "t"))
    taskless = _call(HumanMessage(QUESTION))
    assert call_violations(taskless, budget, TASK, QUESTION, "t") == [
        "t, call_llm: the task is missing"
    ]
    asked = _call(HumanMessage(TASK))
    assert (
        "the turn's question is missing" in call_violations(asked, budget, TASK, QUESTION, "t")[0]
    )


def test_the_provider_check_names_a_client_that_refuses() -> None:
    # Anthropic takes one system block, first: a summary left mid-history is refused.
    prompt = [SystemMessage("rules"), HumanMessage(TASK), SystemMessage("late"), HumanMessage("q")]
    found = provider_violations(prompt)
    assert any(v.startswith("anthropic refuses") for v in found), found
    assert provider_violations([SystemMessage("rules"), HumanMessage(TASK)]) == []


def test_the_loss_check_wants_each_message_verbatim_by_id() -> None:
    expected = [("user", "u000", TASK), ("tool", "c1", "rows")]
    state = [HumanMessage(TASK, id="u000"), ToolMessage("rows", tool_call_id="c1", id="r1")]
    assert lost(expected, state, []) == []
    assert lost(expected, state[:1], state[1:]) == []  # archived counts
    assert lost(expected, [HumanMessage(TASK + "!", id="u000"), state[1]], []) == [
        "user message u000 lost"
    ]
    assert lost(expected, [state[0], ToolMessage("row", tool_call_id="c1")], []) == [
        "tool message c1 lost"
    ]
    assert lost(expected, [HumanMessage(TASK, id="u001"), state[1]], []) == [
        "user message u000 lost"
    ]


def test_a_new_graph_on_the_same_in_memory_saver_keeps_the_archive() -> None:
    """The restart of the in-memory cells, checked against the new graph's archive
    alone: what recall, ``glimpse`` and ``original()`` of that graph can read."""
    cell = Cell("tiered", False, False, "4K", "memory")
    saver = InMemorySaver()
    first = run_phase(cell, saver, range(TURNS), None, {})
    assert first.acted and not first.violations
    after = run_phase(cell, saver, range(TURNS, TURNS + 1), None, first.events)
    assert not after.violations, "\n".join(after.violations[:5])


def test_the_provider_check_sees_a_marker_in_any_content_block() -> None:
    """Google's Content repr abbreviates a long list of parts ("<... 1 more items
    ...>"): the provider matrix's payload text hid a recall block in a sixth part."""
    blocks = [{"type": "text", "text": f"memory part {k}"} for k in range(7)]
    blocks.append({"type": "text", "text": f"{RECALL_PREFIX}\nthe invoice is INV-1"})
    prompt = [HumanMessage(TASK), AIMessage("ok"), HumanMessage(blocks)]
    assert provider_violations(prompt) == []
