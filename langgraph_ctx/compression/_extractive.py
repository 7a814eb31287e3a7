"""The extractive summarizer: picks and compacts what later turns need, with no model.

It works on *units*: a sentence, or a clause of a long sentence, of a message;
a ``key: value`` record of a JSON tool result; a tool call. Each unit carries
*concepts* with a weight:

- entities (:mod:`langgraph_ctx.compression._entities`): identifiers, names, amounts, dates,
  numbers; the heaviest, because later turns need them verbatim;
- content words: a rare word ("matcha", "metformin", "pitcher") weighs more
  than a common one ("really", "thing"; see :mod:`langgraph_ctx.compression._lexicon`).
  This is what keeps facts that name no entity ("I like strawberry matcha
  lattes") from being dropped as mere prose.

The user's units weigh more than the assistant's (which mostly restate or ask);
statements about oneself ("my name is", "I live", "I prefer") more than other
statements; those more than hypotheticals, and those more than questions and
requests. Decisions and constraints get a bonus.

Each prose unit degrades in steps: whole (fillers cut), then a telegraphic note
(function words cut: "I usually wake up around 6:30 in the morning" becomes
"usually wake up around 6:30 morning"), then dropped, its entities moving to an
``Also mentioned:`` line where they outlive it at a fraction of the cost.
Selection is a greedy reverse knapsack with coverage: while over budget, take
the step whose loss per token saved is lowest. A concept that another kept
unit also states is worth little, so near-duplicates go first; turning a unit
into a note loses almost nothing, so under pressure notes come before drops.
If even the list does not fit, its least valuable entries go, never simply the
tail. Room left at the end is filled back with the most valuable dropped units.

The value of a unit depends only on its own text and role, and a summary's lines
parse back into the units they came from, so summarizing summaries (meta-summary
consolidation) has every fact compete on the same terms again, instead of
eroding a little more at each pass.
"""

from __future__ import annotations

import heapq
import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from langgraph_ctx.compression._entities import NUMBER_WORD, entity_list, lowercase_words, norm
from langgraph_ctx.compression._lexicon import is_common
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import SUMMARY_PREFIX, is_summary
from langgraph_ctx.retrieval.text import STOP_WORDS, WORD, content_words, sentences, words
from langgraph_ctx.tokens import TokenCounter

# --- weights ------------------------------------------------------------------

ENTITY = 3.0
"""An identifier, name, date or amount; a plain number weighs 2 (1 if it has at most three
digits and comes from the records of a tool result: a seat count, a price in a listing).
A number in words ("eleven days") counts as a word of its unit, 1.5: alone on the list
it would say nothing."""
IDENTIFIER = 4.0
"""A code mixing letters and digits, or an e-mail address: the least guessable entity."""
RARE_WORD = 1.0
COMMON_WORD = 0.15
LISTED = 0.5
"""Share of an entity's value that survives on the ``Also mentioned`` line."""
REDUNDANT = 0.1
"""Share of a concept's value a unit keeps while another kept unit states it too."""
NOTE = 0.05
"""Share of a unit's value lost by turning it into a telegraphic note."""
ROLE = {"User": 1.0, "Tool": 1.0, "System": 1.0, "Assistant": 0.6}
DISCLOSURE = 1.3  # "my name is", "I live", "I prefer": what a memory is for
HYPOTHETICAL = 0.7  # "if there's financing...": a possibility, not a fact
QUESTION = 0.5  # a question or request asks for facts more than it states them
DECISION = 1.0  # flat bonus: a decision, commitment or constraint
CALL = 2.0  # flat bonus: a tool call, what was done

# --- patterns -----------------------------------------------------------------

# Clause boundaries of a long sentence: after , ; : and around dashes.
_CLAUSE = re.compile(r"(?<=[,;:])\s+|\s+[\u2014\u2013-]{1,2}\s+|[\u2014\u2013]")
_LONG = 24  # words: longer sentences are cut into clauses, each kept or dropped alone
_SHORT = 5  # words: a shorter clause sticks to the next one ("I believe," says nothing)
_KEYWORD = re.compile(
    r"\b(?:must|never|always|decid\w*|decision|agree\w*|prefer\w*|budget|deadline|due|"
    r"requir\w*|constraint\w*|cannot|can't|won't|don't|do not|only|at (?:most|least)|"
    r"no later than|confirm\w*|approv\w*|reject\w*|cancel\w*|commit\w*|promis\w*|plan\w*|"
    r"will|\w+'ll|important|conclu\w*|instead|allerg\w*|favou?rite)\b",
    re.IGNORECASE,
)
_DISCLOSURE = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+){0,3}(?:is|are|was|were|has|have)\b|\bI(?:'m|\u2019m| am)\s+"
    r"(?:a|an|\d|from|in|at|on|allergic|taking|using|living|working|studying)\b|\b(?:I|we)\s+"
    r"(?:\w+ly\s+)?(?:live|lived|work|worked|have|had|own|use|used|take|took|keep|kept|love|"
    r"loved|like|liked|prefer|enjoy|hate|bought|ordered|went|started|visited|grew|"
    r"studied|moved|got|received|chose|picked)\b|\bfavou?rite\b|\bmy name\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"\b(?:wonder\w*|curious|could you|can you|would you|do you|are there|is there|"
    r"let me know|any (?:advice|tips|ideas|intel|suggestions|recommendations)|"
    r"i'd (?:love|like) to (?:know|hear|learn))\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(r"^(?:if|whether|unless|in case)\b", re.IGNORECASE)
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
    r"of course|absolutely|also|plus|and|but|so|well|oh|anyway|that said)\b[,!.]*\s+)+",
    re.IGNORECASE,
)
# Words and asides that carry no fact, cut from every unit. Lower case only
# ("Super Bowl" stays), and a filler word only before another word.
_FILLER = re.compile(
    r",?\s*\b(?:I think|I believe|I guess|I suppose|I mean|you know|to be honest|honestly)\b,?"
    r"(?=\s)|\b(?:really|actually|basically|literally|definitely|totally|truly|just|quite|"
    r"very|super|pretty much|a little bit|a bit|so much)\s+(?=\w)"
)
# What a telegraphic note leaves out: the stop words, but for those that change what
# it says. Negations stay ("don't ship to PO boxes" keeps "don't"), and possessives,
# quantifiers and question words; so do "and" and "or", or two names would run into
# one ("Washington and Oregon").
_NOTE_KEEPS = """
and or nor not no never none cannot don't doesn't didn't isn't aren't wasn't weren't won't
wouldn't can't couldn't shouldn't hasn't haven't hadn't my mine our ours their theirs his
her hers all both every either neither more after before until unless when where why how must now
whose whether
"""
_NOTE_CUT = STOP_WORDS - frozenset(_NOTE_KEEPS.split())
_SPACES = re.compile(r"\s{2,}")
_SPACE_BEFORE_MARK = re.compile(r"\s+([,;:.!?)])")
_MARK_RUN = re.compile(r"([,;:])(?:\s*[,;:])+")  # ", , " left by cut words
_SMALL_NUMBER = re.compile(r"\d{1,3}")
_AMOUNT = re.compile(r"[\d.,]+")
_DIGIT = re.compile(r"\d")
_LETTERS = re.compile(r"[A-Za-z]{2}")
_HEAD = re.compile(r"^(User|Assistant|System|Tool(?: [\w.-]+)?): ")
_SPEAKERS = ("User: ", "Assistant: ", "System: ")
_CALL_LINE = "Assistant called "
_LIST_LINE = "Also mentioned: "
_CALL = re.compile(r"[\w.-]+\((?:[^()]|\([^()]*\))*\)")
_FILL_TRIES = 40  # renders per kind of fill step: bounds the cost on large inputs
_FILL_DENSITY = 0.1  # value per token below which a dropped unit is not put back


class _Num(str):
    """A JSON number kept as written: 12480.50 must not come back as 12480.5."""


@dataclass(slots=True)
class _Unit:
    group: int  # units of one group share a line (one message, or one summary line)
    head: str  # "User: ", "Tool query_orders: ", "Assistant called "
    sep: str  # how it joins the unit before it in the same group, as written
    forms: tuple[str, ...]  # the text, whole then as a note (one form if it has no note)
    sizes: tuple[int, ...]  # tokens of each form, separator included
    ents: dict[str, float]  # normalized entity -> weight
    words: dict[str, float]  # content word -> weight (scaled by role and kind)
    bonus: float = 0.0
    level: int = 0  # index into forms; len(forms) means dropped

    @property
    def kept(self) -> bool:
        return self.level < len(self.forms)

    @property
    def tokens(self) -> int:
        return self.sizes[self.level] if self.kept else 0


@dataclass
class _Pool:
    """The units, and the state of the selection."""

    units: list[_Unit]
    raw: dict[str, str]  # normalized entity -> first spelling
    weight: dict[str, float]  # normalized entity -> its weight
    listed: list[str]  # entities of an earlier "Also mentioned" line
    ent_cover: Counter[str] = field(default_factory=Counter)  # kept units stating each
    word_cover: Counter[str] = field(default_factory=Counter)
    unlisted: set[str] = field(default_factory=set)  # entities dropped from the list too

    def __post_init__(self) -> None:
        for u in self.units:
            self.ent_cover.update(u.ents.keys())
            self.word_cover.update(u.words.keys())

    def extra(self) -> list[str]:
        """Entities no kept unit states, in order of first appearance: the list."""
        order = dict.fromkeys([*self.listed, *(e for u in self.units for e in u.ents)])
        return [e for e in order if self.ent_cover[e] == 0 and e not in self.unlisted]

    def set_level(self, u: _Unit, level: int) -> None:
        was = u.kept
        u.level = level
        if was and not u.kept:
            self.ent_cover.subtract(u.ents.keys())
            self.word_cover.subtract(u.words.keys())
        elif u.kept and not was:
            self.ent_cover.update(u.ents.keys())
            self.word_cover.update(u.words.keys())

    def value(self, u: _Unit, *, keep: bool) -> float:
        """What ``u`` is worth kept: its concepts, discounted where others state them.

        ``keep``: ``u`` is kept (its own cover is counted) or a candidate to put back.
        """
        mine = 1 if keep else 0
        total = u.bonus
        for e, w in u.ents.items():
            alone = self.ent_cover[e] <= mine
            total += w * ((1 - LISTED) if alone else REDUNDANT)
        for word, w in u.words.items():
            total += w * (1.0 if self.word_cover[word] <= mine else REDUNDANT)
        return total


def _entity_weight(entity: str, data: bool = False) -> float:
    """``data``: it comes from a tool result's records, bulk data rather than a statement."""
    if data and _SMALL_NUMBER.fullmatch(entity):
        return 1.0  # a seat count, a small price in a listing: rarely needed later
    if _AMOUNT.fullmatch(entity):
        return 2.0
    if "@" in entity or (_DIGIT.search(entity) and _LETTERS.search(entity)):
        return IDENTIFIER  # ACC-48213, HAT175: nothing later can rebuild them
    return ENTITY


def role_head(message: BaseMessage, tool_names: dict[str, str]) -> str:
    """The line label of a message: ``User: ``, ``Assistant: ``, ``Tool name: ``..."""
    if isinstance(message, ToolMessage):
        name = message.name or tool_names.get(message.tool_call_id, "")
        return f"Tool {name}: " if name else "Tool: "
    roles = {"human": "User", "ai": "Assistant", "system": "System"}
    return f"{roles.get(message.type, message.type.capitalize())}: "


def _scalar(value: Any) -> str:
    if isinstance(value, str) and not isinstance(value, _Num) and len(value) > 40:
        return ", ".join(entity_list(value))  # long prose: keep only what it names
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


def _json_records(text: str) -> list[str] | None:
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        data = json.loads(text, parse_int=_Num, parse_float=_Num)
    except ValueError:
        return None
    top: list[str] = []
    out: list[list[str]] = [top]
    _records(data, "", top, out)
    return ["; ".join(r) for r in out if r]


_RECORD_KEY = re.compile(r"(?:^|; )[\w.-]+: ")


def _record_values(record: str) -> str:
    """The values of a ``key: value; ...`` record, to find its entities in: keys such as
    ``address1`` name nothing."""
    return _RECORD_KEY.sub(" ; ", record)


def _clauses(sentence: str) -> Iterator[tuple[str, str]]:
    """``(joint, clause)`` pairs of a sentence; short clauses stick to the next one."""
    if len(sentence.split()) <= _LONG:
        yield "", sentence
        return
    parts: list[tuple[str, str]] = []
    pos, joint = 0, ""
    for m in _CLAUSE.finditer(sentence):
        parts.append((joint, sentence[pos : m.start()]))
        pos, joint = m.end(), m.group(0)
    parts.append((joint, sentence[pos:]))
    held_joint, held = "", ""
    for joint, clause in parts:
        if held:
            held += (joint if joint.strip() else " ") + clause
        else:
            held_joint, held = joint, clause
        if len(held.split()) >= _SHORT:
            yield held_joint, held
            held = ""
    if held:
        yield held_joint, held


def _compact(text: str) -> str:
    """Cut leading interjections, fillers and asides."""
    text = _LEAD.sub("", text.strip())
    text = _FILLER.sub(lambda m: " " if m.group(0)[:1] in ",\t " else "", text)
    return _SPACES.sub(" ", text).strip()


def _note(text: str, entities: Sequence[str]) -> str:
    """``text`` as a telegraphic note: function words out, entities untouched."""
    spans = [(i, i + len(e)) for e in entities if e for i in _places(e, text)]

    def cut(m: re.Match[str]) -> str:
        inside = any(a <= m.start() < b for a, b in spans)
        word = m.group(0).casefold().replace("\u2019", "'")
        # "The" of a title stays ("The Infinity Courts"): a name must still match.
        title = word == "the" and text[m.end() : m.end() + 2].strip()[:1].isupper()
        return m.group(0) if inside or title or word not in _NOTE_CUT else ""

    note = WORD.sub(cut, text)
    note = _SPACE_BEFORE_MARK.sub(r"\1", _SPACES.sub(" ", note))
    note = _MARK_RUN.sub(r"\1", note)
    return note.strip(" ,;:")


def _places(needle: str, text: str) -> Iterator[int]:
    """Where ``needle`` starts in ``text``, overlaps included (no pattern per entity)."""
    i = text.find(needle)
    while i >= 0:
        yield i
        i = text.find(needle, i + 1)


def _words(text: str, entities: Sequence[str], factor: float) -> dict[str, float]:
    lowered = text.casefold()
    for e in entities:  # words of an entity are counted as the entity
        lowered = lowered.replace(e.casefold(), " ")
    out: dict[str, float] = {}
    for w in content_words(lowered):
        key = w[:-1] if w.endswith("s") and not w.endswith("ss") and len(w) > 4 else w
        out[key] = factor * (COMMON_WORD if is_common(w) else RARE_WORD)
    return out


def _scale(role: str, piece: str) -> float:
    """How much a unit's words are worth, by who says it and what kind of sentence it is."""
    scale = ROLE.get(role, 1.0)
    if piece.endswith("?") or _REQUEST.search(piece):
        return scale * QUESTION
    if _HYPOTHETICAL.search(piece):
        return scale * HYPOTHETICAL
    if role != "Assistant" and _DISCLOSURE.search(piece):
        return scale * DISCLOSURE
    return scale


class ExtractiveSummarizer:
    """Picks and compacts the sentences, clauses and records later turns need; no model.

    See :mod:`langgraph_ctx.compression._extractive` for how units are valued and selected.
    Deterministic; about linear in the input (a heap orders the steps).
    ``previous`` only serves to skip prose it already states.
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or TokenCounter()

    def summarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        if max_tokens <= 0:
            raise ConfigurationError(
                "max_tokens", f"a summary needs a positive budget, got {max_tokens}"
            )
        pool = self._pool(messages, previous)
        text, slack = "", 0
        # The estimate of separate lines does not add up exactly: retry with the overshoot.
        for _ in range(4):
            self._select(pool, max_tokens - slack)
            text = self._render(pool)
            over = self.counter.count_text(text) - max_tokens
            if over <= 0:
                return self._fill(pool, text, max_tokens)
            slack += over
        return self._truncate(text, max_tokens)

    async def asummarize(
        self, messages: Sequence[BaseMessage], *, previous: str | None = None, max_tokens: int
    ) -> str:
        return self.summarize(messages, previous=previous, max_tokens=max_tokens)

    # -- units -------------------------------------------------------------

    def _pool(self, messages: Sequence[BaseMessage], previous: str | None) -> _Pool:
        stated = _sentence_keys(previous) if previous else set()
        ordinary = lowercase_words("\n".join(str(m.text) for m in messages))
        seen: set[str] = set()
        tool_names: dict[str, str] = {}
        units: list[_Unit] = []
        raw: dict[str, str] = {}
        weight: dict[str, float] = {}
        listed: list[str] = []
        group = 0

        def ents_of(found: Sequence[str], data: bool = False) -> dict[str, float]:
            # "$500.00" and "500.00" are one entity: count, cover and list it once.
            out: dict[str, float] = {}
            for e in found:
                key = norm(e)
                raw.setdefault(key, e)
                out.setdefault(key, weight.setdefault(key, _entity_weight(e, data)))
            return out

        def unit(head: str, sep: str, forms: Sequence[str], ents: dict[str, float]) -> _Unit:
            # A note of fewer than two words ("know?") says nothing: no note then.
            forms = list(dict.fromkeys(f for f in forms if len(f.split()) > 1 or f is forms[0]))
            sizes = tuple(self.counter.count_text(f) + 1 for f in forms)
            if len(sizes) == 2 and sizes[1] >= sizes[0]:
                forms, sizes = forms[:1], sizes[:1]
            return _Unit(group, head, sep, tuple(forms), sizes, ents, {})

        def add_prose(head: str, text: str, tool: bool) -> None:
            nonlocal group
            role = head.split(":")[0].split()[0]
            records = _json_records(text) if tool else None
            if records is not None:
                pieces = [(" | ", r) for r in records]
            else:
                pieces = []
                for sentence in sentences(text):
                    for k, (joint, clause) in enumerate(_clauses(sentence)):
                        pieces.append((joint if k else " ", clause))
            for joint, piece in pieces:
                piece = piece.strip() if records is not None else _compact(piece)
                key = " ".join(piece.split()).casefold()
                if not piece or key in seen:
                    continue  # a duplicate
                found = entity_list(_record_values(piece) if records else piece, ordinary)
                if not found and (key in stated or set(words(key)) <= _PLEASANT):
                    continue  # a restatement, or a pleasantry
                seen.add(key)
                spelled = NUMBER_WORD.findall(piece)
                note = _note(piece, found) if records is None else ""
                u = unit(head, joint, [piece, note], ents_of(found, records is not None))
                scale = _scale(role, piece)
                u.words = _words(piece, found, scale)
                u.words.update((w.casefold(), 1.5 * scale) for w in spelled)
                u.bonus = DECISION if _KEYWORD.search(piece) else 0.0
                units.append(u)
            group += 1

        def add_calls(calls: Sequence[tuple[str, dict[str, float]]]) -> None:
            nonlocal group
            for text, ents in calls:
                u = unit(_CALL_LINE, ", ", [text], ents)
                u.bonus = CALL
                units.append(u)
            group += 1

        for message in messages:
            text = str(message.text)
            if is_summary(message) or (message.type == "system" and _HEAD.match(text)):
                # A summary of ours: its lines go back to the units they came from.
                lines = text.splitlines()
                for line in lines[1:] if lines[0].startswith(SUMMARY_PREFIX) else lines:
                    if line.startswith(_LIST_LINE):
                        for item in map(str.strip, line[len(_LIST_LINE) :].split("; ")):
                            # Re-checked: what is known now may show it is no name.
                            if item and item in entity_list(item, ordinary):
                                listed.extend(ents_of([item]))
                    elif line.startswith(_CALL_LINE):
                        found = _CALL.findall(line[len(_CALL_LINE) :])
                        add_calls([(c, ents_of(entity_list(c))) for c in found])
                    elif m := _HEAD.match(line):
                        add_prose(m.group(0), line[m.end() :], m.group(1).startswith("Tool"))
                    elif line.strip():
                        add_prose("System: ", line, False)
                continue
            add_prose(role_head(message, tool_names), text, isinstance(message, ToolMessage))
            calls = []
            for call in getattr(message, "tool_calls", None) or ():
                tool_names[call.get("id") or ""] = call["name"]
                args = ", ".join(f"{k}={_scalar(v)}" for k, v in call["args"].items())
                ents = ents_of([call["name"], *entity_list(args)])
                calls.append((f"{call['name']}({args})", ents))
            if calls:
                add_calls(calls)
        return _Pool(units, raw, weight, listed)

    # -- selection ---------------------------------------------------------

    def _list_cost(self, pool: _Pool, entity: str) -> int:
        return self.counter.count_text("; " + pool.raw.get(entity, entity))

    def _step(self, pool: _Pool, u: _Unit) -> tuple[float, int]:
        """Value lost and tokens saved by the next step down of kept unit ``u``."""
        if u.level + 1 < len(u.forms):  # whole -> note
            return NOTE * pool.value(u, keep=True), u.sizes[u.level] - u.sizes[u.level + 1]
        loss, saved = u.bonus, u.tokens
        for e, w in u.ents.items():
            if pool.ent_cover[e] > 1:
                loss += w * REDUNDANT
            else:  # its last unit: the entity moves to the list
                loss += w * (1 - LISTED)
                saved -= self._list_cost(pool, e)
        for word, w in u.words.items():
            loss += w * (REDUNDANT if pool.word_cover[word] > 1 else 1.0)
        return loss, saved

    def _estimate(self, pool: _Pool) -> int:
        heads: dict[int, str] = {}
        total = 0
        for u in pool.units:
            if u.kept:
                total += u.tokens
                heads[u.group] = u.head
        total += sum(self.counter.count_text(h) + 1 for h in heads.values())
        extra = pool.extra()
        if extra:
            total += self.counter.count_text(_LIST_LINE) + 1
            total += sum(self._list_cost(pool, e) for e in extra)
        return total

    def _select(self, pool: _Pool, budget: int) -> None:
        for u in pool.units:
            pool.set_level(u, 0)
        pool.unlisted.clear()
        total = self._estimate(pool)
        if total <= budget:
            return
        members = Counter(u.group for u in pool.units)
        listing = bool(pool.extra())
        list_head = self.counter.count_text(_LIST_LINE) + 1
        # Lazy greedy: a step's priority only rises as other units go (their
        # concepts become unique to this one), so a popped entry whose priority
        # is still current is the minimum.
        heap: list[tuple[float, int]] = []
        for i, u in enumerate(pool.units):
            loss, saved = self._step(pool, u)
            if saved > 0:
                heap.append((loss / saved, i))
        heapq.heapify(heap)
        while heap and total > budget:
            priority, i = heapq.heappop(heap)
            u = pool.units[i]
            loss, saved = self._step(pool, u)
            if saved <= 0:
                continue
            if loss / saved > priority + 1e-9:
                heapq.heappush(heap, (loss / saved, i))
                continue
            pool.set_level(u, u.level + 1)
            total -= saved
            if u.kept:  # now a note; its drop is the next step
                loss, saved = self._step(pool, u)
                if saved > 0:
                    heapq.heappush(heap, (loss / saved, i))
                continue
            members[u.group] -= 1
            if members[u.group] == 0:
                total -= self.counter.count_text(u.head) + 1
            if not listing and any(pool.ent_cover[e] == 0 for e in u.ents):
                listing = True
                total += list_head
        if total > budget:
            self._squeeze(pool, budget)
        # Under pressure, what is not worth its room goes even if it would fit:
        # the fill pass holds the same line, so the two agree.
        for u in pool.units:
            sole = u.kept and any(pool.ent_cover[e] == 1 for e in u.ents)
            if u.kept and not sole and pool.value(u, keep=True) / u.tokens < _FILL_DENSITY:
                pool.set_level(u, len(u.forms))

    def _squeeze(self, pool: _Pool, budget: int) -> None:
        """Still over: list entries and units whose entities do not pay to list go,
        by least value per token, whatever their place in the text."""
        candidates: list[tuple[float, int, int, str]] = []
        for e in pool.extra():
            value = pool.weight[e] * LISTED
            candidates.append((value / self._list_cost(pool, e), 0, 0, e))
        for i, u in enumerate(pool.units):
            if u.kept:
                value = u.bonus + sum(u.ents.values()) + sum(u.words.values())
                candidates.append((value / u.tokens, 1, i, ""))
        candidates.sort()
        members = Counter(u.group for u in pool.units if u.kept)
        total = self._estimate(pool)
        for _, kind, i, e in candidates:
            if total <= budget:
                break
            if kind == 0:
                if e not in pool.unlisted:
                    pool.unlisted.add(e)
                    total -= self._list_cost(pool, e)
                continue
            u = pool.units[i]
            total -= u.tokens
            pool.set_level(u, len(u.forms))
            members[u.group] -= 1
            if members[u.group] == 0:
                total -= self.counter.count_text(u.head) + 1
            for x in u.ents:  # no room to list them either
                if pool.ent_cover[x] == 0 and x not in pool.unlisted:
                    pool.unlisted.add(x)
        if total > budget:  # the estimate drifted: recount once and finish
            for _, kind, i, e in candidates:
                if self._estimate(pool) <= budget:
                    break
                if kind == 0:
                    pool.unlisted.add(e)
                elif pool.units[i].kept:
                    pool.set_level(pool.units[i], len(pool.units[i].forms))
                    pool.unlisted.update(x for x in pool.units[i].ents if pool.ent_cover[x] == 0)

    def _fill(self, pool: _Pool, text: str, budget: int) -> str:
        """Use the room the estimate left: put back the most valuable dropped units
        (as notes), then turn notes back into whole sentences. A few tries each."""
        room = budget - self.counter.count_text(text)
        extra = set(pool.extra())

        def freed(u: _Unit) -> int:  # list entries that putting ``u`` back would remove
            return sum(self._list_cost(pool, e) for e in u.ents if e in extra)

        # Not every dropped unit is worth its room: "keep you posted" is not.
        dropped = [u for u in pool.units if not u.kept]
        dropped = [u for u in dropped if pool.value(u, keep=False) / u.sizes[-1] >= _FILL_DENSITY]
        dropped.sort(key=lambda u: -pool.value(u, keep=False) / u.sizes[-1])
        notes = [u for u in pool.units if u.kept and u.level > 0]
        notes.sort(key=lambda u: -pool.value(u, keep=True) / (u.sizes[0] - u.sizes[u.level]))
        steps = [(u, len(u.forms) - 1) for u in dropped] + [(u, 0) for u in notes]
        tries = {True: 0, False: 0}
        for u, level in steps:
            back = not u.kept
            if room <= 1 or tries[back] == _FILL_TRIES:
                continue
            cost = u.sizes[level] - u.tokens - (freed(u) if back else 0)
            if cost > room:
                continue
            tries[back] += 1
            was = u.level
            pool.set_level(u, level)
            candidate = self._render(pool)
            left = budget - self.counter.count_text(candidate)
            if left >= 0:
                text, room, extra = candidate, left, set(pool.extra())
            else:
                pool.set_level(u, was)
        return text

    # -- output ------------------------------------------------------------

    def _render(self, pool: _Pool) -> str:
        lines: list[str] = []
        group, head = -1, ""
        for i, u in enumerate(pool.units):
            if not u.kept:
                continue
            text = u.forms[u.level]
            if u.group == group or (u.head == head and u.head in _SPEAKERS):
                # Consecutive messages of one speaker share a line, and so do the
                # units of one message. A unit right after its neighbour in the
                # original joins as written; across a gap, prose is re-punctuated.
                contiguous = i > 0 and pool.units[i - 1].kept and u.group == group
                if contiguous or u.head not in _SPEAKERS:
                    lines[-1] += u.sep + text
                elif lines[-1][-1:] in ".!?":
                    lines[-1] += " " + text
                else:
                    lines[-1] = lines[-1].rstrip(",;:") + "; " + text
            else:
                lines.append(u.head + text)
            group, head = u.group, u.head
        extra = pool.extra()
        if extra:
            lines.append(_LIST_LINE + "; ".join(pool.raw.get(e, e) for e in extra))
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


def _last(pool: _Pool, i: int) -> int:
    return pool.units[i].sizes[-1]


def _sentence_keys(summary: str) -> set[str]:
    lines = (_HEAD.sub("", line) for line in summary.splitlines())
    return {" ".join(s.split()).casefold() for line in lines for s in sentences(line)}
