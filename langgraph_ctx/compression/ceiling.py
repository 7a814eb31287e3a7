"""The hard ceiling: a prompt over its limit made to fit, or refused.

A provider refuses a prompt over its window, so no strategy's estimate may be
the last word. :func:`fit_prompt` takes a message list ``over`` tokens too
large and frees them, in the order that costs the model least:

1. tool results (not pinned themselves: a result kept only as a pinned
   message's partner is reduced in place like any other), largest first: an
   extractive digest, then cut to their header and a marker naming the
   archived original;
2. the oldest messages that are neither pinned nor in the current turn, in
   whole tool exchanges, left out of the prompt;
3. text of the current turn's messages that are not pinned, largest first,
   cut with a marker;
4. summaries, largest first, cut with a marker: the summary stays whole in the
   history and its originals in the archive, while a refused call would end
   the turn (a 4K window with a long system prompt and a turn of several tool
   rounds meets this).

What remains is pinned content (system messages, the task, pinned messages
and their tool partners) and each message's header: if that alone is over,
the prompt cannot fit and :class:`Fit.over` says by how much.

Pure: it reads messages and returns new ones. The callers archive, persist
and record (:class:`~langgraph_ctx.strategies.TieredCompression` persists its
reductions; :class:`~langgraph_ctx.middleware.PreflightCheck`'s last-line
guard makes them in the prompt only, the history keeping every original).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, ToolMessage

from langgraph_ctx.compression._extractive import ExtractiveSummarizer
from langgraph_ctx.history.structure import safe_cuts, split_tiers, turn_starts
from langgraph_ctx.ledger.parts import Fitted
from langgraph_ctx.markers import KEY, compacted, compacted_header
from langgraph_ctx.tokens import TokenCounter, message_key

CUT_MARKER = "[... cut to fit the context window]"
"""Ends a message cut (not only compacted) to keep the prompt under its limit."""
COMPACT_FLOOR = 100
"""The smallest digest a compacted tool result is given."""
_OVERHEAD = 8
"""Tokens a message costs beyond its text (role, separators), with margin."""
MEMO_SIZE = 256
"""Most reductions a memo keeps."""

Memo = dict[tuple[str, int, int], tuple[BaseMessage, bool]]
"""(message id, content key, size) -> the reduced message, and whether it was cut."""


@dataclass
class Fit:
    """What :func:`fit_prompt` did: the messages, and what changed in them."""

    messages: list[BaseMessage]
    over: int
    """Raw tokens still over the limit (0: it fits)."""
    reduced: list[str] = field(default_factory=list)
    """Ids of the messages made smaller (tool results digested or cut, text cut)."""
    cut: list[str] = field(default_factory=list)
    """Ids of messages cut with the marker (a subset of ``reduced``)."""
    omitted: list[str] = field(default_factory=list)
    """Ids left out of the prompt (step 2)."""
    tokens_before: int = 0
    tokens_after: int = 0
    """Raw tokens of the changed and omitted messages, before and after."""
    originals: list[BaseMessage] = field(default_factory=list)
    """The messages made smaller, as they were (for the caller to archive)."""

    def as_dict(self) -> Fitted:
        return {
            "ids": self.reduced,
            "cut": self.cut,
            "omitted": self.omitted,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }


def fit_prompt(
    messages: Sequence[BaseMessage],
    over: int,
    count: Callable[[BaseMessage], int],
    counter: TokenCounter,
    *,
    pin_task: bool = True,
    compactor: ExtractiveSummarizer | None = None,
    history: bool = False,
    memo: Memo | None = None,
) -> Fit:
    """Free ``over`` raw tokens from ``messages`` (see the module's steps).

    ``count`` is the (cached) token count of an unchanged message. ``history``:
    the result will be persisted, so only step 1 (leaving messages out, or
    cutting what the user or the model wrote, is for one prompt only).
    ``memo``: reductions kept from one call to the next (a prompt fitted on
    every call would otherwise digest the same large results every time); with
    it, a message is reduced to half its size, a quarter, ... (the first that
    frees enough), so the next call asks for the same size and finds it.
    """
    digests = compactor or ExtractiveSummarizer(counter=counter)
    work = _Fitting(counter, count, over, memo)
    tiers = split_tiers(messages, pin_task=pin_task)
    pinned = {id(m) for m in tiers.pinned}
    rest = tiers.rest
    current = turn_starts(rest)[-1] if rest else 0
    # A pin keeps its exchange whole, not verbatim: the partners it drags along
    # are reduced in place (same id and call), or a small pinned result would
    # make a huge sibling unfittable.
    results = [m for m in [*rest, *tiers.dragged] if isinstance(m, ToolMessage)]
    for result in sorted(results, key=count, reverse=True):
        if work.over <= 0:
            break
        # Down to its header and the cut marker if need be: a result the model
        # can fetch again by id beats a refused call.
        work.shrink(result, lambda r, size: reduce_tool_result(r, size, counter, digests))
    if not history and work.over > 0:
        work.omit_oldest(rest[:current])
    texts = [m for m in rest[current:] if not isinstance(m, ToolMessage) and id(m) not in pinned]
    texts = [] if history else sorted(texts, key=count, reverse=True)
    if not history:
        texts += sorted(tiers.summaries, key=count, reverse=True)  # the last to give way
    for text in texts:
        if work.over <= 0:
            break
        work.shrink(text, lambda t, size: (cut_text(t, size, counter), True))
    fit = Fit([work.smaller.get(id(m), m) for m in messages if id(m) not in work.left_out], 0)
    fit.over = work.over
    fit.originals = [m for m in messages if id(m) in work.smaller]
    fit.reduced = [str(m.id) for m in fit.originals]
    fit.cut = [str(m.id) for m in messages if id(m) in work.was_cut]
    fit.omitted = [str(m.id) for m in messages if id(m) in work.left_out]
    fit.tokens_before, fit.tokens_after = work.before, work.after
    return fit


class _Fitting:
    """The running state of one :func:`fit_prompt` (keyed by object: ids repeat in
    the wild)."""

    def __init__(
        self,
        counter: TokenCounter,
        count: Callable[[BaseMessage], int],
        over: int,
        memo: Memo | None,
    ) -> None:
        self.counter, self.count, self.over, self.memo = counter, count, over, memo
        self.smaller: dict[int, BaseMessage] = {}
        self.was_cut: set[int] = set()
        self.left_out: set[int] = set()
        self.before = self.after = 0

    def shrink(
        self, message: BaseMessage, reduce: Callable[[BaseMessage, int], tuple[BaseMessage, bool]]
    ) -> None:
        tokens = self.count(message)
        size = max(0, tokens - self.over)
        if self.memo is None:
            smaller, was_cut = reduce(message, size)
        else:
            size = _step_down(tokens, size)
            key = (str(message.id), message_key(message), size)
            if key not in self.memo:
                if len(self.memo) >= MEMO_SIZE:
                    self.memo.clear()  # bounded: starting over costs one reduction each
                self.memo[key] = reduce(message, size)
            smaller, was_cut = self.memo[key]
        saved = tokens - self.counter.count_message(smaller)
        if saved <= 0:
            return
        self.smaller[id(message)] = smaller
        self.over -= saved
        self.before += tokens
        self.after += tokens - saved
        if was_cut:
            self.was_cut.add(id(message))

    def omit_oldest(self, older: Sequence[BaseMessage]) -> None:
        """Leave out the shortest prefix of ``older`` (whole tool exchanges) that
        frees what is still over, or all of it."""
        cuts = safe_cuts(older)
        freed = chosen = saved = 0
        for i, m in enumerate(older):
            shrunk = self.smaller.get(id(m))
            freed += self.count(m) if shrunk is None else self.counter.count_message(shrunk)
            if cuts[i + 1]:
                chosen, saved = i + 1, freed
                if freed >= self.over:
                    break
        for m in older[:chosen]:
            self.left_out.add(id(m))
            self.was_cut.discard(id(m))
            shrunk = self.smaller.pop(id(m), None)
            if shrunk is None:
                self.before += self.count(m)
            else:  # its original is in ``before`` already; nothing of it is sent
                self.after -= self.counter.count_message(shrunk)
        self.over -= saved


def _step_down(tokens: int, most: int) -> int:
    """The largest of ``tokens`` halved once, twice, ... that is at most ``most``
    (0 below the compaction floor)."""
    size = tokens // 2
    while size > most and size >= COMPACT_FLOOR:
        size //= 2
    return size if size >= COMPACT_FLOOR and size <= most else 0


def reduce_tool_result(
    message: BaseMessage,
    size: int,
    counter: TokenCounter,
    compactor: ExtractiveSummarizer,
) -> tuple[BaseMessage, bool]:
    """``message`` in at most ``size`` tokens (or just its header and the cut
    marker): an extractive digest, cut if the digest alone is still larger.
    Whether it was cut."""
    tokens = original_tokens(message) or counter.count_message(message)
    smaller = compact_tool_result(message, size, tokens, compactor)
    if counter.count_message(smaller) <= size:
        return smaller, False
    header = compacted_header(message, tokens)
    text = smaller.text.partition("\n")[2]
    marker = f"\n{CUT_MARKER} (the original is archived as {message.id})"
    room = size - counter.count_text(header + marker) - _OVERHEAD
    while text and counter.count_message(compacted(message, text + marker, tokens)) > size:
        text = text[: max(0, min(len(text) - 1, int(len(text) * 0.9), room * 3))]
    return compacted(message, text + marker, tokens), True


def compact_tool_result(
    message: BaseMessage, size: int, tokens: int, compactor: ExtractiveSummarizer
) -> BaseMessage:
    """An extractive digest of a tool result in about ``size`` tokens, header included.

    Extractive whatever the summarizer: a tool result is records, not prose,
    and a model call per result would cost more than it saves. The header
    comes out of the digest's size, so the message takes what was planned."""
    counter = compactor.counter
    room = size - counter.count_text(compacted_header(message, tokens)) - 1
    digest = compactor.summarize([message], max_tokens=max(COMPACT_FLOOR // 2, room))
    return compacted(message, digest, tokens)


def cut_text(message: BaseMessage, size: int, counter: TokenCounter) -> BaseMessage:
    """A copy of ``message`` whose text is cut to fit ``size`` tokens, ending with
    the marker; tool calls (an assistant's) are kept, so its exchange stays whole.
    Content blocks other than text are dropped, and the marker says so."""
    blocks = message.content if isinstance(message.content, list) else []
    dropped = sum(1 for b in blocks if not (isinstance(b, str) or b.get("type") == "text"))
    note = f", {dropped} non-text block(s) dropped" if dropped else ""
    marker = f"\n{CUT_MARKER} (the whole message stays in the history as {message.id}{note})"
    text = str(message.text)
    calls = counter.count_message(message.model_copy(update={"content": ""}))
    room = size - calls - counter.count_text(marker)

    def build(body: str) -> BaseMessage:
        return message.model_copy(update={"content": body + marker})

    text = text[: max(0, room * 3)]
    while text and counter.count_message(build(text)) > size:
        text = text[: max(0, min(len(text) - 1, int(len(text) * 0.9)))]
    return build(text)


def original_tokens(message: BaseMessage) -> int | None:
    """The size of the original of a compacted tool result, from its mark."""
    marks = message.additional_kwargs.get(KEY)
    info = marks.get("compacted") if isinstance(marks, dict) else None
    return int(info["tokens"]) if isinstance(info, dict) and "tokens" in info else None
