"""A model-backed manager reads whole what it rewrites (issue 35): AdaCoM's manager,
BACM's fold policy and ARC's manager are shown every character of the content their
text replaces, over several calls when it does not fit the manager model's room
(its window, from its profile), never cut; the answers of the calls make one edit,
which the agent's next prompt shows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.strategies.adacom.policy import ChatModelManager, ManagerRequest
from langgraph_ctx.strategies.manager_room import Item, ManagerRoomError, chunks, split_text
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

COUNT = TokenCounter().count_text
ROWS = [
    f"Row {i:03d}: warehouse W-{i} ships to dock D-{300 + 7 * i}, carrier KX-{4400 + i}."
    for i in range(200)
]


@tool
def manifest(region: str) -> str:
    """The shipping manifest of a region."""
    return "\n".join(ROWS)


def prompt_tokens(call: Any) -> int:
    return sum(COUNT(m.text) for m in call.messages)


def room_of(window: int) -> int:
    return Budget.for_window(window).prompt_limit


def one_manifest_call() -> ScriptedChatModel:
    call = {"name": "manifest", "args": {"region": "north"}, "id": "m1"}
    return ScriptedChatModel(responses=[AIMessage("", tool_calls=[call]), "Done."])


def first_row(text: str) -> str:
    found = re.search(r"Row \d{3}", text)
    assert found, text[-300:]
    return found.group(0)


# -- AdaCoM ----------------------------------------------------------------------


def test_adacom_manager_reads_an_oversized_result_in_parts_and_its_parts_make_the_rewrite() -> None:
    # The 200-row result (about 5,000 tokens) is over the extract threshold; the
    # manager model's window is 3,000 tokens: no one call can show it.
    def extract(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        text = messages[-1].text
        found = re.search(r"id=(\S+) role=tool .*EXTRACT", text)
        if found is None:
            return {"modifications": []}
        part = text[found.end() :]
        mod = {
            "ids": [found.group(1)],
            "role": "tool",
            "justification": "keep the first row",
            "new_content": f"kept {first_row(part)}",
        }
        return {"modifications": [mod]}

    manager = ScriptedChatModel(structured_default=extract, window=3_000)
    model = one_manifest_call()
    agent = create_context_agent(
        model,
        [manifest],
        strategy="adacom",
        summary_model=manager,
        think=False,
        always_include=["manifest"],
    )
    agent.invoke(
        {"messages": [HumanMessage("Which dock serves W-97?")]},
        {"configurable": {"thread_id": "t"}},
    )

    asked = [c for c in manager.calls if c.structured == "ManagerAction"]
    assert len(asked) >= 3  # about 5,000 tokens through calls of at most 2,485
    assert all(prompt_tokens(c) <= room_of(3_000) for c in asked)
    seen = "\n".join(c.text for c in asked)
    assert all(row in seen for row in ROWS)  # every row, whole, in some call
    assert "more characters]" not in seen
    assert all("part " in c.text for c in asked)
    # The agent reads the result as the parts' rewrites joined, in order.
    shown = model.calls[1].messages[-1]
    assert isinstance(shown, ToolMessage)
    firsts = re.findall(r"kept (Row \d{3})", shown.text)
    extracting = [c for c in asked if "EXTRACT (part" in c.text]
    assert len(firsts) == len(extracting) >= 2 and firsts[0] == "Row 000"
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)


def test_adacom_manager_shows_every_message_whole_by_default() -> None:
    # A 2,700-character result under the extract threshold: the 2,000-character
    # preview our default had cut its end from the manager that may rewrite it.
    record = "Record: " + "carrier manifest pallet customs tariff " * 70 + "END-OF-RECORD"
    call = {"name": "lookup", "args": {"topic": "a"}, "id": "c1"}

    @tool
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return record

    manager = ScriptedChatModel(structured_default={"modifications": []})
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[call]), "a", "b", "c"])
    agent = create_context_agent(
        model,
        [lookup],
        strategy="adacom",
        summary_model=manager,
        think=False,
        always_include=["lookup"],
    )
    for q in ("Look a up.", "And then?"):
        agent.invoke({"messages": [HumanMessage(q)]}, {"configurable": {"thread_id": "t"}})
    asked = [c for c in manager.calls if c.structured == "ManagerAction"]
    assert asked and "END-OF-RECORD" in asked[-1].text
    assert "more characters]" not in asked[-1].text


def test_a_manager_room_too_small_for_what_every_call_shows_is_a_clear_failure() -> None:
    big_task = HumanMessage("Find it. " + "constraint " * 3_000, id="task")
    request = ManagerRequest(
        messages=[big_task, HumanMessage("[Working note]\n(nothing)", id="note")],
        tokens={},
        protected=frozenset({"task"}),
        task=big_task,
        note_id="note",
        triggers=("utilization",),
    )
    manager = ChatModelManager(
        ScriptedChatModel(structured_default={"modifications": []}), room=1_000
    )
    with pytest.raises(ManagerRoomError, match="room of 1,000 tokens"):
        manager.propose(request)


def test_chunks_cut_only_at_line_ends_and_lose_nothing() -> None:
    text = "\n".join(ROWS)
    pieces = split_text(text, 300, COUNT)
    assert len(pieces) > 3 and "".join(pieces) == text
    assert all(COUNT(p) <= 300 for p in pieces) and all(p.endswith("\n") for p in pieces[:-1])
    items = [Item("a", "[a]", "short"), Item("b", "[b]", text), Item("c", "[c]", "tail")]
    packed = chunks(items, 400, COUNT)
    b_parts = [p for chunk in packed for p in chunk if p.key == "b"]
    assert "".join(p.body for p in b_parts) == text
    assert [p.part for p in b_parts] == list(range(1, len(b_parts) + 1))
    assert packed[0][0].key == "a" and packed[-1][-1].key == "c"


# -- BACM ------------------------------------------------------------------------


FILLER = "carrier manifest pallet customs tariff route ledger invoice " * 60


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the records."""
    return f"Record {topic}: {FILLER[:2600]} END-OF-RECORD-{topic}"


def test_bacm_policy_reads_every_step_over_several_calls_and_folds_what_they_named() -> None:
    # Nine records of about 360 tokens at a 4K window: the policy is asked for a
    # fold; its model's window is 2,000 tokens, too small for the steps together.
    def fold_shown(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        text = messages[-1].text
        ids = re.findall(r"\[step (c[0-9a-f]{5}x*)\] \d+ tokens(?! CURRENT)", text)
        if not ids:
            return {"commit_ids": "NONE", "merged": ""}
        topics = re.findall(r"Record (t\d)", text)
        return {"commit_ids": ids, "merged": f"digest of {'+'.join(topics)}"}

    policy = ScriptedChatModel(structured_default=fold_shown, window=2_000)
    calls = [{"name": "lookup", "args": {"topic": f"t{i}"}, "id": f"c{i}"} for i in range(9)]
    model = ScriptedChatModel(responses=[*(AIMessage("", tool_calls=[c]) for c in calls), "Done."])
    agent = create_context_agent(
        model,
        [lookup],
        strategy="bacm",
        summary_model=policy,
        think=False,
        always_include=["lookup"],
        budget=Budget.for_window(4_000),
    )
    agent.invoke(
        {"messages": [HumanMessage("Find the records.")]}, {"configurable": {"thread_id": "t"}}
    )

    asked = [c for c in policy.calls if c.structured == "FoldAction"]
    # The first decision's calls: from its part 1 to the next decision's part 1.
    starts = [i for i, c in enumerate(asked) if "part 1 of" in c.text]
    decision = asked[starts[0] : starts[1] if len(starts) > 1 else None]
    assert len(decision) >= 2
    assert all(prompt_tokens(c) <= room_of(2_000) for c in decision)
    seen = "\n".join(c.text for c in decision)
    listed = re.findall(r"Record (t\d)", seen)
    assert listed and all(f"END-OF-RECORD-{t}" in seen for t in listed)
    assert "more]" not in seen
    # One folded block, made of what each call named, its digests joined in order.
    later = "\n".join(m.text for c in model.calls for m in c.messages)
    digests = re.findall(r"digest of (t[\dt+]+)", later)
    assert len(set(digests)) >= 2
    folded = re.search(r"\[Folded steps ([^\]:]+):[^\]]*\]\n((?:> digest of .*\n?)+)", later)
    assert folded is not None and folded.group(2).count("digest of") >= 2


# -- ARC -------------------------------------------------------------------------


def test_arc_manager_folds_an_interaction_larger_than_its_room_part_by_part() -> None:
    def update(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        if messages[-1].text.startswith("Task:") and "Newest interaction" not in messages[-1].text:
            return {"items": [{"id": "c1", "text": "Find the dock of W-97"}]}
        newest = messages[-1].text.split("Newest interaction (turn ")[1]
        rows = re.findall(r"Row \d{3}", newest)
        return {"entry": f"read {rows[0]}-{rows[-1]}" if rows else "", "checklist": []}

    manager = ScriptedChatModel(structured_default=update, window=3_000)
    call = {"name": "manifest", "args": {"region": "north"}, "id": "m1"}
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[call]), "Checking.", "Done."])
    agent = create_context_agent(
        model,
        [manifest],
        strategy="arc",
        summary_model=manager,
        think=False,
        always_include=["manifest"],
    )
    cfg = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("Which dock serves W-97?")]}, cfg)
    agent.invoke({"messages": [HumanMessage("Sure?")]}, cfg)

    updates = [c for c in manager.calls if c.structured == "MemoryUpdate"]
    parts = [c for c in updates if "part 1 of" in c.text or re.search(r"part \d+ of", c.text)]
    assert len(parts) >= 3
    assert all(prompt_tokens(c) <= room_of(3_000) for c in updates)
    seen = "\n".join(c.text for c in parts)
    assert all(row in seen for row in ROWS)
    memory = next(m.text for m in model.calls[-1].messages if "[Interaction memory" in m.text)
    ranges = re.findall(r"read (Row \d{3})-(Row \d{3})", memory)
    assert len(ranges) == len(parts) and ranges[0][0] == "Row 000" and ranges[-1][1] == "Row 199"
