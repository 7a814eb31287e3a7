"""Anthropic's cache breakpoints, and ARC's memory sent one block per entry.

Anthropic caches a prefix only where a request marks a breakpoint, and finds an
entry only at a block boundary. ARC replaces the latest interaction with a memory
entry on every call, so the one place the previous call's prompt survives is the
end of its memory: it must be a block boundary (the memory is sent one block per
entry) and a breakpoint (``cache_control``). The payloads are built by
``ChatAnthropic``'s own builder, offline.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from langgraph_ctx import Budget
from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.history.breakpoints import LIMIT, mark_breakpoints
from langgraph_ctx.markers import KEY, PARTS, appended_parts
from langgraph_ctx.testing import ScriptedChatModel, thought_about_the_question

anthropic = pytest.importorskip("langchain_anthropic")

SYSTEM = "You audit vendors. Be exact about ids and amounts."
TURNS = 8


class OfflineAnthropic(anthropic.ChatAnthropic):  # type: ignore[misc]
    """``ChatAnthropic`` that builds each request's payload and answers without the network."""

    _payloads: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
        kwargs.pop("run_manager", None)
        self._payloads.append(self._get_request_payload(messages, stop=stop, **kwargs))
        n = len(self._payloads)  # a new finding each call: no stall, so no reflection
        reply = AIMessage(f"Vendor {n}: invoice INV-{n:04d} totals ${1_000 + n}.00, checked.")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def payloads(self) -> list[dict[str, Any]]:
        return self._payloads


def offline() -> OfflineAnthropic:
    return OfflineAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-offline")


def run_arc(model: Any, **options: Any) -> Any:
    options = {"think": False, **options}
    agent = create_context_agent(
        model,
        strategy="arc",
        system_prompt=SYSTEM,
        budget=Budget.for_window(32_000),
        **options,
    )
    config: Any = {"configurable": {"thread_id": "arc"}}
    for turn in range(TURNS):
        ask = f"Turn {turn}: pull the invoices of Vendor {turn} and check the totals."
        agent.invoke({"messages": [HumanMessage(ask)]}, config)
    return agent.get_state(config).values["messages"]


def blocks(payload: dict[str, Any]) -> list[tuple[str, bool]]:
    """The payload's system and message blocks in cache order: (text, is a breakpoint)."""
    out: list[tuple[str, bool]] = []
    system = payload.get("system") or []
    for block in [{"text": system}] if isinstance(system, str) else system:
        out.append((block["text"], "cache_control" in block))
    for message in payload["messages"]:
        content = message["content"]
        for block in [{"text": content}] if isinstance(content, str) else content:
            text = json.dumps({k: v for k, v in block.items() if k != "cache_control"})
            out.append((f"{message['role']}: {text}", "cache_control" in block))
    return out


def breakpoints(payload: dict[str, Any]) -> int:
    return json.dumps(payload).count('"cache_control"')


def test_each_call_marks_the_stable_prefix_the_end_of_the_memory_and_the_tail() -> None:
    model = offline()
    run_arc(model)
    assert len(model.payloads) == TURNS
    for payload in model.payloads[3:]:  # once the memory holds two entries
        system = payload["system"]
        assert system[-1]["text"] == SYSTEM and system[-1]["cache_control"]["type"] == "ephemeral"
        marked = [text for text, mark in blocks(payload)[len(system) :] if mark]
        assert memory_end(marked) == len(marked) - 1  # the memory's newest entry, last
        assert payload["cache_control"] == {"type": "ephemeral"}  # the tail: the direct API's
        assert breakpoints(payload) <= LIMIT


def memory_end(marked: list[str]) -> int:
    """Which of the marked blocks (rendered by :func:`blocks`) is the memory's last part."""
    [at] = [j for j, t in enumerate(marked) if t.startswith("user") and '"text": "\\n> (t' in t]
    return at


@pytest.mark.parametrize("think", [False, True])
def test_each_call_finds_the_previous_calls_memory_at_a_marked_block_boundary(
    think: bool,
) -> None:
    # With think on, the thought (per-call) joins the last user message, which in
    # ARC's layout can be the memory itself: it goes after the memory's parts.
    model = offline()
    thinker = ScriptedChatModel(structured_default=thought_about_the_question())
    live = run_arc(model, think=think, think_model=thinker)
    served = 0
    for before, after in zip(model.payloads[3:], model.payloads[4:], strict=False):
        a, b = blocks(before), blocks(after)
        marked = [j for j, (_, mark) in enumerate(a) if mark]
        end = marked[memory_end([a[j][0] for j in marked])]  # the memory's end
        assert [t for t, _ in b[: end + 1]] == [t for t, _ in a[: end + 1]]
        assert any(mark for _, mark in b[end + 1 :])  # and this call marks its own, later
        served += 1
    assert served == TURNS - 4
    # The model reads the memory as the checkpoint holds it: the blocks join to its text.
    memory = next(m for m in live if PARTS in (m.additional_kwargs.get(KEY) or {}))
    last = model.payloads[-1]["messages"][0]["content"]
    texts = [
        b["text"] for b in last if isinstance(b, dict) and "[Current thought]" not in b["text"]
    ]
    parts = appended_parts(memory)
    assert parts is not None and len(parts) >= TURNS - 2
    assert "".join(texts[-len(parts) :]) == memory.text
    assert think == any("[Current thought]" in json.dumps(p) for p in model.payloads)


def test_nothing_is_marked_with_cache_breakpoints_off_or_another_model() -> None:
    model = offline()
    run_arc(model, cache_breakpoints=False)
    assert all(breakpoints(p) == 0 for p in model.payloads)
    scripted = ScriptedChatModel(default="Checked. " * 12)
    run_arc(scripted)
    for call in scripted.calls:
        assert "cache_control" not in json.dumps([m.content for m in call.messages])
    with pytest.raises(ConfigurationError, match="cache_breakpoints"):
        create_context_agent(scripted, cache_breakpoints="yes")


def memory_message(parts: int) -> HumanMessage:
    text = "[Interaction memory]\n(t1) a" + "".join(f"\n(t{i}) b" for i in range(2, parts + 1))
    cuts = [i for i in range(len(text)) if text[i] == "\n"][1:]
    return HumanMessage(
        [{"type": "text", "text": p} for p in _split(text, cuts)],
        additional_kwargs={KEY: {PARTS: cuts}},
    )


def _split(text: str, cuts: list[int]) -> list[str]:
    return [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]


@pytest.mark.parametrize(("own", "added"), [(0, 2), (1, 2), (2, 1), (3, 0)])
def test_marks_stay_within_anthropics_limit_of_four(own: int, added: int) -> None:
    # The system prompt already carries `own` marks of the user's; the tail takes one.
    mark = {"type": "ephemeral"}
    rules = [{"type": "text", "text": f"rule {i}", "cache_control": mark} for i in range(own)]
    system = SystemMessage([*rules, {"type": "text", "text": SYSTEM}])
    prompt = [system, HumanMessage("task"), memory_message(4), AIMessage("ok"), HumanMessage("q")]
    marked = mark_breakpoints(prompt)
    count = sum(json.dumps(m.content).count("cache_control") for m in marked)
    assert count == own + added <= LIMIT - 1
    assert [m.content for m in prompt] != [m.content for m in marked] or added == 0
    assert prompt[2].content[-1] == memory_message(4).content[-1]  # the input is left as it was


def test_appended_parts_cut_the_text_where_each_part_starts() -> None:
    text = "[Interaction memory]\n(t1) a\n(t2) b"
    message = HumanMessage(text, additional_kwargs={KEY: {PARTS: [27]}})
    assert appended_parts(message) == ["[Interaction memory]\n(t1) a", "\n(t2) b"]
    for bad in ([0], [27, 27], [len(text)], [99], ["27"]):
        edited = HumanMessage(text, additional_kwargs={KEY: {PARTS: bad}})
        assert appended_parts(edited) is None, bad  # sent as one block, never cut wrong
    assert appended_parts(HumanMessage(text)) is None
    one = HumanMessage(text, additional_kwargs={KEY: {PARTS: []}})  # one part so far
    assert appended_parts(one) == [text]


def test_recall_never_anchors_in_arcs_memory() -> None:
    # In the session's first turn the question is the pinned task, before the
    # memory: within that turn's tool loop the memory is the last user message (a
    # later turn's question stays raw after it, 7a375dc). Rewritten every call, it
    # is no anchor for recall's kept lines ("delta"): the block is per-call there,
    # after the memory's parts, which stay where the previous call had them.
    from langchain_core.tools import tool

    from langgraph_ctx.markers import RECALL_PREFIX
    from langgraph_ctx.strategies.arc.manager import MEMORY_TITLE

    @tool
    def get_order(order_id: str) -> str:
        """Fetch an order."""
        return f"{order_id}: carrier DHL, booking BKG-{order_id[-3:]}; " + "scanned; " * 100

    made: list[str] = []

    def act(messages: list[BaseMessage]) -> AIMessage:
        # Twelve lookups in the first turn (its results folded, then recalled),
        # one a turn after it.
        if messages[-1].type == "tool" and (len(made) >= 12 or "Turn" in messages[-2].text):
            return AIMessage(f"Found {messages[-1].text[:30]}")
        made.append(f"ORD-{len(made):03d}")
        call = {"name": "get_order", "args": {"order_id": made[-1]}}
        return AIMessage("", tool_calls=[{**call, "id": f"c{len(made)}"}])

    model = ScriptedChatModel(default=act)
    agent = create_context_agent(
        model,
        [get_order],
        always_include=["get_order"],
        strategy="arc",
        recall=True,
        think=False,
        budget=Budget.for_window(16_000),
    )
    config: Any = {"configurable": {"thread_id": "arc-recall"}}
    task = "What are the bookings for ORD-003, ORD-005 and ORD-007? Check every order."
    agent.invoke({"messages": [HumanMessage(task)]}, config)
    for turn in range(4):
        ask = f"Turn {turn}: what is the booking for ORD-{turn:03d}?"
        agent.invoke({"messages": [HumanMessage(ask)]}, config)

    in_memory = 0
    for call in model.calls:
        memory = next(m for m in call.messages if MEMORY_TITLE in m.text)
        assert memory.text.startswith(MEMORY_TITLE)
        assert isinstance(memory.content, list)
        assert not any(RECALL_PREFIX in b["text"] for b in memory.content[:-1])  # never inside
        if memory is next(m for m in reversed(call.messages) if m.type == "human"):
            in_memory += RECALL_PREFIX in memory.content[-1]["text"]  # after the parts
        else:
            assert RECALL_PREFIX not in memory.text  # a later question is the anchor
    assert in_memory >= 3
