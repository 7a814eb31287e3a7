"""A 3-call session replayed through real graphs, every number checked by hand."""

from __future__ import annotations

from typing import Any

import harness.strategies
import pytest
from harness import STRATEGIES, Probe, Session, Step, TokenTally
from harness.metrics import measure
from harness.runner import run_pair
from harness.strategies import TimedPipeline
from harness.summaries import Clock
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph

from langgraph_ctx import View, as_middleware
from langgraph_ctx.state import ContextState

from .conftest import three_calls


def test_the_hand_made_session_has_the_token_counts_it_claims() -> None:
    tally, session = TokenTally(), three_calls()
    assert [tally(s.inputs) for s in session.steps] == [13, 23, 33]
    assert tally([session.steps[0].reply]) == 4


def test_no_management_on_a_100_token_window() -> None:
    pair = run_pair(STRATEGIES["none"], [three_calls()], window=100, backend="sqlite",
                    tally=TokenTally())  # fmt: skip
    run = pair.runs[0]
    assert run.prompt_tokens == [13, 40, 77]
    assert run.added_tokens == [13, 27, 37]  # inputs + the previous reply
    assert run.turns == [0, 1, 2]
    assert run.probes == {"banana": True}
    m = measure(pair, 100, pair)
    assert (m.peak_utilization, m.mean_utilization) == (0.77, pytest.approx(130 / 300))
    assert (m.overflowed, m.longevity) == (0, None)  # prompt limit 84
    assert (m.tokens_sent, m.reductions, m.summaries) == (130, 0, 0)
    assert (m.probes, m.probes_kept) == (1, 1)
    assert m.step_vs_none == m.tokens_vs_none == 1.0
    assert m.checkpoint_bytes_per_call > 0  # a real SQLite file


def test_no_management_overflows_an_80_token_window_at_the_third_call() -> None:
    pair = run_pair(STRATEGIES["none"], [three_calls()], window=80, backend="sqlite",
                    tally=TokenTally())  # fmt: skip
    m = measure(pair, 80)
    # Budget.for_window(80): 80 - 10 (output reserve) - 3 (margin) = 67 < 77.
    assert (m.overflowed, m.longevity) == (1, 2)
    assert m.peak_utilization == pytest.approx(77 / 80)


def test_trim_messages_on_an_80_token_window_drops_the_first_turn() -> None:
    none = run_pair(STRATEGIES["none"], [three_calls()], window=80, backend="sqlite",
                    tally=TokenTally())  # fmt: skip
    pair = run_pair(STRATEGIES["trim"], [three_calls()], window=80, backend="sqlite",
                    tally=TokenTally())  # fmt: skip
    # Limit min(0.85 * 80, 67) = 67. Call 3's history is 13 + 4 + 23 + 4 + 33 = 77: the last
    # 64 tokens start with an AI message, so start_on="human" keeps 23 + 4 + 33 = 60.
    run = pair.runs[0]
    assert run.prompt_tokens == [13, 40, 60]
    assert run.probes == {"banana": False}  # it was in the first turn
    m = measure(pair, 80, none)
    assert (m.peak_utilization, m.mean_utilization) == (0.75, pytest.approx(113 / 240))
    assert (m.overflowed, m.longevity) == (0, None)
    assert (m.reductions, m.reduction_ratio) == (1, pytest.approx(77 / 60))
    assert m.tokens_sent == 113
    assert m.tokens_vs_none == pytest.approx(113 / 130)


def test_a_probe_for_the_last_prompt_and_a_probe_never_reached() -> None:
    last = run_pair(STRATEGIES["none"], [three_calls(probe_at=None)], window=100,
                    backend="sqlite", tally=TokenTally())  # fmt: skip
    assert last.runs[0].probes == {"banana": True}
    # Cut once a prompt passes 0.3 x 100 tokens: call 2 (40) is the last one made.
    cut = run_pair(STRATEGIES["none"], [three_calls()], window=100, backend="memory",
                   tally=TokenTally(), cut=0.3)  # fmt: skip
    assert cut.runs[0].cut and cut.runs[0].calls == 2
    assert cut.runs[0].probes == {"banana": False}  # its call (3) was never made


def test_ours_keeps_the_probe_within_the_limit_where_it_fits() -> None:
    pair = run_pair(STRATEGIES["ours"], [three_calls()], window=100, backend="memory",
                    tally=TokenTally())  # fmt: skip
    run = pair.runs[0]
    assert run.prompt_tokens == [13, 40, 77]  # nothing to do under the limit
    assert run.probes == {"banana": True}
    assert all(s >= 0 for s in run.managed_seconds) and sum(run.managed_seconds) > 0


def test_the_pipeline_time_excludes_the_node_it_wraps(monkeypatch: pytest.MonkeyPatch) -> None:
    # A clock that moves only when told to: the middleware spends 0.02 s, the node
    # 0.1 s, nothing else takes time, so the pipeline's share is exactly 0.02 s
    # (a wall-clock version of this test failed on a loaded machine).
    now = [0.0]

    def spend(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(harness.strategies.time, "perf_counter", lambda: now[0])

    @as_middleware(nodes=["call_llm"])
    def slow(view: View, ctx: Any, call_next: Any) -> Any:
        spend(0.02)
        return call_next(view)

    def node(state: dict[str, Any]) -> dict[str, Any]:
        spend(0.1)
        return {}

    clock = Clock()
    builder = StateGraph(ContextState)
    builder.add_node("call_llm", node)
    builder.add_edge(START, "call_llm")
    builder.add_edge("call_llm", END)
    TimedPipeline([slow], clock=clock).attach(builder)
    builder.compile().invoke({"messages": []})
    managed, _ = clock.take()
    assert managed == pytest.approx(0.02)


def test_probes_past_a_turn_cap_are_left_out_not_lost() -> None:
    pair = run_pair(STRATEGIES["none"], [three_calls()], window=100, backend="memory",
                    tally=TokenTally(), max_turns=2)  # fmt: skip
    assert pair.runs[0].calls == 2
    assert pair.runs[0].probes == {}  # its call (turn 3) was never planned


def test_interleaved_plans_measure_what_separate_runs_do() -> None:
    from harness.runner import Plan, run_pairs

    plans = [Plan(STRATEGIES["none"]), Plan(STRATEGIES["trim"]), Plan(STRATEGIES["none"], 2, "x")]
    pairs = run_pairs(plans, [three_calls(), three_calls()], window=80, backend="sqlite",
                      tally=TokenTally())  # fmt: skip
    assert [r.prompt_tokens for r in pairs["none"].runs] == [[13, 40, 77]] * 2
    assert [r.prompt_tokens for r in pairs["trim"].runs] == [[13, 40, 60]] * 2
    assert [r.prompt_tokens for r in pairs["x"].runs] == [[13, 40]] * 2
    assert pairs["none"].checkpoint_bytes > pairs["x"].checkpoint_bytes > 0  # own savers


def _long_ago_fact(calls: int) -> Session:
    """A locker number said once, then ``calls`` turns about orders, each naming new ids
    (more than any summary can hold), then it is asked for."""
    steps = [Step("s0", (HumanMessage("Help me track my orders.", id="task"),),
                  AIMessage("Sure.", id="s0"), 0),
             Step("s1", (HumanMessage("Gym locker QX-4417 holds the spare bag.", id="u1"),),
                  AIMessage("Noted.", id="s1"), 1)]  # fmt: skip
    for i in range(2, calls):
        order = f"Order ORD-{i:04d} shipped from warehouse W{i % 7} as TRK{i * 7919 % 99991:05d}. "
        inputs = (HumanMessage(order * 3, id=f"u{i}"),)
        steps.append(Step(f"s{i}", inputs, AIMessage("ok", id=f"s{i}"), i))
    ask = (HumanMessage("Which gym locker holds the spare bag?", id="ask"),)
    steps.append(Step("last", ask, AIMessage("ok", id="last"), calls))
    return Session("locker", tuple(steps), (Probe("code", ("QX-4417",), at="last"),))


def test_memory_recall_brings_back_a_fact_compression_summarized_away() -> None:
    session = _long_ago_fact(350)
    plain = run_pair(STRATEGIES["ours"], [session], window=8_000, backend="memory",
                     tally=TokenTally())  # fmt: skip
    recall = run_pair(STRATEGIES["ours+memory"], [session], window=8_000, backend="memory",
                      tally=TokenTally())  # fmt: skip
    assert plain.runs[0].summary_out and plain.runs[0].probes == {"code": False}
    assert recall.runs[0].probes == {"code": True}


def test_the_tally_tells_apart_calls_that_share_an_id_across_sessions() -> None:
    """tau-bench ids ("m3") repeat in every trajectory; one tally counts all of them."""
    tally = TokenTally()
    short = AIMessage("", id="m3", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c"}])
    long = AIMessage("", id="m3", tool_calls=[{"name": "f", "args": {"a": "x " * 50}, "id": "c"}])
    assert tally([short]) < tally([long]) == tally.counter.count_message(long)
