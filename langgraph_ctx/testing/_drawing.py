"""What a workload's text is drawn from (:mod:`.workloads`): the word lists, the
kinds of fact a session plants, and :class:`ResultDrawer`, which draws filler
sentences and tool results (JSON order rows, log excerpts, document sections)
around a planted fact."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_ctx.testing.workloads import Fact


def _words(text: str, sep: str = " ") -> tuple[str, ...]:
    return tuple(text.split(sep))


_FIRST = _words("Priya Marcus Elena Tomasz Aiko Daniel Fatima Lars Sofia Kwame Ingrid Rafael Mei")
_LAST = _words(
    "Halvorsen Nakamura Okafor Lindqvist Moreau Castillo Brennan Kowalski Fischer "
    "Adeyemi Sorensen Varga Tanaka Delgado Whitfield Petrov Quinlan Ferreira Szabo"
)
_SUFFIX = _words("Freight Logistics Supply Industries Trading Foods Textiles Marine Labs Metals")
COMPANIES = ("Northwind Logistics", "Contoso Retail", "Fabrikam Foods", "Tailspin Freight")
_CARRIERS = ("DHL", "FedEx", "UPS", "Maersk", "DB Schenker", "Kuehne+Nagel")
_DEPOTS = ("Rotterdam", "Memphis", "Leipzig", "Singapore", "Louisville", "Antwerp", "Lyon")
STANDING_RULES = (
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
class _Template:
    label: str  # key prefix and JSON field name
    kind: str
    make: Callable[[random.Random], str]
    statement: str  # states the fact; "{s}" is the subject, "{v}" the value
    question: str


def _amount(r: random.Random) -> str:
    return f"${r.randint(1_000, 99_999):,}.{r.randint(0, 99):02d}"


def future_date(r: random.Random) -> str:
    return (date(2025, 1, 1) + timedelta(days=r.randint(0, 729))).isoformat()


def _rule(r: random.Random) -> str:
    form = r.randrange(3)
    if form == 0:
        return f"ship only via {r.choice(_CARRIERS)} from the {r.choice(_DEPOTS)} depot"
    if form == 1:
        return f"keep each purchase order under ${r.randint(2, 60)},000"
    payment = r.choice(("wire transfer", "ACH", "corporate card"))
    return f"pay invoices within net {r.choice((10, 15, 30, 45, 60, 90))} days by {payment}"


TEMPLATES = (
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
        future_date,
        "{s} confirmed delivery for {v}",
        "What delivery date did {s} confirm?",
    ),
    _Template(
        "rule", "constraint", _rule, "for {s} we must {v}", "What rule did we agree for {s}?"
    ),
)


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def join(items: Sequence[str]) -> str:
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


class ResultDrawer:
    """Draws filler and tool results; all randomness comes from ``self.rng``."""

    def __init__(self, seed: int, result_chars: tuple[int, int]) -> None:
        self.rng = random.Random(seed)
        self.result_chars = result_chars
        self.clock = datetime(2024, 3, 4, 8, 0)  # filler lives in 2024; fact dates do not
        self.told: dict[str, str] = {}  # fact key -> the sentence stating it

    def sentence(self) -> str:
        r = self.rng
        return f"{r.choice(_WHO)} {r.choice(_DID)} {r.choice(_WHAT)} {r.choice(_WHEN)}."

    def company(self) -> str:
        return f"{self.rng.choice(_LAST)} {self.rng.choice(_SUFFIX)}"

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
            fact_par = f"{self.sentence()} {cap(self.told[fact.key])}. {self.sentence()}"
        units = self.fill((head, "\n\n", ""), paragraph, fact_par)
        request = f"open the {section.lower()} section of {doc_id} for {company}"
        args = {"doc_id": doc_id, "section": section}
        return "fetch_document", args, request, head + "\n\n".join(units)
