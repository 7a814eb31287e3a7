"""The one summarizer every strategy that summarizes gets, and the log of what it wrote.

Ours takes :class:`CountingSummarizer` (the extractive summarizer); the peers take
the same summarizer behind the chat-model interface (:class:`ExtractiveChatModel`).
Each summary is logged with its text, its input and output tokens and its entity
retention: the share of the distinct entities
(:func:`~langgraph_ctx.compression.summarizers.entities`)
of the summarized messages that the summary's own entities include, normalized. (Set
based, so linear: ``entity_retention`` instead scans the summary once per entity.)
Logging time is bookkeeping, discounted from the strategy's measured time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from langgraph_ctx.compression import ExtractiveSummarizer, entities
from langgraph_ctx.tokens import message_text

from .session import TokenTally


@dataclass
class Clock:
    """Seconds of the current call, by who spent them.

    ``managed``: the strategy's own work (ours: the pipeline; a peer: its hook);
    ``logging``: the summary log, inside ``managed``; ``recording``: the recorder,
    inside the model call. The last two are the harness's, and are discounted.
    """

    managed: float = 0.0
    logging: float = 0.0
    recording: float = 0.0

    def take(self) -> tuple[float, float]:
        """``(managed, harness)`` seconds since the last take, net of the harness's own."""
        out = (self.managed - self.logging, self.logging + self.recording)
        self.managed = self.logging = self.recording = 0.0
        return out


def entity_key(entity: str) -> str:
    """``$12,480.50`` and ``12480.50`` name the same amount; case does not matter."""
    return entity.replace(",", "").lstrip("$€£¥").casefold()


def entity_set(texts: Sequence[str]) -> set[str]:
    return {entity_key(e) for t in texts for e in entities(t)}


def entity_share(messages: Sequence[BaseMessage], text: str) -> float:
    """Share of the distinct entities of ``messages`` that ``text`` also holds (1.0 if none)."""
    wanted = entity_set([message_text(m)[0] for m in messages])
    return len(wanted & entity_set([text])) / len(wanted) if wanted else 1.0


@dataclass
class SummaryLog:
    """Every summary written in one run."""

    tally: TokenTally
    clock: Clock
    tokens_in: list[int] = field(default_factory=list)
    tokens_out: list[int] = field(default_factory=list)
    retention: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    """The summaries themselves, in order."""

    def record(self, messages: Sequence[BaseMessage], summary: str) -> None:
        start = time.perf_counter()
        self.texts.append(summary)
        self.tokens_in.append(self.tally(messages))
        self.tokens_out.append(self.tally.counter.count_text(summary))
        self.retention.append(entity_share(messages, summary))
        self.clock.logging += time.perf_counter() - start


class CountingSummarizer(ExtractiveSummarizer):
    """The extractive summarizer, logging each summary."""

    def __init__(self, log: SummaryLog) -> None:
        super().__init__(log.tally.counter)
        self.log = log

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        text = super().summarize(messages, previous=previous, max_tokens=max_tokens)
        self.log.record(messages, text)
        return text


_LANGMEM = re.compile(r"This is summary of the conversation so far: (.*)\n\nExtend this summ", re.S)
_INSTRUCTIONS = ("Create a summary of the conversation above", "This is summary of the conv")


class ExtractiveChatModel(BaseChatModel):
    """The same summarizer behind the chat-model interface, for the peers.

    langmem appends an instruction message (quoting its running summary): it is
    not conversation, so it is dropped and the quoted summary becomes a message.
    An extractive summarizer cannot follow a prompt, so prompts are never sent.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    max_tokens: int
    summarizer: Any  # a CountingSummarizer (pydantic cannot validate it as a field type)

    @property
    def _llm_type(self) -> str:
        return "extractive"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if messages and messages[-1].text.startswith(_INSTRUCTIONS):
            prior = _LANGMEM.match(messages[-1].text)
            messages = ([SystemMessage(prior.group(1))] if prior else []) + messages[:-1]
        text = self.summarizer.summarize(messages, max_tokens=self.max_tokens)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])
