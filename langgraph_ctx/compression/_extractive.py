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
from collections import Counter
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langgraph_ctx.compression._prose import LIST_LINE, LISTED, NOTE, REDUNDANT
from langgraph_ctx.compression._units import Pool, Unit, build_pool
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.tokens import TokenCounter

_SPEAKERS = ("User: ", "Assistant: ", "System: ")
_FILL_TRIES = 40  # renders per kind of fill step: bounds the cost on large inputs
_FILL_DENSITY = 0.1  # value per token below which a dropped unit is not put back


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
        pool = build_pool(messages, previous, self.counter)
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
    # -- selection ---------------------------------------------------------

    def _list_cost(self, pool: Pool, entity: str) -> int:
        return self.counter.count_text("; " + pool.raw.get(entity, entity))

    def _step(self, pool: Pool, u: Unit) -> tuple[float, int]:
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

    def _estimate(self, pool: Pool) -> int:
        heads: dict[int, str] = {}
        total = 0
        for u in pool.units:
            if u.kept:
                total += u.tokens
                heads[u.group] = u.head
        total += sum(self.counter.count_text(h) + 1 for h in heads.values())
        extra = pool.extra()
        if extra:
            total += self.counter.count_text(LIST_LINE) + 1
            total += sum(self._list_cost(pool, e) for e in extra)
        return total

    def _select(self, pool: Pool, budget: int) -> None:
        for u in pool.units:
            pool.set_level(u, 0)
        pool.unlisted.clear()
        total = self._estimate(pool)
        if total <= budget:
            return
        members = Counter(u.group for u in pool.units)
        listing = bool(pool.extra())
        list_head = self.counter.count_text(LIST_LINE) + 1
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

    def _squeeze(self, pool: Pool, budget: int) -> None:
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

    def _fill(self, pool: Pool, text: str, budget: int) -> str:
        """Use the room the estimate left: put back the most valuable dropped units
        (as notes), then turn notes back into whole sentences. A few tries each."""
        room = budget - self.counter.count_text(text)
        extra = set(pool.extra())

        def freed(u: Unit) -> int:  # list entries that putting ``u`` back would remove
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

    def _render(self, pool: Pool) -> str:
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
            lines.append(LIST_LINE + "; ".join(pool.raw.get(e, e) for e in extra))
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
