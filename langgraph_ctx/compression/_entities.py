"""Entities: the identifiers, amounts, dates and names a summary must keep verbatim.

Later turns most often need these word for word, so the extractive summarizer
ranks lines by them and the compression metric (entity retention) counts them.
Regex-based and linear in the text: a heuristic, not NER. Names are found by
case in any script that has one ("Zürich", "Łódź", "Αθήνα"); scripts without
case (CJK) yield no guessed names.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import regex  # type: ignore[import-untyped]  # \p{Lu}: capitals of every script
from langchain_core.messages import BaseMessage

from langgraph_ctx.compression._lexicon import is_common
from langgraph_ctx.retrieval.text import STOP_WORDS, sentence_starts, words
from langgraph_ctx.tokens import message_text

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b\.?"
)
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_UNITS_WORDS = "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_TEENS = "thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_NUMBER_WORD = (
    rf"(?:(?:{_TENS})(?:-(?:one|{_UNITS_WORDS}))?"
    rf"|{_TEENS}|{_UNITS_WORDS}|hundred|thousand|million|billion)"
)
# One pass, leftmost match wins, so an id such as INV-2024-0931 is not also
# counted as the numbers 2024 and 0931, nor 2024-05-06T17:41:02 as a date and a time.
_TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail address
    r"|\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    r"|\b\d{1,2}(?::\d{2}){1,2}(?:\s?(?:[AaPp][Mm]\b|[AaPp]\.[Mm]\.))?"  # 5:30 PM, 10:00 a.m.
    r"|\b\d{1,2}\s?(?:[AaPp][Mm]\b|[AaPp]\.[Mm]\.)"
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?|\b\d{{1,2}}\s+{_MONTH}"
    rf"|[$€£¥]\s?{_NUM}(?:\s?(?:[kKmMbB]|bn)\b)?|\b{_NUM}\s?(?:%|(?:USD|EUR|GBP|JPY|CHF)\b)"
    r"|\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_/.][A-Za-z0-9]+)*\b"  # ACC-48213
    r"|\b[A-Z]{2,}(?:[-_][A-Z0-9]+)+\b"  # SEV-HIGH
    r"|\b\d+(?:\.\d+)?(?:[/-]\d+(?:\.\d+)?)+\b"  # 138/85, 30-50
    r"|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+\.\d+\b|\b\d{2,}\b"  # numbers of 2+ digits
)
NUMBER_WORD = re.compile(rf"\b{_NUMBER_WORD}\b", re.IGNORECASE)
"""A number written as a word, from "two" up ("eleven", "twenty-two", "hundred"). Not an
entity: out of its sentence it says nothing; the summarizer weighs it as a rare word."""
# A capitalized word (CamelCase, hyphenated: "McDonald", "Engi-House") or an acronym;
# a name is a run of them, possibly joined by "of" or "&" ("Bank of America").
_UPPER = r"[\p{Lu}\p{Lt}]"
_CAP_WORD = (
    rf"(?:{_UPPER}\p{{Ll}}+(?:\p{{Lu}}\p{{Ll}}*)*(?:-\p{{L}}\p{{Ll}}*)*|\p{{Lu}}{{2,6}}s?)\b"
)
_CAPITAL = regex.compile(rf"\b{_CAP_WORD}(?:(?:[ \t]+|[ \t]+(?:of|&)[ \t]+){_CAP_WORD})*")
# Words that open a run of capitals but name nothing: function words, the words of
# chat and of our own summaries, and titles ("Dr. Müller" is Müller). Not "us":
# a capitalized "US" is the country.
_CHAT_WORDS = """
sure great hello hi hey yes ok okay alright right well oh fine good perfect done got note
next first second last finally one once user assistant tool system today tomorrow
yesterday mentioned conversation summary recalled memory id ids
"""
_TITLES = frozenset(["dr", "mr", "mrs", "ms", "mx", "prof", "rev", "st"])
_NOT_A_NAME = (STOP_WORDS - {"us"}) | frozenset(_CHAT_WORDS.split()) | _TITLES
# A title in quotes ("Tech for Good", 'Future Focus'): capitalized words, with the
# small words a title may hold between them. Quotes make it a name even at the start.
_TITLE_WORD = rf"{_UPPER}[\w'\u2019&.-]*"
_QUOTED = regex.compile(
    rf"(?<![\w])[\"\u201c\u2018'](?P<title>{_TITLE_WORD}(?:[ \t]+(?:{_TITLE_WORD}|"
    rf"(?:of|for|the|and|a|an|in|on|to|at|with|by)(?=[ \t]+{_UPPER}))){{0,5}})[\"\u201d\u2019']"
    r"(?![\w])"
)
# After these a capital is no evidence of a name: a list item, a quote, a clause.
# Not ':': after a label ("notes: Fedex") a capital is usually a name. Not the
# sentence ends (. ! ?): those are the sentence splitter's call ("Dr. Müller").
_CLAUSE_START = frozenset(["", *";\n\"'(*#>-\u201c\u2018\u2014\u2013"])
_SENTENCE_END = frozenset(".!?\u2026\u3002")
# A sentence adverb ("Occasionally,", "Performance-wise,") is no name.
# Nor, at the start of a sentence, is a gerund or an abstract noun ("Walking", "Friendship").
_ADVERB = re.compile(r"(?:ly|wise|wards?|ing|ship|[st]ion|ness|ment)$")


class _Starts:
    """Whether a name at a place of ``rest`` (``text`` with entities blanked) begins a
    sentence or clause. ``text`` is split into sentences only if a name follows a
    sentence mark, and then once."""

    def __init__(self, rest: str, text: str) -> None:
        self.rest, self.text = rest, text
        self._sentences: set[int] | None = None

    def __call__(self, index: int) -> bool:
        if _mark_before(self.rest, index) in _CLAUSE_START:
            return True  # "" too: the start of the text
        if _mark_before(self.text, index) not in _SENTENCE_END:
            return False  # "p.m." is blanked in ``rest``: its period is seen in ``text``
        if self._sentences is None:
            self._sentences = sentence_starts(self.text)
        return index in self._sentences


def _mark_before(text: str, index: int) -> str:
    """The last character before ``index`` that is no space or tab ("" if none)."""
    j = index - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    return text[j] if j >= 0 else ""


def _ordinary(word: str, lower: set[str]) -> bool:
    return is_common(word) or bool(_ADVERB.search(word)) or word.casefold() in lower


def lowercase_words(text: str) -> set[str]:
    """Words ``text`` writes in lower case: ordinary words, whatever starts a sentence."""
    return {w.casefold() for w in words(text) if w[0].islower()}


def _blank(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def entity_list(text: str, ordinary: Collection[str] = ()) -> list[str]:
    """Entities of ``text`` in order of first appearance (order keeps output deterministic).

    ``ordinary``: words known to occur in lower case around ``text`` (see
    :func:`lowercase_words`); at the start of a sentence they are not names.
    """
    found = dict.fromkeys(m.group(0) for m in _TOKEN.finditer(text))
    # Blanked, not cut, so that places in ``rest`` are places in ``text``: "ACC" of
    # ACC-48213 is no proper noun, and "5 p.m." still ends the sentence before "Nobody".
    rest = _TOKEN.sub(_blank, text)
    titles = [m.group("title") for m in _QUOTED.finditer(rest)]
    if titles:
        found.update((t, None) for t in titles if " " in t or not is_common(t))
        rest = _QUOTED.sub(_blank, rest)
    lower = lowercase_words(rest)
    if ordinary:
        lower |= {w.casefold() for w in words(rest) if w.casefold() in ordinary}
    starts = _Starts(rest, text)
    names: list[tuple[str, bool]] = []  # (name, whether it counts on its own)
    for m in _CAPITAL.finditer(rest):
        run: list[str] = m.group(0).split()
        initial = starts(m.start())
        # Leading function words are no part of a name ("Thanks Bob"), nor is an
        # ordinary word that only starts the sentence ("Happy Friday" is "Friday").
        while run and (
            run[0].casefold() in _NOT_A_NAME
            or (initial and len(run) > 1 and _ordinary(run[0], lower))
        ):
            run.pop(0)
        while run and run[-1] in ("of", "&"):
            run.pop()
        if not run:
            continue
        name = " ".join(run)
        # After a sentence boundary a lone capital proves nothing ("Happy to help",
        # "Total Cost": "Cost") unless it is no ordinary word ("Dealogic has become..."),
        # or it recurs mid-sentence. A run of capitals ("Maria Lopez") is a name anywhere.
        sure = not initial or len(run) > 1 or not _ordinary(name, lower)
        names.append((name, sure))
    named = {name for name, sure in names if sure}
    found.update((name, None) for name, _ in names if name in named)
    return list(found)


def entities(text: str) -> set[str]:
    """The entities of ``text``: what a summary must keep verbatim to stay useful.

    Counted: e-mail addresses; dates (2024-03-15, ISO timestamps, 3/15/2024,
    March 15, 2024, 15 Mar) and times (10:30, 5:30 PM, 3 pm); amounts
    ($12,480.50, €3.2k, 15%, 200 USD); identifiers (tokens mixing letters and
    digits, ACC-48213, INV-2024-0931, v2.1; upper-case codes such as SEV-HIGH);
    ratios and ranges (138/85, 30-50); numbers of two or more digits or with
    decimals (single digits are mostly list markers and counts); proper nouns:
    runs of capitalized words and acronyms ("Goldman Sachs", "Bank of America",
    "AWS"), leading function words aside; titles in quotes ("Tech for Good").
    A lone capitalized word at the start of a sentence counts only if it is no
    common English word (see :mod:`langgraph_ctx.compression._lexicon`), no sentence adverb
    or abstract noun, and does not also appear in lower case; or if it recurs
    mid-sentence.
    """
    return set(entity_list(text))


_NORM = re.compile(r"(?<=\d),(?=\d{3})|[$€£¥]\s?")


def norm(text: str) -> str:
    """The matching form of an entity: "$12,480.50" and "12480.50 USD" name one amount."""
    return " ".join(_NORM.sub("", text).split()).casefold()


def retention(originals: Sequence[str], summary: str) -> float:
    """Share of the entities ``originals`` found in ``summary``, as whole words."""
    wanted = {norm(e) for e in originals}
    if not wanted:
        return 1.0
    hay = norm(summary)
    kept = sum(1 for e in wanted if _whole_word_in(e, hay))
    return kept / len(wanted)


def _is_word_char(c: str) -> bool:
    """What ``\\w`` matches in a ``str`` pattern: alphanumerics and the underscore."""
    return c.isalnum() or c == "_"


def _whole_word_in(needle: str, hay: str) -> bool:
    """Whether ``needle`` occurs in ``hay`` with no word character on either side.

    Same answer as ``re.search(rf"(?<!\\w){re.escape(needle)}(?!\\w)", hay)``, but
    ``str.find`` with a check at each hit: no pattern to compile per entity.
    """
    n = len(needle)
    i = hay.find(needle)
    while i >= 0:
        end = i + n
        if (i == 0 or not _is_word_char(hay[i - 1])) and (
            end == len(hay) or not _is_word_char(hay[end])
        ):
            return True
        i = hay.find(needle, i + 1)  # occurrences may overlap
    return False


def message_entities(messages: Sequence[BaseMessage]) -> list[str]:
    """Entities of ``messages`` (tool-call arguments included), in order, once each."""
    return list(dict.fromkeys(e for m in messages for e in entity_list(message_text(m)[0])))


def entity_retention(originals: Sequence[BaseMessage], summary: str) -> float:
    """Share of the originals' entities (tool-call arguments included) found in ``summary``.

    Matching ignores case, thousands separators and currency symbols, and needs
    whole words: ``12`` is not found inside ``2012``. ``1.0`` if there are none.
    """
    return retention(message_entities(originals), summary)
