"""Summarizers for tiered compression, and the entity measure that judges them.

A summary replaces messages in the active state, so what it drops the agent
forgets (the originals stay only in the archive). Identifiers, amounts, dates
and names are what later turns most often need verbatim, so both summarizers
are built, and measured, around keeping them:

- :class:`ChatModelSummarizer` asks a (usually small) chat model, and falls
  back when the model fails, times out or returns nothing usable.
- :class:`ExtractiveSummarizer` selects and compacts sentences without a model:
  deterministic, offline, the default and the fallback.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.tokens import TokenCounter, message_text

SUMMARY_PROMPT = """\
You condense the older part of a conversation between a user, an AI assistant \
and its tools, so that the assistant can carry on without the original messages.

Keep:
- decisions, commitments and conclusions;
- data values, identifiers, amounts, dates and proper nouns, copied exactly;
- the user's preferences and constraints;
- tool results that still matter: which tool, and the values it returned.

Drop pleasantries, small talk and restatements. Never invent anything. Write \
terse plain-text lines, and stay under {max_tokens} tokens."""
"""The default prompt; ``{max_tokens}`` is replaced by the summary's budget."""


class Summarizer(Protocol):
    """Turns a block of messages into a summary of at most ``max_tokens`` tokens."""

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        """Summarize ``messages``. ``previous`` is the last summary, for context only:
        the caller keeps it as its own message, so it is not repeated."""
        ...

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str: ...


# --- entities ---------------------------------------------------------------

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b\.?"
)
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# One pass, leftmost match wins, so an id such as INV-2024-0931 is not also
# counted as the numbers 2024 and 0931.
_TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail address
    rf"|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|\b\d{{1,2}}:\d{{2}}\b"
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?|\b\d{{1,2}}\s+{_MONTH}"
    rf"|[$€£¥]\s?{_NUM}(?:\s?(?:[kKmM]|bn)\b)?|\b{_NUM}\s?(?:%|(?:USD|EUR|GBP|JPY|CHF)\b)"
    r"|\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_/.][A-Za-z0-9]+)*\b"  # ACC-48213
    r"|\b[A-Z]{2,}(?:[-_][A-Z0-9]+)+\b"  # SEV-HIGH
    r"|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+\.\d+\b|\b\d{2,}\b"  # numbers of 2+ digits
)
_CAPITAL = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]*)*\b|\b[A-Z]{2,6}\b")
_STOP_WORDS = """
a an the i we you he she it they this that these those there here what when where which
who whom whose why how can could would should will shall may might must do does did is are was
were be been am have has had let please thanks thank sure great hello hi hey yes no ok okay and
but or so if then also now just our my your their his her its for in on at to from with by of as
after before once since because while next first second last finally note done got perfect good
fine alright right well oh any all some each every both not none one two three user assistant
tool system today tomorrow yesterday mentioned conversation summary recalled memory
"""
_STOP = frozenset(_STOP_WORDS.split())
# Not ':': after a label ("notes: Fedex") a capital is usually a name.
_SENTENCE_START = frozenset('.!?;\n"(*#>-')
_NEXT_CAPITAL = re.compile(r"[ \t]+[A-Z]")


def _entity_list(text: str) -> list[str]:
    """Entities of ``text`` in order of first appearance (order keeps output deterministic)."""
    found = dict.fromkeys(m.group(0) for m in _TOKEN.finditer(text))
    rest = _TOKEN.sub(" ", text)  # so "ACC" of ACC-48213 is not also a proper noun
    caps: list[tuple[str, bool]] = []  # (word, whether it counts on its own)
    for m in _CAPITAL.finditer(rest):
        if m.group(0).casefold() not in _STOP:
            j = m.start() - 1
            while j >= 0 and rest[j] in " \t":
                j -= 1
            # After a sentence boundary a capital proves nothing ("Happy to help"), unless
            # a capitalized word follows ("Maria Lopez") or the word recurs mid-sentence.
            initial = j < 0 or rest[j] in _SENTENCE_START
            caps.append((m.group(0), not initial or bool(_NEXT_CAPITAL.match(rest, m.end()))))
    named = {word for word, sure in caps if sure}
    found.update((word, None) for word, _ in caps if word in named)
    return list(found)


def entities(text: str) -> set[str]:
    """The entities of ``text``: what a summary must keep verbatim to stay useful.

    Counted: e-mail addresses; dates (2024-03-15, 3/15/2024, March 15, 2024,
    15 Mar) and times (10:30); amounts ($12,480.50, €3.2k, 15%, 200 USD);
    identifiers (tokens mixing letters and digits, ACC-48213, INV-2024-0931,
    v2.1; upper-case codes such as SEV-HIGH); numbers of two or more digits or
    with decimals (single digits are mostly list markers and counts); proper
    nouns (capitalized words and acronyms outside a list of common words; at
    the start of a sentence only if another capitalized word follows or the
    word also appears mid-sentence).
    Regex-based and linear in the text: a heuristic, not NER.
    """
    return set(_entity_list(text))


_NORM = re.compile(r"(?<=\d),(?=\d{3})|[$€£¥]\s?")


def _norm(text: str) -> str:
    # "$12,480.50" and "12480.50 USD" name the same amount.
    return " ".join(_NORM.sub("", text).split()).casefold()


def _retention(originals: Sequence[str], summary: str) -> float:
    wanted = {_norm(e) for e in originals}
    if not wanted:
        return 1.0
    hay = _norm(summary)
    kept = sum(1 for e in wanted if re.search(rf"(?<!\w){re.escape(e)}(?!\w)", hay))
    return kept / len(wanted)


def _message_entities(messages: Sequence[BaseMessage]) -> list[str]:
    return list(dict.fromkeys(e for m in messages for e in _entity_list(message_text(m)[0])))


def entity_retention(originals: Sequence[BaseMessage], summary: str) -> float:
    """Share of the originals' entities (tool-call arguments included) found in ``summary``.

    Matching ignores case, thousands separators and currency symbols, and needs
    whole words: ``12`` is not found inside ``2012``. ``1.0`` if there are none.
    """
    return _retention(_message_entities(originals), summary)


# --- extractive -------------------------------------------------------------

_SPLIT = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_CLAUSE = re.compile(r"[;,]\s+")
_LONG = 300  # characters past which a sentence is cut into clauses
_KEYWORD = re.compile(
    r"\b(?:must|never|always|decid\w*|decision|agree\w*|prefer\w*|budget|deadline|due|"
    r"requir\w*|constraint\w*|cannot|can't|won't|don't|do not|only|at (?:most|least)|"
    r"no later than|confirm\w*|approv\w*|reject\w*|cancel\w*|commit\w*|promis\w*|plan\w*|"
    r"will|\w+'ll|important|conclu\w*|instead)\b",
    re.IGNORECASE,
)
_PLEASANT_WORDS = """
thanks thank you so much very for your the help hello hi hey sure great ok okay awesome
perfect welcome glad happy to a nice day good morning afternoon evening no problem of course
cheers appreciate it that's that is sounds wonderful excellent cool got bye goodbye see later have
please let me know if anything else i you're it's my pleasure again all set look up into check
moment just this on away now there here go hope helps feel free ask any question questions more
what can do today getting back quickly
"""
_PLEASANT = frozenset(_PLEASANT_WORDS.split())
_LEAD = re.compile(
    r"^(?:(?:sure|great|ok(?:ay)?|thanks|thank you|perfect|awesome|hi|hello|hey|got it|"
    r"of course|absolutely)\b[,!.]+\s+)+",
    re.IGNORECASE,
)
_HEAD = re.compile(r"^(?:User|Assistant|System|Tool(?: [\w.-]+)?): ")


class _Num(str):
    """A JSON number kept as written: 12480.50 must not come back as 12480.5."""


@dataclass(slots=True)
class _Unit:
    group: int  # units of one group share a line: 2 * message index (+1 for tool calls)
    head: str  # "User: ", "Tool query_orders: ", "Assistant called "
    sep: str
    text: str
    ents: list[str]  # normalized, see _norm
    rank: int  # +2 for entities, +1 for a decision or constraint: the lowest goes first
    tokens: int = 0


def _head(message: BaseMessage, tool_names: dict[str, str]) -> str:
    if isinstance(message, ToolMessage):
        name = message.name or tool_names.get(message.tool_call_id, "")
        return f"Tool {name}: " if name else "Tool: "
    roles = {"human": "User", "ai": "Assistant", "system": "System"}
    return f"{roles.get(message.type, message.type.capitalize())}: "


def _scalar(value: Any) -> str:
    if isinstance(value, str) and not isinstance(value, _Num) and len(value) > 40:
        return ", ".join(_entity_list(value))  # long prose: keep only what it names
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _records(value: Any, key: str, pairs: list[str], out: list[list[str]]) -> None:
    """Flatten JSON into ``key: value`` pairs, one record per object in a list."""
    if isinstance(value, dict):
        for k, v in value.items():
            _records(v, str(k), pairs, out)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict):
                sub: list[str] = []
                out.append(sub)
                _records(v, key, sub, out)
            else:
                _records(v, key, pairs, out)
    elif value is not None and (text := _scalar(value)):
        pairs.append(f"{key}: {text}" if key else text)


def _pieces(text: str, tool: bool) -> tuple[list[str], str]:
    """Split content into candidate pieces, and the separator to rejoin them."""
    if tool and text.lstrip()[:1] in ("{", "["):
        try:
            data = json.loads(text, parse_int=_Num, parse_float=_Num)
        except ValueError:
            pass
        else:
            top: list[str] = []
            out: list[list[str]] = [top]
            _records(data, "", top, out)
            return ["; ".join(r) for r in out if r], " | "
    pieces: list[str] = []
    for sentence in _SPLIT.split(text):
        pieces.extend(_CLAUSE.split(sentence) if len(sentence) > _LONG else [sentence])
    return pieces, " "


class ExtractiveSummarizer:
    """Picks and compacts the lines that later turns need; no model, no network.

    Kept, in order of value: lines carrying entities (see :func:`entities`) and
    the tools called, then decisions and constraints, then other prose.
    Pleasantries and exact duplicates are dropped, JSON tool results are cut to
    their ``key: value`` pairs. Over budget, the least valuable lines go first:
    prose, then decisions, then entity lines whose entities other lines keep,
    then the least dense entity lines, whose entities move to an
    ``Also mentioned:`` line. Deterministic; linear in the input apart from
    sorting the lines. ``previous`` only serves to skip prose it already states.
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or TokenCounter()

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        _check_budget(max_tokens)
        units, raw = self._units(messages, previous)
        text, slack = "", 0
        # Counts of separate lines do not add up exactly; retry with the overshoot as slack.
        for _ in range(4):
            kept, extra = self._select(units, max_tokens - slack)
            text = self._render(units, kept, [raw[e] for e in extra])
            over = self.counter.count_text(text) - max_tokens
            if over <= 0:
                return text
            slack += over
        return self._truncate(text, max_tokens)

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        return self.summarize(messages, previous=previous, max_tokens=max_tokens)

    def _units(
        self, messages: Sequence[BaseMessage], previous: str | None
    ) -> tuple[list[_Unit], dict[str, str]]:
        """Candidate pieces, and each normalized entity's first spelling."""
        stated = _sentence_keys(previous) if previous else set()
        seen: set[str] = set()
        tool_names: dict[str, str] = {}
        units: list[_Unit] = []
        raw: dict[str, str] = {}

        def norm(found: list[str]) -> list[str]:
            # "$500.00" and "500.00" are one entity: count, cover and list it once.
            for e in found:
                raw.setdefault(_norm(e), e)
            return list(dict.fromkeys(_norm(e) for e in found))

        for i, message in enumerate(messages):
            head = _head(message, tool_names)
            pieces, sep = _pieces(str(message.text), isinstance(message, ToolMessage))
            for piece in pieces:
                piece = _LEAD.sub("", piece.strip())
                key = " ".join(piece.split()).casefold()
                words = re.findall(r"[a-z']+", key)
                ents = norm(_entity_list(piece))
                keyword = _KEYWORD.search(piece) is not None
                if key in seen or (not ents and (key in stated or set(words) <= _PLEASANT)):
                    continue  # a duplicate, a restatement, or a pleasantry
                seen.add(key)
                rank = (2 if ents else 0) + keyword
                units.append(_Unit(2 * i, head, sep, piece, ents, rank))
            for call in getattr(message, "tool_calls", None) or ():
                tool_names[call.get("id") or ""] = call["name"]
                args = ", ".join(f"{k}={_scalar(v)}" for k, v in call["args"].items())
                ents = norm([call["name"], *_entity_list(args)])
                text = f"{call['name']}({args})"
                units.append(_Unit(2 * i + 1, "Assistant called ", ", ", text, ents, 3))
        for u in units:
            u.tokens = self.counter.count_text(u.text) + 1
        return units, raw

    def _select(self, units: list[_Unit], budget: int) -> tuple[list[bool], list[str]]:
        count = self.counter.count_text
        heads = {u.group: count(u.head) + 1 for u in units}
        members = Counter(u.group for u in units)
        total = sum(u.tokens for u in units) + sum(heads.values())
        kept = [True] * len(units)
        if total <= budget:
            return kept, []
        cover = Counter(e for u in units for e in u.ents)
        extra: list[str] = []
        extra_head = count("Also mentioned: ") + 1

        def cost(i: int) -> int:
            """Tokens saved by dropping unit ``i`` (negative when it does not pay)."""
            u = units[i]
            saved = u.tokens + (heads[u.group] if members[u.group] == 1 else 0)
            lost = [e for e in u.ents if cover[e] == 1]
            return (
                saved - sum(count(e) + 1 for e in lost) - (extra_head if lost and not extra else 0)
            )

        def drop(i: int) -> None:
            nonlocal total
            total -= cost(i)
            kept[i] = False
            members[units[i].group] -= 1
            for e in units[i].ents:
                cover[e] -= 1
                if cover[e] == 0:
                    extra.append(e)

        order = sorted(
            range(len(units)),
            key=lambda i: (units[i].rank, len(units[i].ents) / units[i].tokens, i),
        )
        for i in order:  # prose, decisions, then entity lines that add no new entity
            if total <= budget:
                break
            u = units[i]
            if u.rank < 2 or (u.rank == 2 and all(cover[e] > 1 for e in u.ents)):
                drop(i)
        for i in order:  # then the least dense entity lines, decisions last
            if total <= budget:
                break
            if kept[i] and cost(i) > 0:
                drop(i)
        return kept, extra

    @staticmethod
    def _render(units: list[_Unit], kept: list[bool], extra: list[str]) -> str:
        lines: list[str] = []
        group = -1
        for u, keep in zip(units, kept, strict=True):
            if keep:
                if u.group == group:
                    lines[-1] += u.sep + u.text
                else:
                    lines.append(u.head + u.text)
                    group = u.group
        if extra:
            lines.append("Also mentioned: " + "; ".join(extra))
        return "\n".join(lines)

    def _truncate(self, text: str, max_tokens: int) -> str:
        # Last resort: the longest prefix that fits, by bisection on characters.
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (
                (mid, hi) if self.counter.count_text(text[:mid]) <= max_tokens else (lo, mid - 1)
            )
        return text[:lo].rstrip()


def _sentence_keys(summary: str) -> set[str]:
    lines = (_HEAD.sub("", line) for line in summary.splitlines())
    return {" ".join(s.split()).casefold() for line in lines for s in _SPLIT.split(line)}


def _check_budget(max_tokens: int) -> None:
    if max_tokens <= 0:
        raise ConfigurationError(
            "max_tokens", f"a summary needs a positive budget, got {max_tokens}"
        )


# --- chat model ---------------------------------------------------------------

FallbackHook = Callable[[str, BaseException | None], None]
"""Told why a summary fell back: ``"error"``, ``"timeout"``, ``"empty"`` or ``"useless"``."""


def transcript(messages: Sequence[BaseMessage]) -> str:
    """Messages as a role-labelled transcript; tool calls as name and JSON arguments."""
    tool_names: dict[str, str] = {}
    lines: list[str] = []
    for message in messages:
        head, text = _head(message, tool_names), str(message.text)
        if text or not isinstance(message, AIMessage):
            lines.append(head + text)
        for call in getattr(message, "tool_calls", None) or ():
            tool_names[call.get("id") or ""] = call["name"]
            args = json.dumps(call["args"], ensure_ascii=False, default=str)
            lines.append(f"Assistant called {call['name']}({args})")
    return "\n".join(lines)


class ChatModelSummarizer:
    """Summarizes with any LangChain chat model, within a timeout, with a fallback.

    The model gets :data:`SUMMARY_PROMPT` as a system message and the transcript
    as one human message. When it raises, times out, returns nothing, or returns
    something useless (no entity of the originals, when they had three or more;
    or longer than the transcript), ``on_fallback(reason, exc)`` is called and
    the fallback's summary (extractive by default) is returned instead.

    Sync calls run the model in a worker thread so the timeout can be enforced;
    on timeout the thread is abandoned, not killed (Python cannot), and its
    result discarded. The caller's context variables (callbacks, tracing) are
    carried into it.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        prompt: str = SUMMARY_PROMPT,
        timeout: float | None = 30.0,
        fallback: Summarizer | None = None,
        on_fallback: FallbackHook | None = None,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ConfigurationError("timeout", f"must be positive or None, got {timeout}")
        self.model = model
        self.prompt = prompt
        self.timeout = timeout
        self.fallback: Summarizer = fallback or ExtractiveSummarizer()
        self.on_fallback = on_fallback

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        _check_budget(max_tokens)
        request, body = self._request(messages, previous, max_tokens)
        try:
            reply = self._invoke(request)
        except Exception as exc:
            self._fell_back(_reason(exc), exc)
        else:
            verdict = _judge(reply, messages, body)
            if verdict is None:
                return reply
            self._fell_back(verdict, None)
        return self.fallback.summarize(messages, previous=previous, max_tokens=max_tokens)

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        _check_budget(max_tokens)
        request, body = self._request(messages, previous, max_tokens)
        try:
            result = await asyncio.wait_for(self.model.ainvoke(request), self.timeout)
        except Exception as exc:
            self._fell_back(_reason(exc), exc)
        else:
            reply = str(result.text).strip()
            verdict = _judge(reply, messages, body)
            if verdict is None:
                return reply
            self._fell_back(verdict, None)
        return await self.fallback.asummarize(messages, previous=previous, max_tokens=max_tokens)

    def _request(
        self, messages: Sequence[BaseMessage], previous: str | None, max_tokens: int
    ) -> tuple[list[BaseMessage], str]:
        body = transcript(messages)
        text = f"Conversation to summarize:\n\n{body}"
        if previous:
            text = f"Earlier summary, for context only; do not repeat it:\n{previous}\n\n{text}"
        system = SystemMessage(self.prompt.replace("{max_tokens}", str(max_tokens)))
        return [system, HumanMessage(text)], body

    def _invoke(self, request: list[BaseMessage]) -> str:
        if self.timeout is None:
            return str(self.model.invoke(request).text).strip()
        context = contextvars.copy_context()
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lgctx-summarize")
        try:
            future = pool.submit(lambda: context.run(self.model.invoke, request))
            return str(future.result(timeout=self.timeout).text).strip()
        finally:
            pool.shutdown(wait=False)  # do not wait for a model that overran

    def _fell_back(self, reason: str, exc: BaseException | None) -> None:
        if self.on_fallback is not None:
            self.on_fallback(reason, exc)


def _reason(exc: BaseException) -> str:
    timeouts = (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError)
    return "timeout" if isinstance(exc, timeouts) else "error"


def _judge(reply: str, messages: Sequence[BaseMessage], body: str) -> str | None:
    """Why ``reply`` is unusable, or ``None`` if it will do."""
    if not reply:
        return "empty"
    if len(reply) > len(body):
        return "useless"  # a "summary" longer than what it summarizes
    wanted = _message_entities(messages)
    return "useless" if len(wanted) >= 3 and _retention(wanted, reply) == 0 else None
