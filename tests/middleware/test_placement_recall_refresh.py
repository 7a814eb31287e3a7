"""ProviderPlacement(recall_refresh="compression"): one recall block per span, in the prefix."""

from __future__ import annotations

import itertools
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_ctx import (
    Budget,
    ConfigurationError,
    ContextState,
    MemoryBank,
    MemoryRecall,
    Pipeline,
    PreflightCheck,
    ProviderPlacement,
    TieredCompression,
    is_summary,
)
from langgraph_ctx.markers import RECALL_PREFIX
from langgraph_ctx.middleware.recall import RECALL_END
from langgraph_ctx.state import LEDGER, LedgerEntry, ledger_reducer
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter

CITIES = ["Antwerp", "Bilbao", "Cadiz", "Danzig", "Esbjerg", "Faro", "Genoa", "Hull"]
BUDGET = Budget.for_window(6_000)


class Drifting(ScriptedChatModel):
    """Reports input tokens 0-30% over our count, changing from call to call, so
    that calibration depends on which calls a process has seen."""

    def _usage(self, messages: Any, tools: Any, reply: Any) -> Any:
        usage = super()._usage(messages, tools, reply)
        factor = 1.0 + 0.1 * (len(self.calls) % 4)
        usage["input_tokens"] = round(usage["input_tokens"] * factor)
        return usage


def run(
    refresh: str,
    turns: int = 40,
    per_turn: float | None = 1.0,
    processes: int = 1,
    schema: Any = None,
    usage: bool | str = True,
    prepare_ahead: bool = True,
) -> tuple[ScriptedChatModel, list[dict[str, Any]], Any]:
    """``processes``: that many copies of the graph (each its own pipeline, so its own
    memory of the session) serve the thread's turns in turn, over one checkpointer, as
    LangGraph Server's replicas do."""
    bank = MemoryBank()
    for city in CITIES:
        text = f"Shipments to {city} clear customs at the {city} office. " + "Papers. " * 60
        bank.remember(("alice",), text)
    # Replies with ids of their own: summaries quote them, and two runs compare alike.
    replies = [AIMessage("Noted. " * 30, id=f"reply-{i}") for i in range(turns)]
    kind = Drifting if usage == "drifting" else ScriptedChatModel
    model = kind(responses=replies, report_usage=bool(usage))
    saver = InMemorySaver()

    def graph(refresh: str) -> Any:
        builder = StateGraph(schema or ContextState)
        builder.add_node("call_llm", lambda state: {"messages": [model.invoke(state["messages"])]})
        builder.add_edge(START, "call_llm")
        middleware = [
            PreflightCheck(),
            TieredCompression(prepare_ahead=prepare_ahead),
            MemoryRecall(bank),
            ProviderPlacement(recall_refresh=refresh, recall_per_turn=per_turn),  # type: ignore[arg-type]
        ]
        return Pipeline(middleware, budget=BUDGET).attach(builder).compile(saver)

    # "delta+call": processes alternating between two settings (a redeploy changed it).
    modes = refresh.split("+")
    graphs = [graph(modes[i % len(modes)]) for i in range(max(processes, len(modes)))]
    processes = len(graphs)
    config: Any = {"configurable": {"thread_id": "t", "user_id": "alice"}}
    events: list[dict[str, Any]] = []
    first = [SystemMessage("You route freight.")]
    for turn in range(turns):
        city = CITIES[turn % len(CITIES)]
        text = f"Turn {turn}: where does the shipment to {city} clear customs? " + "cargo " * 40
        inputs = {"messages": [*first, HumanMessage(text, id=f"h{turn}")]}
        first = []
        for part in graphs[turn % processes].stream(inputs, config, stream_mode="custom"):
            events.append(part["langgraph_ctx"])
    return model, events, graphs[0].get_state(config).values


def _reports_match(model: ScriptedChatModel, events: list[dict[str, Any]]) -> list[int]:
    """Each call's usage report is what the model received (within 20 tokens), and no
    call passed the red line. Returns the tokens received per call."""
    sent = [
        e["data"]["sent_utilization"] * BUDGET.window
        for e in events
        if "sent_utilization" in e["data"]
    ]
    received = [TokenCounter().count_messages(list(call.messages)) for call in model.calls]
    assert len(sent) == len(received)
    assert all(abs(r - s) < 20 for r, s in zip(received, sent, strict=True))
    assert max(received) <= BUDGET.red_line
    return received


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.slow
def test_the_kept_block_is_byte_identical_until_a_compression_replaces_it(processes: int) -> None:
    """Also when two processes take the thread's turns in turn (the block is checkpointed)."""
    model, events, state = run("compression", turns=60, processes=processes)
    assert state["session"]["recall_kept"]["content"]
    assert any(is_summary(m) for m in state["messages"])
    leads = [call.messages[0].text for call in model.calls]
    assert all(RECALL_PREFIX in lead for lead in leads)  # in the stable prefix, every call
    # Never in the user's message: the last user message is the user's own words.
    assert all(RECALL_PREFIX not in call.messages[-1].text for call in model.calls)
    compressed = {i for i, e in enumerate(_per_call(events)) if "compression" in e}
    changes = [i for i in range(1, len(leads)) if leads[i] != leads[i - 1]]
    assert len(changes) >= 2 and set(changes) <= compressed  # only when compressed
    # Recall asked about another city on every turn; the model saw one block per span.
    assert len(set(leads)) == len(changes) + 1 < len(leads) // 3
    # Pre-flight counted the kept block (reserved), recall's own block was taken back:
    # each call's report is what the model received, so compression made room for
    # the block and no call went past the red line.
    _reports_match(model, events)


def test_per_call_recall_changes_with_each_turn_in_the_last_user_message() -> None:
    model, _, _ = run("call", turns=6)
    blocks = [call.messages[-1].text.split("\n\n")[0] for call in model.calls]
    assert all(b.startswith(RECALL_PREFIX) for b in blocks)
    assert len(set(blocks)) > 1


def test_a_bad_recall_refresh_fails_when_configured() -> None:
    with pytest.raises(ConfigurationError, match="recall_refresh"):
        ProviderPlacement(recall_refresh="turn")  # type: ignore[arg-type]


def _per_call(events: list[dict[str, Any]]) -> list[set[str]]:
    """The kinds each model call recorded (pre-flight's ``utilization`` comes first)."""
    calls: list[set[str]] = []
    for e in events:
        if e["kind"] == "utilization":
            calls.append(set())
        if calls:
            calls[-1].add(e["kind"])
    return calls


def test_create_context_agent_takes_recall_refresh_in_one_argument() -> None:
    from langchain_core.messages import AIMessage

    from langgraph_ctx.agent import create_context_agent
    from langgraph_ctx.storage.archive import InMemoryArchive

    def ask(refresh: str) -> list[Any]:
        archive = InMemoryArchive()
        archive.put("t", [HumanMessage("The dock code is 4471.", id="old")], reason="compressed")
        model = ScriptedChatModel(responses=[AIMessage("4471")])
        agent = create_context_agent(
            model,
            archive=archive,
            recall=True,
            think=False,
            recall_refresh=refresh,  # type: ignore[arg-type]
        )
        agent.invoke(
            {"messages": [HumanMessage("What is the dock code?")]},
            {"configurable": {"thread_id": "t"}},
        )
        return list(model.calls[0].messages)

    kept, fresh, delta = ask("compression"), ask("call"), ask("delta")
    # Kept: the block leads, in the stable prefix; per call and delta (the first
    # turn's lines are all new): in the last user message.
    assert RECALL_PREFIX in kept[0].text and RECALL_PREFIX not in kept[-1].text
    assert RECALL_PREFIX in fresh[-1].text and all(RECALL_PREFIX not in m.text for m in fresh[:-1])
    assert [m.text for m in delta] == [m.text for m in fresh]
    with pytest.raises(ConfigurationError, match="recall_refresh"):
        create_context_agent(ScriptedChatModel(), recall_refresh="turn")  # type: ignore[arg-type]


# -- recall_refresh="delta" (the default) -------------------------------------------


def _rendered(call: Any) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in call.messages]


def _recall_lines(call: Any) -> list[str]:
    """Every item line of every recall block in the prompt, in order."""
    found: list[str] = []
    for m in call.messages:
        text = m.text
        while RECALL_PREFIX in text:
            block = text[text.index(RECALL_PREFIX) :]
            end = block.index(RECALL_END)
            found += [line for line in block[:end].split("\n")[1:] if line]
            text = block[end:]
    return found


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.slow
def test_delta_keeps_earlier_blocks_byte_identical_and_adds_only_new_lines(processes: int) -> None:
    """Also when two processes take the thread's turns in turn: each reads the blocks
    kept from the checkpoint, so neither sends other bytes for an earlier turn."""
    model, events, state = run("delta", turns=60, processes=processes)
    assert state["session"]["recall_shown"]["lines"]  # checkpointed
    calls, per_call = model.calls, _per_call(events)
    rewritten = {i for i, kinds in enumerate(per_call) if "compression" in kinds}
    extended = 0
    for i in range(1, len(calls)):
        before, now = _rendered(calls[i - 1]), _rendered(calls[i])
        if i not in rewritten:
            # Every earlier message, recall blocks included, is sent again as it was:
            # a provider's prefix cache serves all of the previous prompt.
            assert now[: len(before)] == before, f"call {i} changed the previous prompt"
            extended += 1
    assert extended >= len(calls) // 2  # a 6K window compresses every few turns
    for i, call in enumerate(calls):
        lines = _recall_lines(call)
        assert len(lines) == len(set(lines))  # a line is shown once per prompt
        # The city this turn asks about is in the prompt: recall still follows the turn.
        city = CITIES[i % len(CITIES)]
        assert any(f"Shipments to {city}" in line for line in lines), f"call {i}"
        # Never in the stable prefix: the system message stays the summaries' own.
        assert RECALL_PREFIX not in call.messages[0].text


@pytest.mark.slow
def test_delta_past_the_recall_limit_a_turn_adds_its_best_line_alone_and_the_report_is_exact() -> (
    None
):
    model, events, _ = run("delta", turns=60)
    limit = BUDGET.auxiliary
    counter = TokenCounter()
    assert any(e["kind"] == "recall_over_limit" for e in events)  # the limit was reached
    over = 0
    for before, now in itertools.pairwise(model.calls):
        had, has = _recall_lines(before), _recall_lines(now)
        if set(had) <= set(has) and counter.count_text("\n".join(had)) > limit:
            # Earlier blocks stay as they were (no compression in between), and a
            # turn past the limit brings its best new line, no more.
            assert len(set(has) - set(had)) <= 1
            over += 1
    assert over > 0
    _reports_match(model, events)


@pytest.mark.parametrize("per_turn", [0.025, 0.3, None])
@pytest.mark.slow
def test_delta_adds_a_turns_best_new_lines_within_its_share(per_turn: float | None) -> None:
    """``None`` (the default): a turn adds its call's block whole (what it has not
    shown yet), which recall fitted to the room the prompt leaves."""
    model, events, _ = run("delta", turns=60, per_turn=per_turn)
    cap = BUDGET.red_line if per_turn is None else per_turn * BUDGET.auxiliary
    counter = TokenCounter()
    found = [e["data"] for e in events if e["kind"] == "recall"]
    assert len(found) == len(model.calls)
    several = 0
    for i, (call, recall) in enumerate(zip(model.calls, found, strict=True)):
        last = call.messages[-1].text
        added: list[str] = []  # this turn's lines: the block its user message leads with
        if last.startswith(RECALL_PREFIX):
            block = last[: last.index(RECALL_END)]
            added = [line for line in block.split("\n")[1:] if line]
            # Within the turn's share, or the one best line alone.
            assert len(added) == 1 or counter.count_text("\n".join(added)) <= cap
            several += len(added) > 1
        if recall["items"]:
            # Recall had room for lines this turn: the city asked about is among
            # them, the best new line, or was shown by an earlier turn.
            city = CITIES[i % len(CITIES)]
            assert any(f"Shipments to {city}" in line for line in _recall_lines(call)), i
            assert (
                not added
                or f"Shipments to {city}" in added[0]
                or all(f"Shipments to {city}" not in line for line in added)
            )
    # The small share adds one line a turn.
    assert (several > 0) == (per_turn is None or per_turn > 0.1)
    if per_turn is None:
        _reports_match(model, events)  # and no call passed the red line


@pytest.mark.slow
def test_a_compression_keeps_the_prefix_up_to_the_new_summary() -> None:
    model, events, _ = run("delta", turns=60)
    leads = [call.messages[0].text for call in model.calls]
    compressions = {
        i: kinds_data
        for i, kinds_data in enumerate(_compressions(events))
        if kinds_data is not None and not kinds_data["meta"] and kinds_data["seq"] > 1
    }
    assert compressions
    for i in compressions:
        # The system prompt and every earlier summary are the same bytes: only the
        # new summary, appended, and what follows it miss the cache.
        assert leads[i].startswith(leads[i - 1] + "\n\n"), f"call {i}"


def _compressions(events: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """Each model call's compression event's data, if it compressed."""
    calls: list[dict[str, Any] | None] = []
    for e in events:
        if e["kind"] == "utilization":
            calls.append(None)
        if e["kind"] == "compression" and calls:
            calls[-1] = e["data"]
    return calls


def test_the_agent_with_recall_compresses_to_the_same_target_and_keeps_recall_per_turn() -> None:
    # Recall never changes what happens to the history: a deeper aim with recall on
    # removed turns that word search could not find again (strategies/recall_room.py).
    from langgraph_ctx.strategies.registry import strategy_middleware

    with_recall = strategy_middleware("tiered", recall=True)
    without = strategy_middleware("tiered")
    assert isinstance(with_recall, TieredCompression) and isinstance(without, TieredCompression)
    assert with_recall.target_utilization == without.target_utilization
    assert ProviderPlacement().recall_refresh == "delta"


def test_a_turn_passes_over_a_line_too_large_for_its_share_for_smaller_ones() -> None:
    from types import SimpleNamespace

    from langgraph_ctx.middleware._recall_refresh import _best

    ctx: Any = SimpleNamespace(
        session=SimpleNamespace(calibration=SimpleNamespace(apply=lambda raw: raw)),
        counter=TokenCounter(),
    )
    memory = "- [observation] " + "The whole summary of an earlier session. " * 60
    snippet = "- [archived m7] The dock code at Bilbao is 4471."
    other = "- [archived m9] The crane at Cadiz lifts 40 tonnes."
    # A whole memory ranked first does not crowd out the snippets below it.
    assert _best([], [memory, snippet, other], 100, ctx) == [snippet, other]
    assert _best([], [memory, snippet, other], 20, ctx) == [snippet]
    # Nothing fits: the best line alone, unless the turn already holds lines.
    assert _best([], [memory], 100, ctx) == [memory]
    assert _best([snippet], [memory], 100, ctx) == []


class Plain(MessagesState):
    """A user's own state: messages and the ledger, no ``session``."""

    context_ledger: Annotated[list[LedgerEntry], ledger_reducer()]


def test_without_a_session_key_delta_keeps_the_blocks_in_the_process() -> None:
    """A graph whose state has no ``session`` key still gets delta recall: the blocks
    are kept in the process's memory, and nothing is written to a key it lacks."""
    model, _, state = run("delta", turns=12, schema=Plain)
    assert "session" not in state and state[LEDGER]
    for before, now in itertools.pairwise(model.calls[:6]):
        assert _rendered(now)[: len(before.messages)] == _rendered(before)


@pytest.mark.slow
def test_the_stable_signature_is_the_same_in_every_process() -> None:
    """It keys what the checkpoint keeps, which another process reads back: no
    per-process salt (``hash`` of a string has one)."""
    from tests.hash_seeds import outputs_under_hash_seeds

    code = (
        "from langchain_core.messages import SystemMessage as S\n"
        "from langgraph_ctx.middleware._content import stable_signature\n"
        "print(stable_signature([S('You route freight.', id='a'), S('[Summary] x', id='b')]))"
    )
    found = outputs_under_hash_seeds(code, ("1", "2"))
    assert len(found) == 1


@pytest.mark.parametrize("modes", ["delta+call", "compression+delta", "delta+compression+call"])
@pytest.mark.slow
def test_a_changed_recall_refresh_gives_up_what_the_other_kept(modes: str) -> None:
    """Processes with different settings take the thread's turns in turn (a redeploy
    changed it): what one kept and the next does not send is no longer counted, so
    every call's report is what the model received and none passes the red line."""
    model, events, state = run(modes, turns=30)
    received = _reports_match(model, events)
    assert len(received) == 30
    last = modes.split("+")[29 % len(modes.split("+"))]
    kept = {"delta": {"placement.recall_shown"}, "compression": {"placement.recall"}}
    assert set(state["session"]["reserved"]) == kept.get(last, set())


@pytest.mark.parametrize("refresh", ["delta", "compression"])
@pytest.mark.slow
def test_two_processes_send_what_one_would(refresh: str) -> None:
    """Each call, whichever process serves it, measures and sends exactly what one
    process serving every call does: pre-flight counts the kept blocks as the last
    committed step left them (``session["reserved"]``), so recall gets the same room,
    and calibration is the one the last committed call learned (the model reports
    usage here, as providers do, off from our count by a share that drifts).

    One thing stays a process's own, and is off here: a summary prepared ahead in
    the background (a process that did not prepare one prepares its own, or
    compresses synchronously)."""
    one, one_events, _ = run(refresh, turns=40, usage="drifting", prepare_ahead=False)
    two, two_events, _ = run(refresh, turns=40, processes=2, usage="drifting", prepare_ahead=False)
    learned = [e["data"].get("calibration_samples") for e in one_events]
    assert any(learned)  # calibration is in play

    prompts = [_rendered(c) for c in one.calls]
    assert any("Summary" in m[1] for p in prompts for m in p)
    assert [_rendered(c) for c in two.calls] == prompts

    def measured(events: list[dict[str, Any]]) -> list[Any]:
        return [e["data"]["utilization"] for e in events if e["kind"] == "utilization"]

    assert measured(two_events) == measured(one_events)
