"""Token accounting: estimator, tiktoken, the per-message cache, calibration."""

from __future__ import annotations

import json
import logging
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx import (
    Calibration,
    ConfigurationError,
    MessageTokenCache,
    TokenCounter,
    estimate_tokens,
)
from langgraph_ctx import tokens as tokens_module

ENGLISH = (
    "The quarterly report shows revenue of $4.2M, up 12% from last year. Please summarise the "
    "key decisions for the board meeting on Thursday, and keep the vendor list short. "
) * 8
JSON_ROWS = json.dumps(
    [
        {
            "order_id": f"ORD-{i:05d}",
            "amount": 12.5 * i,
            "status": "shipped",
            "customer": "Ana Ruiz",
        }
        for i in range(20)
    ]
)
CODE = (
    "def total(rows: list[dict]) -> float:\n    return sum(r['amount'] for r in rows if r)\n" * 10
)
CJK = (
    "我们的季度报告显示收入为四百二十万美元，比去年增长百分之十二。请为周四的董事会会议总结关键决定。"
    * 5
)


@pytest.fixture(scope="module")
def exact() -> TokenCounter:
    counter = TokenCounter("cl100k_base")
    assert counter.exact, "the bundled cl100k_base must load offline"
    return counter


@pytest.mark.parametrize(
    ("text", "tolerance"), [(ENGLISH, 0.15), (JSON_ROWS, 0.40), (CODE, 0.25), (CJK, 0.15)]
)
def test_estimator_against_tiktoken(exact: TokenCounter, text: str, tolerance: float) -> None:
    truth = exact.count_text(text)
    assert abs(estimate_tokens(text) - truth) / truth <= tolerance


def test_cjk_is_not_undercounted_like_chars_over_4(exact: TokenCounter) -> None:
    truth = exact.count_text(CJK)
    assert math.ceil(len(CJK) / 4) < 0.4 * truth  # the naive rule is off by more than half
    assert estimate_tokens(CJK) >= 0.85 * truth


def test_code_uses_the_smaller_k() -> None:
    assert estimate_tokens(CODE) == math.ceil(len(CODE) / 3.2)
    prose = "word " * 100
    assert estimate_tokens(prose) == math.ceil(len(prose) / 3.8)


def test_fallback_to_estimator_logs_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens_module.TokenCounter, "_warned", False)
    monkeypatch.setattr(tokens_module, "load_encoding", lambda name: None)  # offline, unbundled
    with caplog.at_level(logging.WARNING, logger="langgraph_ctx.tokens"):
        first = TokenCounter("p50k_base")
        TokenCounter("p50k_base")
    assert not first.exact
    assert first.count_text(ENGLISH) == estimate_tokens(ENGLISH)
    assert len([r for r in caplog.records if "estimated" in r.getMessage()]) == 1


def test_an_encoding_name_tiktoken_does_not_know_is_refused_not_estimated() -> None:
    # A typo used to fall back to the estimate with one log line: every count rough.
    with pytest.raises(ConfigurationError, match=r"unknown encoding 'cl100k'.*cl100k_base"):
        TokenCounter("cl100k")
    assert TokenCounter(None).exact is False  # the estimate, asked for by name


def test_tool_calls_are_counted(exact: TokenCounter) -> None:
    bare = AIMessage("")
    call = AIMessage(
        "", tool_calls=[{"name": "lookup", "args": {"order_id": "ORD-00042"}, "id": "c1"}]
    )
    assert exact.count_message(call) > exact.count_message(bare) + 5


def history(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        out.append(HumanMessage(f"question {i} about invoice INV-{i:04d}", id=f"h{i}"))
        out.append(AIMessage(f"answer {i}: the total was ${i * 3.5:.2f}", id=f"a{i}"))
    return out


def test_cache_counts_only_new_messages(exact: TokenCounter) -> None:
    cache = MessageTokenCache(exact)
    msgs = history(500)
    assert cache.total(msgs) == exact.count_messages(msgs)
    assert cache.counted == 1000
    for i in range(10):
        msgs = [*msgs, HumanMessage(f"more {i}", id=f"m{i}")]  # a new list, as LangGraph makes
        assert cache.total(msgs) == exact.count_messages(msgs)
    assert cache.counted == 1010  # one tokenization per new message, none for the old 1,000


def test_a_count_its_maker_remembers_is_looked_up_not_tokenized(exact: TokenCounter) -> None:
    cache = MessageTokenCache(exact)
    block = HumanMessage("s1: called lookup\ns2: called search\n", id="pace-block-1")
    made = exact.count_message(block)
    cache.remember(block, made)
    assert cache.count_of(block) == made and cache.counted == 0
    # Pre-flight's total looks it up too (ARC's grown memory, right after the fold).
    assert cache.total([block]) == made and cache.counted == 0
    edited = block.model_copy(update={"content": "s1: called lookup\n"})  # same id
    assert cache.count_of(edited) == exact.count_message(edited) and cache.counted == 1


def test_cache_survives_removal_and_fresh_objects_without_retokenizing(exact: TokenCounter) -> None:
    cache = MessageTokenCache(exact)
    msgs = history(100)
    cache.total(msgs)
    trimmed = msgs[:10] + msgs[50:]  # a removal in the middle
    assert cache.total(trimmed) == exact.count_messages(trimmed)
    resumed = [m.model_copy() for m in msgs]  # a resumed session: same ids, new objects
    assert cache.total(resumed) == exact.count_messages(resumed)
    assert cache.counted == 200


def test_fresh_objects_from_a_checkpoint_are_looked_up_not_retokenized(
    exact: TokenCounter,
) -> None:
    # A checkpointed graph hands every step freshly deserialized messages.
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    cache = MessageTokenCache(exact)
    msgs = history(200)
    cache.total(msgs)
    for i in range(5):
        msgs = serde.loads_typed(serde.dumps_typed(msgs))  # a reload: same ids, new objects
        msgs = [*msgs, HumanMessage(f"turn {i}", id=f"t{i}")]
        assert cache.total(msgs) == exact.count_messages(msgs)
    assert cache.counted == 405  # each message tokenized once, reloads or not


def test_an_edit_that_keeps_the_length_is_recounted(exact: TokenCounter) -> None:
    cache = MessageTokenCache(exact)
    msgs = [HumanMessage("hello there", id="h"), AIMessage("fine", id="a")]
    cache.total(msgs)
    edited = [msgs[0].model_copy(update={"content": "HELLO, you!"}), msgs[1]]  # same id, length
    assert len(edited[0].text) == len(msgs[0].text)
    assert cache.total(edited) == exact.count_messages(edited) != exact.count_messages(msgs)


@pytest.mark.slow
def test_an_idle_session_keeps_counts_not_messages(exact: TokenCounter) -> None:
    import gc
    import weakref

    from langgraph_ctx import tokens

    idle = MessageTokenCache(exact)
    msgs = history(50)
    idle.total(msgs)
    probe = weakref.ref(msgs[-1])
    others = [MessageTokenCache(exact) for _ in range(tokens.ACTIVE_SESSIONS)]
    for other in others:  # other sessions run: this one goes idle
        other.total(history(2))
    del msgs
    gc.collect()
    assert probe() is None  # its messages were let go
    assert idle.messages == 100  # its counts were not: the next call costs no tokenizing
    assert idle.nbytes() < 1_024  # one block summary and 36 tail counts, no memo
    again = history(50)
    assert idle.total(again) == exact.count_messages(again) and idle.counted == 100


edit = st.one_of(
    st.tuples(st.just("append"), st.text(max_size=40)),
    st.tuples(st.just("remove"), st.integers(0, 50)),
    st.tuples(st.just("replace"), st.integers(0, 50), st.text(max_size=40)),
    st.tuples(
        st.just("copy_all"),
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(edit, max_size=25))
def test_cached_total_always_equals_a_fresh_count(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    counter = TokenCounter("cl100k_base")
    cache = MessageTokenCache(counter)
    msgs: list[BaseMessage] = list(history(3))
    for serial, op in enumerate(ops):
        if op[0] == "append":
            msgs = [*msgs, HumanMessage(op[1], id=f"n{serial}")]
        elif op[0] == "remove" and msgs:
            msgs = [m for i, m in enumerate(msgs) if i != op[1] % len(msgs)]
        elif op[0] == "replace" and msgs:
            i = op[1] % len(msgs)
            # add_messages semantics: same id, new content, new object, same place
            msgs = [
                *msgs[:i],
                ToolMessage(op[2] + "!" * (i + 1), tool_call_id="x", id=msgs[i].id),
                *msgs[i + 1 :],
            ]
        elif op[0] == "copy_all":
            msgs = [m.model_copy() for m in msgs]
        assert cache.total(msgs) == counter.count_messages(msgs)


def test_calibration_learns_the_provider_ratio() -> None:
    cal = Calibration()
    assert cal.apply(1000) == 1000
    cal.observe(estimated=1000, actual=1200)
    assert cal.apply(1000) == 1200
    for _ in range(30):
        cal.observe(estimated=1000, actual=1500)
    assert 1480 <= cal.apply(1000) <= 1500
    cal.observe(estimated=1000, actual=10**9)  # one absurd report cannot wreck the budget
    assert cal.ratio <= 4.0


def test_short_texts_keep_their_counts_within_a_bound() -> None:
    from langgraph_ctx.tokens import SHORT_TEXT, SHORT_TEXTS

    counter = TokenCounter()
    assert counter.encoding is not None
    lines = [f"- [observation] memory {i}: invoice INV-{i:05d}" for i in range(SHORT_TEXTS + 50)]
    for line in lines:
        assert counter.count_text(line) == len(counter.encoding.encode_ordinary(line))
    assert 0 < len(counter._short) <= SHORT_TEXTS  # bounded: started over once full
    assert counter.count_text(lines[-1]) == len(counter.encoding.encode_ordinary(lines[-1]))
    long = "word " * SHORT_TEXT
    counter.count_text(long)
    assert long not in counter._short  # long texts are counted, not kept
    counter.count_message(HumanMessage("a message is not kept either"))
    assert "a message is not kept either" not in counter._short
