"""Seeded, deterministic workloads: long simulated agent sessions with planted facts.

Tests, the ``langgraph-ctx demo`` command and benchmarks need a session long enough
to overflow a context window whose later turns ask about details from much earlier
ones. :func:`generate_session` scripts one: user messages, parallel tool calls with
realistic results (JSON rows, logs, documents), replies, and the facts that
compression must keep, with the questions that probe them.

Everything is drawn from one ``random.Random(seed)``, so a seed names a workload.
Fact values use formats that filler never produces (filler contacts are
"P. Nakamura", fact names "Priya Nakamura"; filler dates are in 2023-24, fact dates
in 2025-26; filler totals are JSON numbers, fact amounts "$12,480.50"), so finding
a value in a compressed history means that the fact itself survived.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

from langgraph_ctx.testing._drawing import (
    COMPANIES,
    STANDING_RULES,
    TEMPLATES,
    ResultDrawer,
    cap,
    future_date,
    join,
)

TOOL_NAMES = ("query_orders", "search_logs", "fetch_document")
PROBE_GAP = 5
"""Turns that must pass before a fact is probed: before that it is still in plain view."""
PLANT_RATE = 0.4
"""Chance that a non-probe turn plants a fact: about one fact every 2-3 turns."""
NO_CONTEXT = "I don't have enough context."
_MIN_SPREAD = 240  # hi - lo must exceed the untrimmable part of a unit (a JSON row's fields)


@dataclass(frozen=True)
class Fact:
    """A planted fact that a later question needs; ``value`` must survive verbatim."""

    key: str
    value: str
    kind: str  # "id" | "amount" | "name" | "constraint" | "date"
    turn: int
    where: str  # "user" | "tool"
    question: str


@dataclass(frozen=True)
class ToolStep:
    name: str
    args: dict[str, Any]
    result: str
    call_id: str


@dataclass(frozen=True)
class Turn:
    index: int
    user: str
    tool_steps: tuple[ToolStep, ...]  # parallel calls, all answered within the turn
    answer: str
    planted: tuple[Fact, ...]
    probe: Fact | None  # the earlier fact this turn's user message asks about


def _call_key(name: str, args: dict[str, Any]) -> str:
    return f"{name}:{json.dumps(args, sort_keys=True, default=str)}"


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)


def _spans(text: str, needle: str) -> list[tuple[int, int]]:
    """Where ``needle`` occurs in ``text``, as (start, end) pairs."""
    found, start = [], text.find(needle)
    while start != -1:
        found.append((start, start + len(needle)))
        start = text.find(needle, start + 1)
    return found


def _call_message(turn: Turn) -> AIMessage:
    calls = [
        ToolCall(name=s.name, args=dict(s.args), id=s.call_id, type="tool_call")
        for s in turn.tool_steps
    ]
    return AIMessage("", tool_calls=calls, id=f"t{turn.index:04d}-call")


def _answer_message(turn: Turn) -> AIMessage:
    return AIMessage(turn.answer, id=f"t{turn.index:04d}-answer")


@dataclass(frozen=True)
class Workload:
    """A scripted session: its turns, the facts planted in it and the tools it uses."""

    seed: int
    turns: tuple[Turn, ...]
    facts: tuple[Fact, ...]
    tool_names: tuple[str, ...]

    def messages(self, upto: int | None = None) -> list[BaseMessage]:
        """The history of turns ``[0, upto)`` as the agent would have recorded it."""
        out: list[BaseMessage] = []
        for turn in self.turns[:upto]:
            out.append(HumanMessage(turn.user, id=f"t{turn.index:04d}-user"))
            if turn.tool_steps:
                out.append(_call_message(turn))
                out.extend(
                    ToolMessage(
                        s.result,
                        tool_call_id=s.call_id,
                        name=s.name,
                        id=f"t{turn.index:04d}-tool-{k}",
                    )
                    for k, s in enumerate(turn.tool_steps)
                )
            out.append(_answer_message(turn))
        return out

    def responder(self) -> Callable[[Sequence[BaseMessage]], AIMessage]:
        """A scripted model that replies for whatever turn the messages it is sent are at.

        Compression removes and rewrites older messages, so the turn is found by
        content, never by position. Walking back from the end, the first message
        that names a turn decides: a user message with a turn's text (the turn has
        just begun: call its tools, if any) or a tool call or result carrying one
        of its call ids (the tools ran: answer). The second case also finds the
        turn when its user message has been compressed away.

        A user message is matched by the turn's text *contained* in it, not equal
        to it: layers add text to the last user message of a call (BACM's step tag
        and budget line, think's plan, placement's per-call context), and an exact
        match then fell through to the previous turn's tool call: every reply came
        one turn late. If it holds several turns' texts (a recalled request
        quoted), the latest turn wins: the others are quotes of the past. A turn
        whose text occurs only inside a longer turn's text is no request of its
        own: the workload may say an update twice, once with a fact added, and the
        longer one matched the shorter too, so it was answered with the later
        turn's reply and its own was never made.
        """
        by_user = {t.user: t for t in self.turns}
        by_call = {s.call_id: t for t in self.turns for s in t.tool_steps}

        def turn_of(message: HumanMessage) -> Turn | None:
            text = _text(message).strip()
            exact = by_user.get(text)
            if exact is not None:
                return exact
            held = [t for t in self.turns if t.user and t.user in text]
            spans = {t.index: _spans(text, t.user) for t in held}
            own = [
                t
                for t in held
                if any(
                    not any(
                        o.index != t.index and s <= start and end <= e
                        for o in held
                        for s, e in spans[o.index]
                    )
                    for start, end in spans[t.index]
                )
            ]
            return max(own, key=lambda t: t.index, default=None)

        def respond(messages: Sequence[BaseMessage]) -> AIMessage:
            for m in reversed(messages):
                if isinstance(m, HumanMessage) and (turn := turn_of(m)):
                    return _call_message(turn) if turn.tool_steps else _answer_message(turn)
                ids = (
                    [m.tool_call_id]
                    if isinstance(m, ToolMessage)
                    else [c["id"] or "" for c in getattr(m, "tool_calls", None) or ()]
                )
                for call_id in ids:
                    if call_id in by_call:
                        return _answer_message(by_call[call_id])
            return AIMessage(NO_CONTEXT)

        return respond

    def tool_result(self, name: str, args: dict[str, Any]) -> str:
        """The planned result of a call; an unknown call gets a JSON error, never raises."""
        try:
            found = self._results.get(_call_key(name, args))
        except (TypeError, ValueError):  # e.g. keys of mixed types cannot be sorted
            found = None
        return (
            found
            if found is not None
            else json.dumps(
                {
                    "error": f"no planned result for {name!r} with these arguments",
                    "args": repr(args),
                }
            )
        )

    def probes(self) -> list[Fact]:
        """The facts that later turns ask about, in the order they are asked."""
        return [t.probe for t in self.turns if t.probe is not None]

    @cached_property
    def _results(self) -> dict[str, str]:
        return {_call_key(s.name, s.args): s.result for t in self.turns for s in t.tool_steps}


class _Builder(ResultDrawer):
    """Draws a session turn by turn; all randomness comes from ``self.rng``."""

    def __init__(
        self, seed: int, tool_rate: float, probe_rate: float, result_chars: tuple[int, int]
    ) -> None:
        super().__init__(seed, result_chars)
        self.tool_rate, self.probe_rate = tool_rate, probe_rate
        self.facts: list[Fact] = []
        self.about: dict[str, str] = {}  # fact key -> the company it is about
        self.probed: set[str] = set()
        self.texts: set[str] = set()  # user texts are unique: the responder maps them to turns
        self.calls: set[str] = set()  # so are calls: tool_result() maps them to results

    def fact(self, turn: int, where: str) -> Fact | None:
        """A fact with a fresh key and value, or ``None`` if a few draws all collide."""
        values = {f.value for f in self.facts}
        for _ in range(20):
            t, s = self.rng.choice(TEMPLATES), self.company()
            key, value = f"{t.label}:{s.lower().replace(' ', '_')}", t.make(self.rng)
            if key not in self.told and value not in values:
                self.told[key], self.about[key] = t.statement.format(s=s, v=value), s
                return Fact(key, value, t.kind, turn, where, t.question.format(s=s))
        return None

    def task(self) -> Turn:
        """Turn 0: the task, with the budget and rules that bind the whole session."""
        r = self.rng
        budget = f"${r.randint(20, 95)},{r.choice(('250', '500', '750'))}"  # never ",000"
        rule = r.choice(STANDING_RULES)
        planted = [
            Fact(
                "budget_cap",
                budget,
                "amount",
                0,
                "user",
                "What total spend limit did I set for the audit?",
            ),
            Fact(
                "standing_rule",
                rule,
                "constraint",
                0,
                "user",
                "What standing rule did I give you for the audit?",
            ),
        ]
        self.told.update(
            budget_cap=f"You set a total spend limit of {budget}",
            standing_rule=f"The standing rule is: {rule}",
        )
        user = (
            f"I'm planning the {r.choice(('Q1', 'Q2', 'Q3', 'Q4'))} vendor audit for "
            f"{r.choice(COMPANIES)}; keep total spend under {budget} and {rule}."
        )
        if r.random() < 0.5:
            deadline = future_date(r)
            planted.append(
                Fact(
                    "deadline",
                    deadline,
                    "date",
                    0,
                    "user",
                    "What deadline did I set for the audit?",
                )
            )
            self.told["deadline"] = f"The audit must be finished by {deadline}"
            user += f" The review has to be done by {deadline}."
        user += " Let's work through the open orders, the service logs and the vendor contracts."
        self.facts.extend(planted)
        self.texts.add(user)
        return Turn(
            0, user, (), "Understood. I'll start with the open orders.", tuple(planted), None
        )

    def turn(self, i: int) -> Turn:
        r = self.rng
        self.clock += timedelta(minutes=r.randint(2, 40))
        probe = self.probe(i)
        if probe is not None:  # probe turns use no tools: the answer must come from memory
            self.texts.add(probe.question)
            return Turn(i, probe.question, (), cap(self.told[probe.key]) + ".", (), probe)
        plant = r.random() < PLANT_RATE
        n_tools = r.choices((1, 2, 3), (6, 3, 1))[0] if r.random() < self.tool_rate else 0
        fact = self.fact(i, "tool" if n_tools and r.random() < 0.6 else "user") if plant else None
        in_tool = fact if fact and fact.where == "tool" else None
        drawn = [self.step(i, k, in_tool if k == 0 else None) for k in range(n_tools)]
        told = self.told[fact.key] if fact and fact.where == "user" else None
        user = self.user_text(i, [request for request, _ in drawn], told)
        steps = tuple(step for _, step in drawn)
        if steps:
            names = join(list(dict.fromkeys(s.name for s in steps)))
            answer = (
                f"{r.choice(('Done.', 'Here is what I found.', 'Finished.'))} I ran "
                f"{names} and reviewed the results. {self.sentence()}"
            )
        else:
            answer = f"{r.choice(('Noted.', 'Got it.', 'Thanks, noted.'))} {self.sentence()}"
        self.facts.extend([fact] if fact else [])
        return Turn(i, user, steps, answer, (fact,) if fact else (), None)

    def probe(self, i: int) -> Fact | None:
        if self.rng.random() >= self.probe_rate:
            return None
        ready = [f for f in self.facts if f.turn <= i - PROBE_GAP and f.key not in self.probed]
        fact = self.rng.choice(ready) if ready else None
        self.probed.update([fact.key] if fact else [])
        return fact

    def user_text(self, i: int, requests: list[str], told: str | None) -> str:
        r = self.rng
        if requests:
            form = r.choice(("Next, {}.", "Can you {}?", "Please {}.", "Now {}, then recap."))
            text = form.format(join(requests))
        else:
            text = f"{r.choice(('Quick update:', 'FYI:', 'Heads up:'))} {self.sentence()}"
        if told:
            text += f" {r.choice(('For the record,', 'Note that', 'Remember that'))} {told}."
        if text in self.texts:  # rare (chit-chat draws from 10^4 sentences), but must not be
            text += f" (item {i})"
        self.texts.add(text)
        return text

    def step(self, i: int, k: int, fact: Fact | None) -> tuple[str, ToolStep]:
        """One tool call, as (the user's request for it, the step and its result)."""
        company = self.about[fact.key] if fact else self.company()
        make = (self.orders, self.logs, self.document)[self.rng.randrange(3)]
        name, args, request, result = make(company, fact)
        page = 1
        while _call_key(name, args) in self.calls:  # same arguments as before: another page
            page += 1
            args = {**args, "page": page}
        self.calls.add(_call_key(name, args))
        return request, ToolStep(name, args, result, f"call_{i:04d}_{k}")


def generate_session(
    turns: int = 150,
    *,
    seed: int = 0,
    tool_rate: float = 0.6,
    probe_rate: float = 0.1,
    result_chars: tuple[int, int] = (400, 2400),
) -> Workload:
    """A simulated session of ``turns`` turns; the same seed gives the same session.

    Each tool result's length lies within ``result_chars``, which must start at
    300 or more (room for the row that carries a fact) and span at least 240
    characters (a JSON row cannot be cut below its fixed fields).
    """
    lo, hi = result_chars
    if turns < 1 or not (0 <= tool_rate <= 1 and 0 <= probe_rate <= 1):
        raise ValueError("need turns >= 1 and rates within [0, 1]")
    if lo < 300 or hi - lo < _MIN_SPREAD:
        raise ValueError(f"result_chars needs lo >= 300 and hi - lo >= {_MIN_SPREAD}")
    builder = _Builder(seed, tool_rate, probe_rate, result_chars)
    script = [builder.task(), *(builder.turn(i) for i in range(1, turns))]
    return Workload(seed, tuple(script), tuple(builder.facts), TOOL_NAMES)
