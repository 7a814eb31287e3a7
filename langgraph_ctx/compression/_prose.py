"""Reading text for the extractive summarizer (:mod:`._extractive`): the weights of
what a unit states, the patterns that find it, and the functions that cut a message
into sentences, clauses and records and value their words."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from langgraph_ctx.compression._entities import entity_list
from langgraph_ctx.compression._lexicon import is_common
from langgraph_ctx.retrieval.text import STOP_WORDS, WORD, content_words, sentences

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
KEYWORD = re.compile(
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
PLEASANT = frozenset(_PLEASANT_WORDS.split())
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
HEAD = re.compile(r"^(User|Assistant|System|Tool(?: [\w.-]+)?): ")
CALL_LINE = "Assistant called "
LIST_LINE = "Also mentioned: "
CALL_TEXT = re.compile(r"[\w.-]+\((?:[^()]|\([^()]*\))*\)")


class _Num(str):
    """A JSON number kept as written: 12480.50 must not come back as 12480.5."""


def entity_weight(entity: str, data: bool = False) -> float:
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


def scalar(value: Any) -> str:
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
    elif value is not None and (text := scalar(value)):
        pairs.append(f"{key}: {text}" if key else text)


def json_records(text: str) -> list[str] | None:
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


def record_values(record: str) -> str:
    """The values of a ``key: value; ...`` record, to find its entities in: keys such as
    ``address1`` name nothing."""
    return _RECORD_KEY.sub(" ; ", record)


def clauses(sentence: str) -> Iterator[tuple[str, str]]:
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


def compact(text: str) -> str:
    """Cut leading interjections, fillers and asides."""
    text = _LEAD.sub("", text.strip())
    text = _FILLER.sub(lambda m: " " if m.group(0)[:1] in ",\t " else "", text)
    return _SPACES.sub(" ", text).strip()


def telegraphic(text: str, entities: Sequence[str]) -> str:
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


def word_weights(text: str, entities: Sequence[str], factor: float) -> dict[str, float]:
    lowered = text.casefold()
    for e in entities:  # words of an entity are counted as the entity
        lowered = lowered.replace(e.casefold(), " ")
    out: dict[str, float] = {}
    for w in content_words(lowered):
        key = w[:-1] if w.endswith("s") and not w.endswith("ss") and len(w) > 4 else w
        out[key] = factor * (COMMON_WORD if is_common(w) else RARE_WORD)
    return out


def scale_of(role: str, piece: str) -> float:
    """How much a unit's words are worth, by who says it and what kind of sentence it is."""
    scale = ROLE.get(role, 1.0)
    if piece.endswith("?") or _REQUEST.search(piece):
        return scale * QUESTION
    if _HYPOTHETICAL.search(piece):
        return scale * HYPOTHETICAL
    if role != "Assistant" and _DISCLOSURE.search(piece):
        return scale * DISCLOSURE
    return scale


def sentence_keys(summary: str) -> set[str]:
    lines = (HEAD.sub("", line) for line in summary.splitlines())
    return {" ".join(s.split()).casefold() for line in lines for s in sentences(line)}
