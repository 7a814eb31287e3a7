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
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cached_property
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

TOOL_NAMES = ("query_orders", "search_logs", "fetch_document")
PROBE_GAP = 5
"""Turns that must pass before a fact is probed: before that it is still in plain view."""
PLANT_RATE = 0.4
"""Chance that a non-probe turn plants a fact: about one fact every 2-3 turns."""
NO_CONTEXT = "I don't have enough context."
_MIN_SPREAD = 240  # hi - lo must exceed the untrimmable part of a unit (a JSON row's fields)


def _words(text: str, sep: str = " ") -> tuple[str, ...]:
    return tuple(text.split(sep))


_FIRST = _words("Priya Marcus Elena Tomasz Aiko Daniel Fatima Lars Sofia Kwame Ingrid Rafael Mei")
_LAST = _words(
    "Halvorsen Nakamura Okafor Lindqvist Moreau Castillo Brennan Kowalski Fischer "
    "Adeyemi Sorensen Varga Tanaka Delgado Whitfield Petrov Quinlan Ferreira Szabo"
)
_SUFFIX = _words("Freight Logistics Supply Industries Trading Foods Textiles Marine Labs Metals")
_COMPANIES = ("Northwind Logistics", "Contoso Retail", "Fabrikam Foods", "Tailspin Freight")
_CARRIERS = ("DHL", "FedEx", "UPS", "Maersk", "DB Schenker", "Kuehne+Nagel")
_DEPOTS = ("Rotterdam", "Memphis", "Leipzig", "Singapore", "Louisville", "Antwerp", "Lyon")
_STANDING_RULES = (
    "never contact vendors on weekends",
    "get two quotes for any new vendor",
    "copy the finance team on every vendor email",
    "flag any invoice older than 60 days",
    "use only vendors on the approved list",
)
# Filler sentences are built from parts (10^4 combinations), so results differ in
# content, not just length, and a compressor cannot shrink them by deduplication.
_WHO = _words(
    "The warehouse team|Finance|The carrier|Our procurement lead|Legal|QA|Operations|"
    "The regional office|Customer support|The audit committee",
    "|",
)
_DID = _words(
    "reviewed flagged approved escalated reconciled updated deferred confirmed rejected annotated"
)
_WHAT = _words(
    "the pallet manifest|the freight schedule|the quarterly forecast|the rate card|"
    "the customs paperwork|the returns backlog|the inventory count|the damage report|"
    "the service agreement|the purchase requisition",
    "|",
)
_WHEN = _words(
    "after the Monday sync|ahead of the cutoff|pending a second signature|"
    "with minor corrections|without further comment|for the northern region|"
    "as part of the rollout|once the numbers settled|after the site visit|"
    "before month end",
    "|",
)
_STATUS = ("open", "shipped", "invoiced", "on_hold", "delivered")
_SERVICES = ("billing", "orders-api", "warehouse-sync", "payments", "notifier")
_LEVELS = ("INFO", "INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR")
_SECTIONS = ("Payment terms", "Service levels", "Termination", "Liability", "Pricing schedule")

_Unit = tuple[Callable[[str], str], str]
"""A piece of a tool result: ``render(free)`` gives its text; ``free`` may be trimmed."""


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


@dataclass(frozen=True)
class _Template:
    label: str  # key prefix and JSON field name
    kind: str
    make: Callable[[random.Random], str]
    statement: str  # states the fact; "{s}" is the subject, "{v}" the value
    question: str


def _amount(r: random.Random) -> str:
    return f"${r.randint(1_000, 99_999):,}.{r.randint(0, 99):02d}"


def _future_date(r: random.Random) -> str:
    return (date(2025, 1, 1) + timedelta(days=r.randint(0, 729))).isoformat()


def _rule(r: random.Random) -> str:
    form = r.randrange(3)
    if form == 0:
        return f"ship only via {r.choice(_CARRIERS)} from the {r.choice(_DEPOTS)} depot"
    if form == 1:
        return f"keep each purchase order under ${r.randint(2, 60)},000"
    payment = r.choice(("wire transfer", "ACH", "corporate card"))
    return f"pay invoices within net {r.choice((10, 15, 30, 45, 60, 90))} days by {payment}"


_TEMPLATES = (
    _Template(
        "account_id",
        "id",
        lambda r: f"ACC-{r.randint(10_000, 99_999)}",
        "the account id for {s} is {v}",
        "What is the account id for {s}?",
    ),
    _Template(
        "invoice",
        "id",
        lambda r: f"INV-{r.randint(2023, 2025)}-{r.randint(1, 9999):04d}",
        "the invoice number for the {s} order is {v}",
        "What was the invoice number for the {s} order?",
    ),
    _Template(
        "booking_ref",
        "id",
        lambda r: f"BKG-{r.randint(100_000, 999_999)}",
        "the freight booking reference for {s} is {v}",
        "What is the freight booking reference for {s}?",
    ),
    _Template(
        "quote",
        "amount",
        _amount,
        "{s} quoted {v} for the renewal",
        "How much did {s} quote for the renewal?",
    ),
    _Template(
        "open_credit",
        "amount",
        _amount,
        "our open credit with {s} is {v}",
        "What is our open credit with {s}?",
    ),
    _Template(
        "contact",
        "name",
        lambda r: f"{r.choice(_FIRST)} {r.choice(_LAST)}",
        "our contact at {s} is {v}",
        "Who is our contact at {s}?",
    ),
    _Template(
        "delivery_date",
        "date",
        _future_date,
        "{s} confirmed delivery for {v}",
        "What delivery date did {s} confirm?",
    ),
    _Template(
        "rule", "constraint", _rule, "for {s} we must {v}", "What rule did we agree for {s}?"
    ),
)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _fit(unit: _Unit, room: int) -> str | None:
    """Render ``unit`` within ``room`` characters, cutting its free text at a word."""
    render, free = unit
    text = render(free)
    if len(text) <= room:
        return text
    keep = len(free) - (len(text) - room) - 1  # one for the closing period
    if keep < 20:  # a stub of a sentence is noise, not filler
        return None
    cut = free[:keep].rsplit(" ", 1)[0].rstrip(",;: ") + "."
    text = render(cut)
    return text if len(text) <= room else None


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


class _Builder:
    """Draws a session turn by turn; all randomness comes from ``self.rng``."""

    def __init__(
        self, seed: int, tool_rate: float, probe_rate: float, result_chars: tuple[int, int]
    ) -> None:
        self.rng = random.Random(seed)
        self.tool_rate, self.probe_rate, self.result_chars = tool_rate, probe_rate, result_chars
        self.clock = datetime(2024, 3, 4, 8, 0)  # filler lives in 2024; fact dates do not
        self.facts: list[Fact] = []
        self.told: dict[str, str] = {}  # fact key -> the sentence stating it
        self.about: dict[str, str] = {}  # fact key -> the company it is about
        self.probed: set[str] = set()
        self.texts: set[str] = set()  # user texts are unique: the responder maps them to turns
        self.calls: set[str] = set()  # so are calls: tool_result() maps them to results

    def sentence(self) -> str:
        r = self.rng
        return f"{r.choice(_WHO)} {r.choice(_DID)} {r.choice(_WHAT)} {r.choice(_WHEN)}."

    def company(self) -> str:
        return f"{self.rng.choice(_LAST)} {self.rng.choice(_SUFFIX)}"

    def fact(self, turn: int, where: str) -> Fact | None:
        """A fact with a fresh key and value, or ``None`` if a few draws all collide."""
        values = {f.value for f in self.facts}
        for _ in range(20):
            t, s = self.rng.choice(_TEMPLATES), self.company()
            key, value = f"{t.label}:{s.lower().replace(' ', '_')}", t.make(self.rng)
            if key not in self.told and value not in values:
                self.told[key], self.about[key] = t.statement.format(s=s, v=value), s
                return Fact(key, value, t.kind, turn, where, t.question.format(s=s))
        return None

    def task(self) -> Turn:
        """Turn 0: the task, with the budget and rules that bind the whole session."""
        r = self.rng
        budget = f"${r.randint(20, 95)},{r.choice(('250', '500', '750'))}"  # never ",000"
        rule = r.choice(_STANDING_RULES)
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
            f"{r.choice(_COMPANIES)}; keep total spend under {budget} and {rule}."
        )
        if r.random() < 0.5:
            deadline = _future_date(r)
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
            return Turn(i, probe.question, (), _cap(self.told[probe.key]) + ".", (), probe)
        plant = r.random() < PLANT_RATE
        n_tools = r.choices((1, 2, 3), (6, 3, 1))[0] if r.random() < self.tool_rate else 0
        fact = self.fact(i, "tool" if n_tools and r.random() < 0.6 else "user") if plant else None
        in_tool = fact if fact and fact.where == "tool" else None
        drawn = [self.step(i, k, in_tool if k == 0 else None) for k in range(n_tools)]
        told = self.told[fact.key] if fact and fact.where == "user" else None
        user = self.user_text(i, [request for request, _ in drawn], told)
        steps = tuple(step for _, step in drawn)
        if steps:
            names = _join(list(dict.fromkeys(s.name for s in steps)))
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
            text = form.format(_join(requests))
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

    def fill(
        self, frame: tuple[str, str, str], filler: Callable[[], _Unit], fact_unit: str | None
    ) -> list[str]:
        """Units (rows, lines, paragraphs) whose framed total lies within ``result_chars``.

        Filler goes in until a length drawn from the range is reached, the last
        unit cut to stay under the upper bound. The fact unit lands at a random
        place: one always first would be easy to keep by accident.
        """
        head, sep, tail = frame
        lo, hi = self.result_chars
        target = self.rng.randint(lo, hi)
        units = [fact_unit] if fact_unit else []
        size = len(head) + len(tail) + sum(map(len, units))
        while size < target:
            gap = len(sep) if units else 0
            unit = _fit(filler(), hi - size - gap)
            if unit is None:
                break
            units.append(unit)
            size += len(unit) + gap
        if fact_unit:
            units.insert(self.rng.randint(0, len(units) - 1), units.pop(0))
        return units

    def row(self, company: str) -> dict[str, Any]:
        r = self.rng
        day = date(2023, 9, 1) + timedelta(days=r.randint(0, 180))  # before the session
        return {
            "order_id": f"SO-{r.randint(100_000, 999_999)}",
            "customer": company,
            "status": r.choice(_STATUS),
            "total": round(r.uniform(80, 60_000), 2),
            "currency": "USD",
            "created": day.isoformat(),
            "contact": f"{r.choice(_FIRST)[0]}. {r.choice(_LAST)}",
            "note": self.sentence(),
        }

    def orders(self, company: str, fact: Fact | None) -> tuple[str, dict[str, Any], str, str]:
        """A JSON array of order rows; a planted value sits in its own field of one row."""
        r = self.rng
        status = r.choice(_STATUS)
        args = {"customer": company, "status": status, "limit": r.choice((10, 25, 50))}

        def filler() -> _Unit:
            row = self.row(company if r.random() < 0.7 else self.company())
            return (lambda note: json.dumps({**row, "note": note})), row["note"]

        label = fact.key.split(":")[0] if fact else ""
        fact_row = json.dumps({**self.row(company), label: fact.value}) if fact else None
        units = self.fill(("[\n  ", ",\n  ", "\n]"), filler, fact_row)
        request = f"pull the {status.replace('_', ' ')} orders for {company}"
        return "query_orders", args, request, "[\n  " + ",\n  ".join(units) + "\n]"

    def log_message(self, company: str) -> str:
        r = self.rng
        form = r.randrange(5)
        if form == 0:
            code = r.choice((200, 200, 404, 500))
            return f"GET /v2/orders/{r.randint(10_000, 99_999)} -> {code} ({r.randint(3, 900)} ms)"
        if form == 1:
            return f"retrying export for {company} (attempt {r.randint(2, 5)}/5)"
        if form == 2:
            table = r.choice(("orders", "invoices", "vendors"))
            return f"slow query on {table}: {r.randint(900, 9000)} ms, {r.randint(1, 90)}k rows"
        if form == 3:
            return f"batch {r.randint(1, 400)} done: {r.randint(10, 999)} records updated"
        return f"note: {self.sentence()}"

    def logs(self, company: str, fact: Fact | None) -> tuple[str, dict[str, Any], str, str]:
        """A log excerpt from one service; a planted value is stated in one INFO line."""
        r = self.rng
        service = r.choice(_SERVICES)
        since = self.clock - timedelta(hours=r.randint(6, 72))
        args = {"service": service, "query": company, "since": f"{since:%Y-%m-%dT%H:00:00Z}"}

        def line(level: str) -> Callable[[str], str]:
            ts = since + timedelta(seconds=r.randint(0, int((self.clock - since).total_seconds())))
            prefix = f"{ts:%Y-%m-%dT%H:%M:%S}Z {level:<5} {service} req={r.getrandbits(24):06x}"
            return lambda message: f"{prefix} {message}"

        fact_line = line("INFO")(f"update: {self.told[fact.key]}") if fact else None
        units = self.fill(
            ("", "\n", ""), lambda: (line(r.choice(_LEVELS)), self.log_message(company)), fact_line
        )
        # Lines start with their timestamps, so sorting puts them (the fact too) in time order.
        request = f"search the {service} logs for {company}"
        return "search_logs", args, request, "\n".join(sorted(units))

    def document(self, company: str, fact: Fact | None) -> tuple[str, dict[str, Any], str, str]:
        """A markdown document section; a planted value is stated mid-paragraph."""
        r = self.rng
        section, doc_id = r.choice(_SECTIONS), f"DOC-{r.randint(1000, 9999)}"
        head = f"# {company}: {section}\n\n"

        def paragraph() -> _Unit:
            return (lambda p: p), " ".join(self.sentence() for _ in range(r.randint(2, 5)))

        fact_par = None
        if fact:
            fact_par = f"{self.sentence()} {_cap(self.told[fact.key])}. {self.sentence()}"
        units = self.fill((head, "\n\n", ""), paragraph, fact_par)
        request = f"open the {section.lower()} section of {doc_id} for {company}"
        args = {"doc_id": doc_id, "section": section}
        return "fetch_document", args, request, head + "\n\n".join(units)


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
