"""What the harness replays: sessions of model calls, and the probes that check them.

A :class:`Session` is a list of :class:`Step` s. A step is one model call: the
messages that arrive before it (a user turn, tool results), then the reply the
scripted model gives. Every strategy replays the same steps, so the only thing
that differs between them is the context each one sends to the model.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_ctx.tokens import TokenCounter, message_text


@dataclass(frozen=True)
class Step:
    """One model call: what arrives before it, then the scripted reply."""

    id: str
    """Unique within the session (the reply's message id)."""
    inputs: tuple[BaseMessage, ...]
    reply: AIMessage
    turn: int
    """The user turn the call belongs to (a turn with tools takes two calls)."""


@dataclass(frozen=True)
class Probe:
    """A value a later call needs: it survives if the prompt of call ``at`` holds it."""

    id: str
    answers: tuple[str, ...]
    """Accepted spellings; any one found counts (case-insensitive)."""
    at: str | None = None
    """The step id whose prompt is searched; ``None``: the last call made."""
    whole_word: bool = False
    """``1`` must not match inside ``2019``."""


@dataclass(frozen=True)
class Lookup:
    """One tool call of a delegated task, with its planned result."""

    name: str
    args: dict[str, Any]
    call_id: str
    result: str


@dataclass(frozen=True)
class Task:
    """A self-contained piece of work a parent may hand to a sub-agent."""

    text: str
    first: int
    """Index of the step that receives the task (its user message)."""
    last: int
    """Index of the step whose reply is the task's answer."""
    lookups: tuple[Lookup, ...]


@dataclass(frozen=True)
class Session:
    name: str
    steps: tuple[Step, ...]
    probes: tuple[Probe, ...] = ()
    system: str | None = None
    """A fixed policy every strategy pins (outside the conversation)."""
    tasks: tuple[Task, ...] = ()
    """Delegation workloads only: the tasks a sub-agent may take over."""

    def history(self, calls: int) -> list[BaseMessage]:
        """The conversation as the model saw it grow, up to the prompt of call ``calls``."""
        out: list[BaseMessage] = []
        for i, step in enumerate(self.steps[:calls]):
            out.extend(step.inputs)
            if i < calls - 1:
                out.append(step.reply)
        return out


class TokenTally:
    """Exact tiktoken counts (text, tool calls, 3 per message), cached per message.

    The key is the counted text, tool calls included, so a message read back
    from a checkpoint as a new object costs a dict lookup, not a tokenization.
    Never the message id: one tally serves every session of a workload, and
    ids repeat across sessions (tau-bench's ``m3``).

    Keys of at most ``limit`` characters in all, the oldest out (first in, first
    out: a hit stays a plain dict lookup, in the peers' timed hooks too). A
    strategy that assembles its prompt each call (PACE's condensed messages) sends
    new texts every call, about 0.4 MB a call late in a 10,000-turn run: kept,
    they held gigabytes. Every prompt and history counted here is bounded by the
    window (twice it for no management), so the limit holds dozens of them and
    a text sent again after its entry went out is counted once more.
    """

    limit = 50_000_000

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or TokenCounter()
        self._cache: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self._chars = 0

    def __call__(self, messages: Iterable[Any]) -> int:
        return sum(self.one(m) for m in messages)

    def one(self, message: BaseMessage) -> int:
        content = message.content
        if isinstance(content, str) and not getattr(message, "tool_calls", None):
            key = (message.type, "", content)
        else:  # calls or content blocks: the text as counted, calls serialized
            key = (message.type, "~", message_text(message)[0])
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self.counter.count_message(message)
            self._chars += len(key[2])
            while self._chars > self.limit:
                old, _ = self._cache.popitem(last=False)
                self._chars -= len(old[2])
        return hit


def prompt_text(messages: Sequence[BaseMessage], skip: str | None = None) -> str:
    """The searchable text of a prompt (tool-call arguments included), casefolded.

    ``skip``: a pinned policy text, left out so that it cannot answer a probe.
    """
    return "\n".join(
        message_text(m)[0] for m in messages if skip is None or m.content != skip
    ).casefold()


def holds(text: str, answers: Sequence[str], whole_word: bool) -> bool:
    """Whether casefolded ``text`` contains any accepted answer."""
    if not whole_word:
        return any(a.casefold() in text for a in answers)
    return any(
        re.search(rf"(?<![a-z0-9]){re.escape(a.casefold())}(?![a-z0-9])", text) for a in answers
    )
