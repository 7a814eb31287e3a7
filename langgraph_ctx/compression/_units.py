"""The units of an extractive summary and the pool the summarizer selects from.

A unit is a sentence, a clause of a long sentence, a record of a JSON tool result or
a tool call; :func:`build_pool` turns messages (and the lines of earlier summaries of
ours) into units, and :class:`Pool` keeps which of them are kept and what each
concept is still worth."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, ToolMessage

from langgraph_ctx.compression._entities import NUMBER_WORD, entity_list, lowercase_words, norm
from langgraph_ctx.compression._prose import (
    CALL,
    CALL_LINE,
    CALL_TEXT,
    DECISION,
    HEAD,
    KEYWORD,
    LIST_LINE,
    LISTED,
    PLEASANT,
    REDUNDANT,
    clauses,
    compact,
    entity_weight,
    json_records,
    record_values,
    role_head,
    scalar,
    scale_of,
    sentence_keys,
    telegraphic,
    word_weights,
)
from langgraph_ctx.markers import SUMMARY_PREFIX, is_summary
from langgraph_ctx.retrieval.text import sentences, words
from langgraph_ctx.tokens import TokenCounter


@dataclass(slots=True)
class Unit:
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
class Pool:
    """The units, and the state of the selection."""

    units: list[Unit]
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

    def set_level(self, u: Unit, level: int) -> None:
        was = u.kept
        u.level = level
        if was and not u.kept:
            self.ent_cover.subtract(u.ents.keys())
            self.word_cover.subtract(u.words.keys())
        elif u.kept and not was:
            self.ent_cover.update(u.ents.keys())
            self.word_cover.update(u.words.keys())

    def value(self, u: Unit, *, keep: bool) -> float:
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


def build_pool(
    messages: Sequence[BaseMessage], previous: str | None, counter: TokenCounter
) -> Pool:
    """The units of ``messages``; prose that ``previous`` already states is left out."""
    builder = _PoolBuilder(messages, previous, counter)
    for message in messages:
        builder.add_message(message)
    return Pool(builder.units, builder.raw, builder.weight, builder.listed)


class _PoolBuilder:
    """One pass over the messages: what it has seen so far, and the units made."""

    def __init__(
        self, messages: Sequence[BaseMessage], previous: str | None, counter: TokenCounter
    ) -> None:
        self.counter = counter
        self.stated = sentence_keys(previous) if previous else set()
        self.ordinary = lowercase_words("\n".join(str(m.text) for m in messages))
        self.seen: set[str] = set()
        self.tool_names: dict[str, str] = {}
        self.units: list[Unit] = []
        self.raw: dict[str, str] = {}
        self.weight: dict[str, float] = {}
        self.listed: list[str] = []
        self.group = 0

    def add_message(self, message: BaseMessage) -> None:
        text = str(message.text)
        if is_summary(message) or (message.type == "system" and HEAD.match(text)):
            self.add_summary(text)
            return
        head = role_head(message, self.tool_names)
        self.add_prose(head, text, isinstance(message, ToolMessage))
        calls = []
        for call in getattr(message, "tool_calls", None) or ():
            self.tool_names[call.get("id") or ""] = call["name"]
            args = ", ".join(f"{k}={scalar(v)}" for k, v in call["args"].items())
            ents = self.ents_of([call["name"], *entity_list(args)])
            calls.append((f"{call['name']}({args})", ents))
        if calls:
            self.add_calls(calls)

    def add_summary(self, text: str) -> None:
        """A summary of ours: its lines go back to the units they came from."""
        lines = text.splitlines()
        for line in lines[1:] if lines[0].startswith(SUMMARY_PREFIX) else lines:
            if line.startswith(LIST_LINE):
                for item in map(str.strip, line[len(LIST_LINE) :].split("; ")):
                    # Re-checked: what is known now may show it is no name.
                    if item and item in entity_list(item, self.ordinary):
                        self.listed.extend(self.ents_of([item]))
            elif line.startswith(CALL_LINE):
                found = CALL_TEXT.findall(line[len(CALL_LINE) :])
                self.add_calls([(c, self.ents_of(entity_list(c))) for c in found])
            elif m := HEAD.match(line):
                self.add_prose(m.group(0), line[m.end() :], m.group(1).startswith("Tool"))
            elif line.strip():
                self.add_prose("System: ", line, False)

    def ents_of(self, found: Sequence[str], data: bool = False) -> dict[str, float]:
        # "$500.00" and "500.00" are one entity: count, cover and list it once.
        out: dict[str, float] = {}
        for e in found:
            key = norm(e)
            self.raw.setdefault(key, e)
            out.setdefault(key, self.weight.setdefault(key, entity_weight(e, data)))
        return out

    def unit(self, head: str, sep: str, forms: Sequence[str], ents: dict[str, float]) -> Unit:
        # A note of fewer than two words ("know?") says nothing: no note then.
        forms = list(dict.fromkeys(f for f in forms if len(f.split()) > 1 or f is forms[0]))
        sizes = tuple(self.counter.count_text(f) + 1 for f in forms)
        if len(sizes) == 2 and sizes[1] >= sizes[0]:
            forms, sizes = forms[:1], sizes[:1]
        return Unit(self.group, head, sep, tuple(forms), sizes, ents, {})

    def add_prose(self, head: str, text: str, tool: bool) -> None:
        role = head.split(":")[0].split()[0]
        records = json_records(text) if tool else None
        if records is not None:
            pieces = [(" | ", r) for r in records]
        else:
            pieces = []
            for sentence in sentences(text):
                for k, (joint, clause) in enumerate(clauses(sentence)):
                    pieces.append((joint if k else " ", clause))
        for joint, piece in pieces:
            piece = piece.strip() if records is not None else compact(piece)
            key = " ".join(piece.split()).casefold()
            if not piece or key in self.seen:
                continue  # a duplicate
            found = entity_list(record_values(piece) if records else piece, self.ordinary)
            if not found and (key in self.stated or set(words(key)) <= PLEASANT):
                continue  # a restatement, or a pleasantry
            self.seen.add(key)
            spelled = NUMBER_WORD.findall(piece)
            note = telegraphic(piece, found) if records is None else ""
            u = self.unit(head, joint, [piece, note], self.ents_of(found, records is not None))
            scale = scale_of(role, piece)
            u.words = word_weights(piece, found, scale)
            u.words.update((w.casefold(), 1.5 * scale) for w in spelled)
            u.bonus = DECISION if KEYWORD.search(piece) else 0.0
            self.units.append(u)
        self.group += 1

    def add_calls(self, calls: Sequence[tuple[str, dict[str, float]]]) -> None:
        for text, ents in calls:
            u = self.unit(CALL_LINE, ", ", [text], ents)
            u.bonus = CALL
            self.units.append(u)
        self.group += 1
