"""Every major chat client accepts every prompt of a long session, offline.

Each client's own payload builder (a dummy key, no network) gets the exact
messages of every model call of a session that compresses, recalls, thinks and
delegates (:mod:`tests.providers.session`). The builder must accept them, and the
payload must carry the summaries and the recalled memory: a client that dropped
them would be as wrong as one that refused them.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx.markers import RECALL_PREFIX, SUMMARY_PREFIX

from .session import MEMORY, SYSTEM, run_arc_session, run_session

Builder = Callable[[list[BaseMessage]], Any]


def _openai(responses: bool) -> Builder:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4.1", api_key="sk-test", use_responses_api=responses)
    return lambda messages: model._get_request_payload(messages)


def _anthropic() -> Builder:
    from langchain_anthropic import ChatAnthropic

    model = ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-test")  # type: ignore[call-arg]
    return lambda messages: model._get_request_payload(messages)


def _google() -> Builder:
    from langchain_google_genai import ChatGoogleGenerativeAI

    model = ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="test")
    return lambda messages: model._prepare_request(messages)


def _bedrock() -> Builder:
    from langchain_aws import ChatBedrockConverse
    from langchain_aws.chat_models.bedrock_converse import _messages_to_bedrock

    model = ChatBedrockConverse(
        model="anthropic.claude-3-5-sonnet-20240620-v1:0",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )

    def build(messages: list[BaseMessage]) -> Any:
        # What ChatBedrockConverse._generate hands boto3's converse(): messages, system, params.
        bedrock, system = _messages_to_bedrock(
            messages, model.system, model_id=model._get_base_model(), provider=model.provider
        )
        return {"messages": bedrock, "system": system, **model._converse_params()}

    return build


def _mistral() -> Builder:
    from langchain_mistralai import ChatMistralAI

    model = ChatMistralAI(model="mistral-large-latest", api_key="test")  # type: ignore[arg-type]
    return lambda messages: model._create_message_dicts(messages, None)


def _ollama() -> Builder:
    from langchain_ollama import ChatOllama

    model = ChatOllama(model="llama3.1")
    return lambda messages: model._chat_params(messages)


def _groq() -> Builder:
    from langchain_groq import ChatGroq

    model = ChatGroq(model="llama-3.3-70b-versatile", api_key="test")  # type: ignore[arg-type]
    return lambda messages: model._create_message_dicts(messages, None)


CLIENTS: dict[str, Callable[[], Builder]] = {
    "openai-chat": lambda: _openai(False),
    "openai-responses": lambda: _openai(True),
    "anthropic": _anthropic,
    "google-genai": _google,
    "bedrock-converse": _bedrock,
    "mistral": _mistral,
    "ollama": _ollama,
    "groq": _groq,
}


def _text(payload: Any) -> str:
    # Payloads hold SDK objects (Google's Content, pydantic): dumped whole, as JSON.
    # Not repr: it abbreviates a long list ("<... 1 more items ...>"), so a recall
    # block in a message's sixth part was not seen.
    return json.dumps(payload, default=_sdk_object)


def _sdk_object(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else repr(value)


def _escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


def _payloads(build: Builder, calls: Sequence[Sequence[BaseMessage]]) -> list[str]:
    with warnings.catch_warnings():
        # A client's own notices about its defaults are not what this test is about.
        warnings.simplefilter("ignore", UserWarning)
        return [_text(build(list(messages))) for messages in calls]


@pytest.mark.slow
def test_the_session_exercises_everything_the_pipeline_adds() -> None:
    session = run_session()
    text = "\n".join(m.text for call in session.calls for m in call)
    assert session.summaries, "the session must compress"
    for what in (SUMMARY_PREFIX, RECALL_PREFIX, "[Current thought]", "[plan]", "Audit complete"):
        assert what in text, what
    assert "Before acting, think" in text  # the think node's own calls


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.slow
def test_every_client_accepts_every_call_and_keeps_summary_and_recall(client: str) -> None:
    session = run_session()
    payloads = _payloads(CLIENTS[client](), session.calls)
    sent = "\n".join(payloads)
    for summary in session.summaries:
        assert _escaped(summary.splitlines()[0]) in sent
    assert _escaped(MEMORY) in sent
    assert _escaped(SUMMARY_PREFIX) in sent


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.slow
def test_every_client_accepts_arcs_memory_sent_one_block_per_entry(client: str) -> None:
    # ARC's memory reaches the model as one content block per entry (so that
    # Anthropic's cache finds the previous call's memory at a block boundary).
    calls, entries = run_arc_session()
    assert len(entries) >= 4 and entries[1].startswith("\n> (t")
    payloads = _payloads(CLIENTS[client](), calls)
    for entry in entries:
        assert _escaped(entry.strip()) in payloads[-1]


def test_anthropic_refuses_the_history_as_checkpointed() -> None:
    # Why placement exists: the system prompt and the history as the checkpoint
    # holds it, summaries in the middle, as a node without placement sends them.
    session = run_session()
    assert any(m.type == "system" for m in session.history[1:])
    build = _anthropic()
    with pytest.raises(ValueError, match="multiple non-consecutive system messages"):
        _payloads(build, [[SystemMessage(SYSTEM), *session.history]])
