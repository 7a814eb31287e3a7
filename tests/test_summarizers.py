"""Summarizers: what the extractive one keeps, the entity measure, the chat model's fallback."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from langgraph_ctx.compression import (
    ChatModelSummarizer,
    ExtractiveSummarizer,
    entities,
    entity_retention,
)
from langgraph_ctx.compression.summarizers import SUMMARY_PROMPT, transcript
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import SUMMARY_PREFIX
from langgraph_ctx.tokens import TokenCounter
from tests.hash_seeds import outputs_under_hash_seeds

ORDERS = {
    "orders": [
        {
            "order_id": "ORD-7731",
            "amount": "__AMOUNT__",
            "status": "shipped",
            "notes": "The customer asked for expedited shipping with Fedex and wants a phone "
            "call before every delivery, and mentioned it twice on the phone.",
        },
        {"order_id": "ORD-7732", "amount": 500, "status": "pending"},
    ],
    "total": "12480.50",
}


def support_session() -> list[BaseMessage]:
    """A realistic support exchange with planted identifiers, amounts, names and a date."""
    orders = json.dumps(ORDERS).replace('"__AMOUNT__"', "11980.50")  # a JSON number as written
    return [
        HumanMessage("Hello! Thanks for getting back to me so quickly.", id="h1"),
        AIMessage("Hi there! Happy to help. What can I do for you today?", id="a1"),
        HumanMessage(
            "I'm Maria Lopez from Northwind Traders. Our account is ACC-48213 and invoice "
            "INV-2024-0931 for $12,480.50 looks wrong. We must have it fixed before "
            "March 15, 2024 because our budget closes then.",
            id="h2",
        ),
        AIMessage(
            "",
            id="a2",
            tool_calls=[
                {
                    "name": "query_orders",
                    "args": {"account_id": "ACC-48213", "invoice": "INV-2024-0931"},
                    "id": "call_1",
                }
            ],
        ),
        ToolMessage(orders, tool_call_id="call_1", id="t1"),
        AIMessage(
            "Sure, I see two orders: ORD-7731 for $11,980.50 and ORD-7732 for $500. "
            "The second one is still pending. Great question!",
            id="a3",
        ),
        HumanMessage(
            "Thanks! We decided to cancel ORD-7732. Please never email Bob Chen about this, "
            "always call me instead.",
            id="h3",
        ),
        AIMessage("Got it. I will cancel ORD-7732 and issue a corrected invoice.", id="a4"),
        HumanMessage("Thanks so much for your help!", id="h4"),
        AIMessage("You're welcome! Have a great day!", id="a5"),
    ]


PLANTED = [
    "ACC-48213",
    "INV-2024-0931",
    "$12,480.50",
    "ORD-7731",
    "ORD-7732",
    "11980.50",
    "Maria Lopez",
    "Northwind Traders",
    "Bob Chen",
    "Fedex",
    "March 15, 2024",
    "query_orders",
]
PLEASANTRIES = ["Hello", "Thanks so much", "welcome", "great day", "Happy to help", "Hi there"]
COUNTER = TokenCounter()


def session_tokens() -> int:
    return COUNTER.count_text(transcript(support_session()))


# --- extractive -------------------------------------------------------------


def test_extractive_keeps_planted_entities_drops_pleasantries_within_budget() -> None:
    budget = session_tokens() * 3 // 4  # must compress, yet room for every entity line
    summary = ExtractiveSummarizer().summarize(support_session(), max_tokens=budget)

    assert COUNTER.count_text(summary) <= budget
    for planted in PLANTED:
        assert planted in summary
    for pleasantry in PLEASANTRIES:
        assert pleasantry.casefold() not in summary.casefold()
    assert entity_retention(support_session(), summary) == 1.0
    lines = summary.splitlines()
    assert "Assistant called query_orders(account_id=ACC-48213, invoice=INV-2024-0931)" in lines
    tool_line = next(line for line in lines if line.startswith("Tool query_orders: "))
    assert "order_id: ORD-7731; amount: 11980.50; status: shipped" in tool_line
    assert "expedited" not in tool_line  # long prose in a tool result is cut to its entities
    assert any(line.startswith("User: ") and "never email Bob Chen" in line for line in lines)


@pytest.mark.parametrize("budget", [1, 5, 12, 25, 40, 60, 90, 150, 400, 5000])
def test_extractive_never_exceeds_its_budget(budget: int) -> None:
    summary = ExtractiveSummarizer().summarize(support_session(), max_tokens=budget)
    assert COUNTER.count_text(summary) <= budget


def test_under_pressure_entities_outlive_their_sentences() -> None:
    summary = ExtractiveSummarizer().summarize(support_session(), max_tokens=90)
    assert COUNTER.count_text(summary) <= 90
    assert "Also mentioned: " in summary
    assert entity_retention(support_session(), summary) == 1.0
    # A line too long for the budget loses its prose, not its entities.
    assert "budget closes then" not in summary


def test_extractive_drops_duplicates_and_what_previous_already_said() -> None:
    messages = [
        HumanMessage("I prefer phone calls over email. Refund ACC-48213.", id="h1"),
        HumanMessage("I prefer phone calls over email. Refund ACC-48213.", id="h2"),
        HumanMessage("Our deadline is the end of the quarter.", id="h3"),
    ]
    summary = ExtractiveSummarizer().summarize(messages, max_tokens=200)
    assert summary.count("I prefer phone calls over email.") == 1
    assert summary.count("Refund ACC-48213.") == 1

    previous = "User: Our deadline is the end of the quarter. Refund ACC-48213."
    summary = ExtractiveSummarizer().summarize(messages, previous=previous, max_tokens=200)
    assert "deadline" not in summary  # prose the previous summary states is not repeated
    assert "ACC-48213" in summary  # but entities of the new messages are never dropped


@pytest.mark.slow
def test_extractive_is_deterministic_across_processes() -> None:
    code = (
        "from tests.test_summarizers import support_session as s;"
        "from langgraph_ctx.compression.summarizers import ExtractiveSummarizer as E;"
        "print(E().summarize(s(), max_tokens=70)); print(E().summarize(s(), max_tokens=400))"
    )
    outputs = outputs_under_hash_seeds(code, ("1", "2", "3"))
    assert len(outputs) == 1
    here = ExtractiveSummarizer().summarize(support_session(), max_tokens=70)
    assert outputs.pop().startswith(here + "\n")


async def test_extractive_async_matches_sync() -> None:
    extractive = ExtractiveSummarizer()
    assert await extractive.asummarize(support_session(), max_tokens=80) == extractive.summarize(
        support_session(), max_tokens=80
    )


def test_extractive_edge_cases() -> None:
    extractive = ExtractiveSummarizer()
    assert extractive.summarize([], max_tokens=50) == ""
    assert extractive.summarize([HumanMessage("Thanks!", id="x")], max_tokens=50) == ""
    with pytest.raises(ConfigurationError) as info:
        extractive.summarize(support_session(), max_tokens=0)
    assert info.value.field == "max_tokens"


def personal_session() -> list[BaseMessage]:
    """Facts that name no entity, buried in questions, hedges and small talk."""
    return [
        HumanMessage(
            "Hi! I really appreciate you getting back to me so quickly, it means a lot. "
            "Could you tell me a bit more about how your loyalty program works and whether "
            "there are any perks that I might be able to take advantage of at some point?",
            id="p1",
        ),
        AIMessage("Happy to help! What would you like to know?", id="p2"),
        HumanMessage(
            "I'm allergic to shellfish, so that matters for the catering. I wonder if you "
            "could also let me know whether the venue has enough parking for everyone who "
            "might be coming along on the day, and whether it is easy to find?",
            id="p3",
        ),
        AIMessage("Sure, I will look into the parking and the directions for you.", id="p4"),
        HumanMessage(
            "My grandmother always bakes lemon meringue pie for the family reunion. "
            "If there is any chance that the schedule might shift around a little, would "
            "you be able to keep me posted about it as soon as you possibly can?",
            id="p5",
        ),
        AIMessage("Of course, I will keep you posted.", id="p6"),
    ]


def test_facts_without_entities_outlive_questions_and_small_talk() -> None:
    messages = personal_session()
    budget = COUNTER.count_text(transcript(messages)) // 6
    summary = ExtractiveSummarizer().summarize(messages, max_tokens=budget)
    assert COUNTER.count_text(summary) <= budget
    # The user's statements about themselves are what a memory is for (as notes
    # if need be: "allergic shellfish")...
    for fact in ("allergic", "shellfish", "grandmother", "lemon meringue pie"):
        assert fact in summary, (fact, summary)
    # ...questions, requests and the assistant's pleasantries go first.
    for noise in ("loyalty", "parking", "Happy to help"):
        assert noise not in summary, (noise, summary)


def test_under_pressure_a_sentence_becomes_a_note_before_it_is_dropped() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("I usually wake up around 6:30 in the morning and I go for a swim.", id="1"),
        HumanMessage("My sister is studying marine biology at a university in Lisbon.", id="2"),
    ]
    full = ExtractiveSummarizer().summarize(messages, max_tokens=200)
    assert "I usually wake up around 6:30 in the morning" in full  # room: kept whole
    budget = COUNTER.count_text(full) - 6
    note = ExtractiveSummarizer().summarize(messages, max_tokens=budget)
    assert COUNTER.count_text(note) <= budget
    # Function words go; every content word and entity stays.
    for word in ("wake", "6:30", "morning", "swim", "sister", "marine biology", "Lisbon"):
        assert word in note, (word, note)
    assert " the " not in note and " in the " not in note


def test_an_id_dense_tool_result_keeps_its_ids_not_the_head_of_a_list() -> None:
    rows = [
        {"reservation_id": f"RX{i:02d}QZ", "seats": i % 4 + 1, "price": 100 + i} for i in range(24)
    ]
    call = AIMessage("", id="c", tool_calls=[{"name": "list_reservations", "args": {}, "id": "k1"}])
    result = ToolMessage(json.dumps(rows), tool_call_id="k1", name="list_reservations", id="t")
    summary = ExtractiveSummarizer().summarize([call, result], max_tokens=130)
    assert COUNTER.count_text(summary) <= 130
    # Every identifier survives, the last ones included; the small numbers give way.
    for row in rows:
        assert row["reservation_id"] in summary, (row["reservation_id"], summary)
    assert "123" not in summary


def test_resummarizing_a_summary_keeps_what_it_kept() -> None:
    first = ExtractiveSummarizer().summarize(support_session(), max_tokens=120)
    layer = SystemMessage(f"{SUMMARY_PREFIX} #1 (summary of 10 messages, through a5)\n{first}")
    layer.additional_kwargs["lgctx"] = {"summary": {"seq": 1, "through": "a5"}}
    again = ExtractiveSummarizer().summarize([layer], max_tokens=120)
    assert entities(again) == entities(first)
    # With new messages and the same budget, the old facts compete on equal terms:
    # the identifiers stay, the new entity is kept too.
    more = [layer, HumanMessage("Also ship the refund to PO-5521.", id="n1")]
    merged = ExtractiveSummarizer().summarize(more, max_tokens=120)
    assert "PO-5521" in merged
    for kept in ("ACC-48213", "INV-2024-0931", "ORD-7732", "Bob Chen"):
        assert kept in merged, (kept, merged)


def test_multiword_names_are_listed_whole() -> None:
    messages: list[BaseMessage] = [
        HumanMessage(
            "I started as an analyst at Goldman Sachs in 2001, then moved to Bank of America "
            "and met Maria Lopez there, who now runs the desk.",
            id="1",
        )
    ]
    summary = ExtractiveSummarizer().summarize(messages, max_tokens=20)
    listed = summary.split("Also mentioned: ")[-1].split("; ")
    assert "Goldman Sachs" in listed or "Goldman Sachs" in summary
    assert "Goldman" not in listed and "Sachs" not in listed


# --- entities ---------------------------------------------------------------


def test_entities_hand_checked() -> None:
    text = (
        "Maria Lopez paid $12,480.50 on 2024-03-15 for INV-2024-0931 (account ACC-48213); "
        "15% off, build v2.1, 3 items, 1,200 units, 250 USD, write to maria@northwind.com "
        "by March 15, 2024 at 10:30."
    )
    assert entities(text) == {
        "Maria Lopez",
        "$12,480.50",
        "2024-03-15",
        "INV-2024-0931",
        "ACC-48213",
        "15%",
        "v2.1",
        "1,200",
        "250 USD",
        "maria@northwind.com",
        "March 15, 2024",
        "10:30",
    }


def test_entities_skip_capitalized_sentence_starts_but_not_names() -> None:
    assert entities("Happy to help. Unfortunately it failed. Customer asked again.") == set()
    assert entities("Bob Chen called. Later we told Bob.") == {"Bob Chen", "Bob"}
    assert entities("Deploy went fine. We use Kubernetes and AWS.") == {"Kubernetes", "AWS"}


def test_titles_in_quotes_are_names_whole_but_quoted_words_are_not() -> None:
    # Quotes open a "sentence" for the capital test, and "for" joins no run of capitals:
    # without the title rule these come out as "Focus" and "Tech", "Good".
    assert entities("I host a dinner series called 'Future Focus' every quarter.") == {
        "Future Focus"
    }
    assert entities("Our department runs a \u201cTech for Good\u201d day.") == {"Tech for Good"}
    assert entities("She said \"Hello\" and I'm 'really' glad, don't 'Worry'.") == set()


def test_entities_sentence_initial_names_multiword_names_and_compound_values() -> None:
    assert entities("Dealogic has become my deal diary.") == {"Dealogic"}
    assert entities("Python and R are my tools. Occasionally, I use Julia.") == {
        "Python",
        "Julia",
    }
    assert entities("I started at Goldman Sachs in 2001.") == {"Goldman Sachs", "2001"}
    assert entities("Thanks Bob, see you at the Bank of America office.") == {
        "Bob",
        "Bank of America",
    }
    assert entities("Total Cost: $5. Number of bags: 2.") == {"$5"}
    assert entities("My reading was 138/85 mmHg; normal is 30-50 ng/mL.") == {"138/85", "30-50"}
    assert entities("Created 2024-05-06T17:41:02 and due at 5:30 PM.") == {
        "2024-05-06T17:41:02",
        "5:30 PM",
    }
    # Numbers in words are no entities (out of context they say nothing).
    assert entities("It took eleven business days.") == set()


def test_entity_retention_hand_checked() -> None:
    originals: list[BaseMessage] = [
        HumanMessage("Invoice INV-7 for $1,200 is due 2024-05-01, says Maria.", id="1")
    ]
    # Four entities: INV-7, $1,200, 2024-05-01, Maria.
    assert entity_retention(originals, "INV-7 (1200 USD) due 2024-05-01; maria agreed") == 1.0
    assert entity_retention(originals, "INV-7: 1,200 due 2024-05-01") == 0.75
    assert entity_retention(originals, "An invoice is due.") == 0.0
    assert entity_retention(originals, "") == 0.0
    assert entity_retention([HumanMessage("we booked room 12", id="2")], "back in 2012") == 0.0
    assert entity_retention([HumanMessage("hello there", id="3")], "anything") == 1.0
    assert entity_retention([], "anything") == 1.0


def test_entity_retention_counts_tool_call_arguments() -> None:
    call = AIMessage(
        "", id="a", tool_calls=[{"name": "refund", "args": {"account": "ACC-9"}, "id": "c"}]
    )
    assert entity_retention([call], "refunded") == 0.0
    assert entity_retention([call], "refunded ACC-9") == 1.0


# --- chat model -------------------------------------------------------------


class ScriptedChatModel(BaseChatModel):
    """Records what it was sent; replies, raises or stalls as told."""

    reply: str = ""
    error: bool = False
    stall: float = 0.0
    release: Any = None  # a threading.Event that ends a sync stall early
    received: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _result(self) -> ChatResult:
        if self.error:
            raise RuntimeError("provider is down")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply))])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(messages)
        if self.stall:
            self.release.wait(self.stall)
        return self._result()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(messages)
        if self.stall:
            await asyncio.sleep(self.stall)
        return self._result()


class StubSummarizer:
    text = "FALLBACK SUMMARY"

    def __init__(self) -> None:
        self.calls: list[tuple[int, str | None, int]] = []

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        self.calls.append((len(messages), previous, max_tokens))
        return self.text

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        return self.summarize(messages, previous=previous, max_tokens=max_tokens)


GOOD = "Maria Lopez (Northwind Traders, ACC-48213) disputes INV-2024-0931 ($12,480.50)."


def summarizer(
    model: ScriptedChatModel, **kwargs: Any
) -> tuple[ChatModelSummarizer, StubSummarizer, list[tuple[str, BaseException | None]]]:
    fallback, seen = StubSummarizer(), []
    chat = ChatModelSummarizer(
        model, fallback=fallback, on_fallback=lambda r, e: seen.append((r, e)), **kwargs
    )
    return chat, fallback, seen


async def run(chat: ChatModelSummarizer, mode: str, **kwargs: Any) -> str:
    messages = support_session()
    if mode == "sync":
        return await asyncio.to_thread(chat.summarize, messages, max_tokens=200, **kwargs)
    return await chat.asummarize(messages, max_tokens=200, **kwargs)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_good_summary_is_returned_as_is(mode: str) -> None:
    chat, fallback, seen = summarizer(ScriptedChatModel(reply=f"  {GOOD}\n"))
    assert await run(chat, mode) == GOOD
    assert seen == [] and fallback.calls == []


async def test_fallback_on_error(mode: str) -> None:
    chat, fallback, seen = summarizer(ScriptedChatModel(error=True))
    assert await run(chat, mode, previous="earlier") == StubSummarizer.text
    assert [r for r, _ in seen] == ["error"]
    assert isinstance(seen[0][1], RuntimeError) and "provider is down" in str(seen[0][1])
    assert fallback.calls == [(len(support_session()), "earlier", 200)]


async def test_fallback_on_timeout(mode: str) -> None:
    release = threading.Event()
    model = ScriptedChatModel(reply=GOOD, stall=10.0, release=release)
    chat, fallback, seen = summarizer(model, timeout=0.05)
    started = time.monotonic()
    try:
        assert await run(chat, mode) == StubSummarizer.text
    finally:
        release.set()  # let the abandoned sync worker finish
    assert time.monotonic() - started < 5.0
    assert [r for r, _ in seen] == ["timeout"]
    assert isinstance(seen[0][1], TimeoutError | asyncio.TimeoutError)
    assert len(fallback.calls) == 1


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("The user and the assistant talked about an invoice problem.", "useless"),
        (GOOD * 40, "useless"),  # keeps entities, but is longer than what it summarizes
    ],
)
async def test_fallback_on_unusable_output(mode: str, reply: str, reason: str) -> None:
    chat, fallback, seen = summarizer(ScriptedChatModel(reply=reply))
    assert await run(chat, mode) == StubSummarizer.text
    assert seen == [(reason, None)]
    assert len(fallback.calls) == 1


def test_entity_free_output_is_fine_when_the_originals_had_few_entities() -> None:
    chat, _, seen = summarizer(ScriptedChatModel(reply="They greeted each other."))
    messages: list[BaseMessage] = [HumanMessage("hi, how are you doing today, friend?", id="1")]
    assert chat.summarize(messages, max_tokens=50) == "They greeted each other."
    assert seen == []


def test_the_prompt_carries_the_instructions_and_the_transcript() -> None:
    model = ScriptedChatModel(reply=GOOD)
    chat = ChatModelSummarizer(model)
    chat.summarize(support_session(), previous="User: earlier things.", max_tokens=321)

    [sent] = model.received
    assert [type(m) for m in sent] == [SystemMessage, HumanMessage]
    system, human = str(sent[0].content), str(sent[1].content)
    assert system == SUMMARY_PROMPT.replace("{max_tokens}", "321")
    for kept in ("decisions", "identifiers", "preferences", "tool results", "pleasantries"):
        assert kept in system
    assert "under 321 tokens" in system
    assert transcript(support_session()) in human
    assert "User: earlier things." in human
    assert "User: I'm Maria Lopez from Northwind Traders." in human
    assert 'Assistant called query_orders({"account_id": "ACC-48213"' in human
    assert 'Tool query_orders: {"orders": [{"order_id": "ORD-7731"' in human


def test_default_fallback_is_extractive_and_the_hook_is_optional() -> None:
    chat = ChatModelSummarizer(ScriptedChatModel(error=True))
    assert isinstance(chat.fallback, ExtractiveSummarizer)
    expected = ExtractiveSummarizer().summarize(support_session(), max_tokens=120)
    assert chat.summarize(support_session(), max_tokens=120) == expected


def test_sync_worker_sees_the_callers_context_variables() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[str] = []

    class Peek(ScriptedChatModel):
        def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
            seen.append(var.get())
            return super()._generate(messages, *a, **k)

    var.set("caller")
    ChatModelSummarizer(Peek(reply=GOOD), timeout=5).summarize(support_session(), max_tokens=99)
    assert seen == ["caller"]


def test_invalid_settings_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError) as info:
        ChatModelSummarizer(ScriptedChatModel(), timeout=0)
    assert info.value.field == "timeout"
    with pytest.raises(ConfigurationError):
        ChatModelSummarizer(ScriptedChatModel()).summarize(support_session(), max_tokens=-1)


def test_the_compression_package_lists_its_public_names_once() -> None:
    import pkgutil

    import langgraph_ctx.compression as package
    from langgraph_ctx.compression import summarizers

    modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    public = {n for n in vars(package) if not n.startswith("_")} - modules
    assert public == set(package.__all__)
    assert not hasattr(summarizers, "__all__")  # no second list to drift from the first
