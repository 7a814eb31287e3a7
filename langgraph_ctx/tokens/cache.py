"""Per-session token counts of the message history, updated incrementally
(:class:`MessageTokenCache`), and the keys that say a message is unchanged.

Every LLM call passes through the pre-flight check, so counting must not grow with
the session: the cache counts each message once and, on the next call, only the
messages that are new since the last one.
"""

from __future__ import annotations

import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage

if TYPE_CHECKING:
    from langgraph_ctx.tokens import TokenCounter


class MessageTokenCache:
    """Per-session token counts of the message history, updated incrementally.

    It holds numbers, never message objects:

    - always, a summary of the history as last counted: for each full block of
      :data:`BLOCK` messages, a hash of its messages' keys and the running
      total at its end; and the keys and counts of the messages after the last
      full block. 16 bytes per 64 messages plus at most 63 counts: about
      1.5 KB at 2,000 messages. That is all an idle session costs;
    - while the session is one of the few most recently used in this process
      (:data:`ACTIVE_SESSIONS`), also a memo key -> count of the messages it
      counted (at most :data:`MEMO_ENTRIES`), so that a message that moved
      (a compression removed a span before it) and compression's per-message
      questions (:meth:`count_of`) are looked up, not re-tokenized.

    Each call computes every message's key in bulk (C-level maps over the
    list: id and content, hashed; see :func:`message_keys`), compares the
    blocks by hash, keeps the running total of the longest unchanged run of
    blocks, and visits one by one only the messages after it: the last
    partial block and whatever is new. A checkpointed graph hands each step
    freshly deserialized messages; hashing their ids and contents costs a
    fraction of tokenizing them, or of what deserializing them cost the
    checkpointer. Holding no message object also means none of them is freed
    on our time, and a session never keeps a history alive.

    The key is the id and the content: a message edited in place (same id,
    new content) is recounted.

    Keying is linear in the history, with a small C-level constant per message,
    even where the framework hands back the very objects of the
    last call (several model calls inside one ``invoke``). Skipping those by
    identity needs the objects, held (the memory this cache is bounded
    against), or weak references to them: building those for the fresh
    history of every checkpointed step costs more than keying it, and saves
    only part of the keying on the same-object calls: a reference is still a
    step per message. Anything that is not must hold the objects. The
    checkpointed step is what users run.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._hashes = array("q")  # per full block: hash of its messages' keys
        self._ends = array("q")  # per full block: the running total at its end
        self._tail_keys = array("q")  # the messages after the last full block
        self._tail_counts = array("q")
        self._memo: dict[int, int] | None = None  # key -> count, while active
        self._prune = False  # forget() was called: trim the memo on the next total()
        self.counted = 0
        """How many messages have been tokenized (not looked up) so far: a test hook."""
        self.unchanged = 0
        """How many leading messages the last :meth:`total` found as the call before left
        them (same ids and contents; a multiple of :data:`BLOCK` plus the ones found in
        place after the unchanged blocks): what depends only on those need not be
        looked at again."""

    @property
    def messages(self) -> int:
        """How many messages the last :meth:`total` counted."""
        return len(self._hashes) * BLOCK + len(self._tail_keys)

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """Tokens of ``messages``, tokenizing only what was not counted before."""
        _activate(self)
        keys = message_keys(messages)
        full = len(keys) // BLOCK
        hashes = [hash(tuple(keys[i : i + BLOCK])) for i in range(0, full * BLOCK, BLOCK)]
        same = _common_prefix(self._hashes, hashes)
        start = same * BLOCK
        counts = self._count_from(messages, keys, start, aligned=same == len(self._hashes))
        del self._hashes[same:]
        del self._ends[same:]
        running = self._ends[-1] if same else 0
        for block in range(same, full):  # the blocks made of what was just counted
            running += sum(counts[(block - same) * BLOCK : (block - same + 1) * BLOCK])
            self._hashes.append(hashes[block])
            self._ends.append(running)
        self._tail_keys = array("q", keys[full * BLOCK :])
        self._tail_counts = array("q", counts[(full - same) * BLOCK :])
        if self._prune:
            self._trim(keys)
        return running + sum(self._tail_counts)

    def count_of(self, message: BaseMessage) -> int:
        """The (cached) token count of one message."""
        _activate(self)
        memo = self._active_memo()
        key = message_key(message)
        count = memo.get(key)
        if count is None:
            count = self._tokenize(message, key, memo)
        return count

    def remember(self, message: BaseMessage, count: int) -> None:
        """Take ``count`` as ``message``'s tokens, as if it had been counted: its maker
        built it from parts it had counted (ARC's memory grown by an entry, PACE's
        condensed steps), so a later :meth:`count_of` (the prompt ceiling's) or
        pre-flight looks it up instead of tokenizing it whole."""
        _activate(self)
        self._keep(self._active_memo(), message_key(message), count)

    def forget(self, ids: Sequence[str]) -> None:
        """Messages left the history (archived): the memo lets go of their counts at
        the next :meth:`total`, keeping those of the history it is then given."""
        self._prune = True

    def nbytes(self) -> int:
        """Bytes this cache holds: its arrays, and its memo while active (an estimate:
        a dict entry and two ints, about 100 bytes a message)."""
        size = sum(
            a.buffer_info()[1] * a.itemsize
            for a in (self._hashes, self._ends, self._tail_keys, self._tail_counts)
        )
        if self._memo is not None:
            size += sys.getsizeof(self._memo) + 2 * _INT_BYTES * len(self._memo)
        return size

    def release(self) -> None:
        """Go idle: drop the memo, keep the block summary."""
        self._memo = None

    def _count_from(
        self, messages: Sequence[BaseMessage], keys: list[int], start: int, *, aligned: bool
    ) -> list[int]:
        """Counts of ``messages[start:]``: the last call's partial block where it is
        in place (``aligned``: every block before it is unchanged), else the memo,
        else tokenized."""
        counts: list[int] = []
        kept = 0
        if aligned and self._tail_keys:
            kept = _common_prefix(self._tail_keys, keys[start : start + len(self._tail_keys)])
            counts = self._tail_counts[:kept].tolist()
        self.unchanged = start + kept
        memo = self._active_memo()
        for i in range(start + kept, len(keys)):
            key = keys[i]
            count = memo.get(key)
            if count is None:
                count = self._tokenize(messages[i], key, memo)
            counts.append(count)
        return counts

    def _tokenize(self, message: BaseMessage, key: int, memo: dict[int, int]) -> int:
        count = self.counter.count_message(message)
        self.counted += 1
        self._keep(memo, key, count)
        return count

    def _keep(self, memo: dict[int, int], key: int, count: int) -> None:
        if len(memo) >= MEMO_ENTRIES:
            # The newest half stays (in place: callers hold the dict): what was
            # counted last is what is asked next.
            for old in list(islice(memo, MEMO_ENTRIES // 2)):
                del memo[old]
        memo[key] = count

    def _active_memo(self) -> dict[int, int]:
        if self._memo is None:
            self._memo = {}
        return self._memo

    def _trim(self, keys: list[int]) -> None:
        # After messages were archived: keep the counts of the history as it is now.
        self._prune = False
        memo = self._active_memo()
        self._memo = {key: memo[key] for key in keys if key in memo}


BLOCK = 64
"""Messages per block of a cache's summary of the history: an edit makes the
cache revisit (look up, or tokenize if it was idle) the rest of its block."""
MEMO_ENTRIES = 32_768
"""Most per-message counts an active session's memo keeps (about 3 MB)."""
_INT_BYTES = 32  # an int object the memo holds, beside its dict entry
ACTIVE_SESSIONS = 4
"""How many caches keep their memo at once, per process."""
_active: OrderedDict[int, MessageTokenCache] = OrderedDict()
_active_lock = threading.Lock()


def _activate(cache: MessageTokenCache) -> None:
    with _active_lock:
        key = id(cache)
        if key in _active:
            _active.move_to_end(key)
            return
        _active[key] = cache
        while len(_active) > ACTIVE_SESSIONS:
            _active.popitem(last=False)[1].release()


_ID_AND_CONTENT = attrgetter("id", "content")
_ID = attrgetter("id")


def message_keys(messages: Sequence[BaseMessage]) -> list[int]:
    """:func:`message_key` of every message, in bulk: C-level passes over the list
    in the usual case (string contents, messages with ids), per message otherwise.

    Each ``(id, content)`` pair is freed as soon as it is hashed: keeping them
    would allocate one tracked object per message, and a checkpointed step's
    messages are freshly made, so the collections that triggers would walk
    the whole history on our time.
    """
    try:
        keys = list(map(hash, map(_ID_AND_CONTENT, messages)))
    except TypeError:  # a content made of blocks (a list): not hashable as it is
        return [message_key(m) for m in messages]
    if None in map(_ID, messages):  # a message without an id: its tool calls count too
        for i, m in enumerate(messages):
            if m.id is None:
                keys[i] = message_key(m)
    return keys


def message_key(message: BaseMessage) -> int:
    """A hash of what identifies a message's token count: its id and content.

    With an id, its tool calls are not hashed: LangGraph replaces a message by
    id, and a call edited in place under the same id and the same text does
    not happen in practice (ours never touch tool calls). Without one, they are.
    Read from ``__dict__``: pydantic attribute access costs more, and ``str``
    caches its hash, so a content already keyed costs O(1).
    """
    fields = message.__dict__
    content, mid = fields["content"], fields["id"]
    if content.__class__ is not str:
        content = repr(content)
    if mid is None and fields.get("tool_calls"):
        return hash((mid, content, repr(fields["tool_calls"])))
    return hash((mid, content))


def _common_prefix(old: array[int], new: list[int]) -> int:
    """How many leading keys ``old`` and ``new`` share."""
    n = min(len(old), len(new))
    if old[:n].tolist() == new[:n]:  # the usual case, compared in C
        return n
    lo, hi = 0, n  # the first difference, by bisection on C-level slice compares
    while lo < hi:
        mid = (lo + hi) // 2
        if old[lo : mid + 1].tolist() == new[lo : mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    return lo
