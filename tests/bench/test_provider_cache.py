"""The provider cache meters on real payloads: what OpenAI's and Anthropic's published
rules would serve of a prompt, checked on conversations whose answer is known."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from harness.provider_cache import LOOKBACK, MINIMUM, STEP, ProviderMeters
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_ctx.tokens import load_encoding

pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain_openai")


def meters() -> ProviderMeters:
    encoding = load_encoding()
    assert encoding is not None
    return ProviderMeters(encoding.encode)


def words(n: int, word: str = "ledger") -> str:
    return " ".join([word] * n)


def turns(n: int, size: int = 60) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        out += [HumanMessage(f"Turn {i}: " + words(size)), AIMessage(f"Reply {i}: " + words(size))]
    return out


SYSTEM = SystemMessage("You keep the books. " + words(40))


def measure(
    m: ProviderMeters, prompt: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] = ()
) -> tuple[int, int, int, int]:
    return m.measure(prompt, tools)


def test_an_appended_conversation_is_served_whole_once_past_the_minimum() -> None:
    m = meters()
    history = [SYSTEM, *turns(12)]
    _, oa_total, _, an_total = measure(m, history)
    assert an_total >= MINIMUM  # big enough to be written
    oa_cached, _, an_cached, _ = measure(m, [*history, HumanMessage("Next: " + words(30))])
    assert an_cached == an_total  # the previous prompt, whole (its last block was a breakpoint)
    assert oa_total - STEP < oa_cached <= oa_total  # rounded down to a 128-token step
    assert (oa_cached - MINIMUM) % STEP == 0


def test_nothing_is_cached_below_the_minimum() -> None:
    m = meters()
    small = [SYSTEM, *turns(1, size=10)]
    measure(m, small)
    oa_cached, _, an_cached, _ = measure(m, [*small, HumanMessage("Next.")])
    assert oa_cached == 0 and an_cached == 0


def test_an_edit_far_back_leaves_anthropic_only_the_system_block() -> None:
    m = meters()
    system = SystemMessage("You keep the books. " + words(MINIMUM))  # cached on its own
    history = [system, *turns(2 * LOOKBACK)]  # more blocks than the lookback reaches
    _, _, _, whole = measure(m, history)
    edited = list(history)
    edited[2] = AIMessage("Reply 0: [cleared]")  # an old message changed, as clearing does
    oa_cached, _, an_cached, _ = measure(m, [*edited, HumanMessage("Next.")])
    other = meters()  # the system block alone: two prompts sharing nothing after it
    measure(other, [system, HumanMessage("One.")])
    _, _, served, _ = measure(other, [system, HumanMessage("Two.")])
    assert MINIMUM <= an_cached == served < whole  # the system breakpoint's entry, no more
    # OpenAI serves the longest shared prefix: the system prompt and the first turn.
    assert served <= oa_cached + STEP


def test_anthropic_looks_back_at_most_twenty_blocks_for_a_written_entry() -> None:
    near, far = meters(), meters()
    history = [SYSTEM, *turns(12)]
    _, _, _, first = measure(near, history)
    measure(far, history)
    _, _, cached, _ = measure(near, [*history, *turns(LOOKBACK // 2 - 1)])
    assert cached == first
    _, _, cached, _ = measure(far, [*history, *turns(LOOKBACK // 2 + 1)])
    assert cached == 0  # the entry is 22 blocks back: out of reach


def test_an_edit_near_the_end_is_served_up_to_the_last_written_boundary_before_it() -> None:
    m = meters()
    history = [SYSTEM, *turns(12)]
    _, _, _, first = measure(m, history)
    grown = [*history, HumanMessage("More: " + words(20)), AIMessage("Fine.")]
    _, _, cached, _ = measure(m, grown)
    assert cached == first
    edited = [*grown[:-1], AIMessage("Fine, noted.")]  # the last block changed
    _, _, cached, _ = measure(m, [*edited, HumanMessage("Next.")])
    assert cached == first  # the breakpoint written one call earlier, not the changed one


def test_a_system_message_in_the_middle_is_a_call_anthropic_refuses() -> None:
    m = meters()
    prompt = [SYSTEM, *turns(2), SystemMessage("[Conversation Summary] old turns"), *turns(1)]
    _, oa_total, an_cached, an_total = measure(m, prompt)
    assert oa_total > 0  # OpenAI takes it
    assert (an_cached, an_total) == (0, 0) and m.refused == {"openai": 0, "anthropic": 1}


def test_the_tools_come_first_so_reordering_them_loses_the_whole_prompt() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from langgraph_ctx.testing.catalog import catalog_tools

    tools = [convert_to_openai_tool(t) for t in catalog_tools(6)]
    history = [SYSTEM, *turns(12)]
    same, moved = meters(), meters()
    for m in (same, moved):
        measure(m, history, tools)
    grown = [*history, HumanMessage("Next.")]
    oa, _, an, _ = measure(same, grown, tools)
    assert oa > MINIMUM and an > MINIMUM  # the same tools: the prompt is served
    oa, _, an, _ = measure(moved, grown, [*tools[1:], tools[0]])
    assert an == 0  # tools are first in Anthropic's cache order
    assert oa < MINIMUM  # and in OpenAI's request, before every message


def test_a_message_grown_by_parts_is_served_up_to_where_the_previous_call_ended_it() -> None:
    # ARC's shape: a memory that gains an entry each call, then the latest
    # interaction, replaced each call. The memory's end is marked (mark_breakpoints,
    # as call_llm sends it to Anthropic), so the previous call's entry is found
    # there; sent as one block, nothing after the system block would be.
    from langgraph_ctx.markers import KEY, PARTS
    from langgraph_ctx.middleware.placement import place_messages

    def prompt(entries: int, grows: bool) -> list[BaseMessage]:
        text = "[Interaction memory]" + "".join(f"\n(t{i}) " + words(80) for i in range(entries))
        starts = [i for i, c in enumerate(text) if c == "\n"][1:]
        marks = {KEY: {PARTS: starts}} if grows else {}
        memory = HumanMessage(text, additional_kwargs=marks)
        latest = [AIMessage(f"Step {entries}: " + words(300)), HumanMessage("Go on.")]
        return place_messages([SYSTEM, HumanMessage("The task."), memory, *latest])

    for grows in (True, False):
        m = meters()
        measure(m, prompt(20, grows))
        served = [measure(m, prompt(n, grows))[2] for n in range(21, 25)]
        # The previous call's prompt up to its memory's end: its tokens alone.
        ends = [meters().measure(prompt(n - 1, grows)[:3])[3] for n in range(21, 25)]
        assert ends[0] > MINIMUM
        assert served == (ends if grows else [0, 0, 0, 0])


def anthropic_prompts(**options: Any) -> tuple[list[list[BaseMessage]], list[dict[str, Any]]]:
    """Twenty turns of an order desk on the real ``ChatAnthropic`` client (its prompts
    recorded, its replies scripted) at a 64K window, ``options`` passed to
    ``create_context_agent``: every prompt it was sent, and the tool's schema."""
    from langchain_anthropic import ChatAnthropic
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import PrivateAttr

    from langgraph_ctx import Budget
    from langgraph_ctx.agent import create_context_agent

    @tool
    def get_order(order_id: str) -> str:
        """Fetch an order."""
        return f"{order_id}: " + "scanned at hub; " * 150

    class Recording(ChatAnthropic):  # type: ignore[misc]
        _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

        def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> Any:
            self._prompts.append(list(messages))
            n, last = len(self._prompts), messages[-1]
            call = {"name": "get_order", "args": {"order_id": f"ORD-{n}"}, "id": f"c{n}"}
            calls = [] if last.type == "tool" else [call]
            reply = AIMessage(f"Found: {last.text[:40]}", tool_calls=calls)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    model = Recording(model="claude-sonnet-4-5", api_key="sk-ant-offline")
    agent = create_context_agent(
        model,
        [get_order],
        always_include=["get_order"],
        system_prompt=SYSTEM.text,
        budget=Budget.for_window(64_000),
        **options,
    )
    for turn in range(20):
        ask = f"Turn {turn}: where is order ORD-{turn}?"
        agent.invoke({"messages": [HumanMessage(ask)]}, {"configurable": {"thread_id": "t"}})
    return model._prompts, [convert_to_openai_tool(get_order)]


def test_an_agent_that_thinks_keeps_its_prompt_cached_on_anthropics_rule() -> None:
    # The thought rides in the turn's user message for this call only; the next
    # turn sends that message without it, so no entry written at the end of a
    # prompt is found again. The breakpoint on the message before it is.
    from langgraph_ctx.testing import ScriptedChatModel, thought_about_the_question

    served = {}
    for think in (False, True):
        thinker = ScriptedChatModel(
            structured_default=thought_about_the_question("tool_call", "get_order")
        )
        prompts, tools = anthropic_prompts(think=think, think_model=thinker)
        m = meters()
        cached = total = 0
        for prompt in prompts[4:]:
            _, _, hit, sent = m.measure(prompt, tools)
            cached, total = cached + hit, total + sent
        served[think] = cached / total
    assert served[False] > 0.9
    # Without the breakpoint before the per-call thought, thinking lost most of the cache.
    assert served[True] > served[False] - 0.05


def test_bacms_budget_line_leaves_the_prompt_cached_on_anthropics_rule() -> None:
    # The budget line changes on every call and the next call sends its message
    # without it. In front of the observation it changed that message's first block:
    # no entry written at the end of a prompt was found again (far less of BACM's
    # prompt served than on the prefix rule: see benchmarks/RESULTS.md). After the
    # observation, in a block of its own with a breakpoint before it, it is.
    prompts, tools = anthropic_prompts(strategy="bacm", think=False)
    assert any("[Context budget:" in m.text for m in prompts[-1])
    m = meters()
    cached = total = prefix = prefix_total = 0
    for prompt in prompts[4:]:
        openai_hit, openai_sent, hit, sent = m.measure(prompt, tools)
        cached, total = cached + hit, total + sent
        prefix, prefix_total = prefix + openai_hit, prefix_total + openai_sent
    assert cached / total > prefix / prefix_total - 0.05
