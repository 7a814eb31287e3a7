"""A manager model's room, and reading more than fits it over several calls.

A manager that writes the text replacing part of the context (AdaCoM's
rewrites, BACM's fold, ARC's memory entry) must read that part whole: shown a
preview, it writes a replacement for what it never saw. What it is shown can be
larger than its model's prompt room, so the listing is cut into consecutive
chunks, each one a call (map), and the answers are put together (reduce) by
the strategy; an item larger than a chunk is cut into parts at line ends, and
every part is shown with its place (``part 2 of 3``). Nothing is left out: the
calls together show every character.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

from langgraph_ctx.budget import Budget, model_window
from langgraph_ctx.errors import ContextRunError
from langgraph_ctx.tokens import TokenCounter

Count = Callable[[str], int]
T = TypeVar("T")

LEAST_ROOM = 200
"""Tokens a chunk needs at least: under it, a call would show a few words."""


class ManagerRoomError(ContextRunError):
    """What every call must show (instructions, task, note) leaves no room to read in."""


def manager_room(model: object, room: int | None) -> int:
    """``room`` if given, else the prompt limit of a budget for ``model``'s window
    (its profile's ``max_input_tokens``; 128K when it declares none)."""
    if room is not None:
        return room
    window = model_window(model)
    return (Budget.for_window(window) if window is not None else Budget()).prompt_limit


_counter: TokenCounter | None = None


def counter() -> TokenCounter:
    """One counter for every manager (tiktoken's encoding is loaded once)."""
    global _counter
    if _counter is None:
        _counter = TokenCounter()
    return _counter


def left_for_items(room: int, fixed: int) -> int:
    """Tokens a chunk may take when every call shows ``fixed`` tokens; raises
    :class:`ManagerRoomError` when that leaves less than :data:`LEAST_ROOM`."""
    left = room - fixed
    if left < LEAST_ROOM:
        raise ManagerRoomError(
            f"the manager's room of {room:,} tokens leaves {left:,} to read the context in "
            f"after its instructions and what every call shows ({fixed:,}): give its model "
            "a larger window (or the manager a larger room)"
        )
    return left


def split_text(text: str, room: int, count: Count) -> list[str]:
    """``text`` in consecutive pieces of at most about ``room`` tokens, cut at line
    ends (inside a longer line at spaces, inside a longer word at characters);
    joined with ``""`` they give ``text`` back."""
    pieces: list[str] = []
    current, size = "", 0
    for line in _units(text, room, count):
        n = count(line)
        if current and size + n > room:
            pieces.append(current)
            current, size = "", 0
        current, size = current + line, size + n
    if current or not pieces:
        pieces.append(current)
    return pieces


def _units(text: str, room: int, count: Count) -> list[str]:
    """Lines (their breaks kept), a line over ``room`` cut at spaces, a word at
    characters: each one at most ``room`` tokens."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if count(line) <= room:
            out.append(line)
            continue
        for word in _keep_split(line, " "):
            if count(word) <= room:
                out.append(word)
                continue
            step = max(1, room * 2)  # a token holds at least a character or two
            out.extend(word[i : i + step] for i in range(0, len(word), step))
    return out


def _keep_split(text: str, sep: str) -> list[str]:
    parts = text.split(sep)
    return [p + sep for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@dataclass(frozen=True, slots=True)
class Item:
    """One thing a manager reads: its id, a head line (id, role, size) and its body."""

    key: str
    head: str
    body: str

    def render(self) -> str:
        return f"{self.head}\n{self.body}" if self.body else self.head


@dataclass(frozen=True, slots=True)
class Piece:
    """What one chunk shows of one item: all of it, or one part of its body."""

    key: str
    head: str
    body: str
    part: int = 1
    parts: int = 1

    @property
    def whole(self) -> bool:
        return self.parts == 1

    def render(self, label: str = "") -> str:
        """Head (with ``label`` when a part, e.g. its place) and body."""
        head = self.head if self.whole else f"{self.head} {label}".rstrip()
        return f"{head}\n{self.body}" if self.body else head


def chunks(items: Sequence[Item], room: int, count: Count) -> list[list[Piece]]:
    """``items``, in order, in consecutive chunks of at most about ``room`` tokens;
    an item over ``room`` has its body cut into parts, one chunk each, its head on
    every part."""
    out: list[list[Piece]] = [[]]
    size = 0
    for item in items:
        n = count(item.head) + count(item.body) + 1
        if n > room:
            body_room = max(LEAST_ROOM // 2, room - count(item.head) - 20)
            cut = split_text(item.body, body_room, count)
            for i, piece in enumerate(cut, 1):
                out.append([Piece(item.key, item.head, piece, i, len(cut))])
            out.append([])  # nothing joins a part's chunk
            size = 0
            continue
        if out[-1] and size + n > room:
            out.append([])
            size = 0
        out[-1].append(Piece(item.key, item.head, item.body))
        size += n
    return [c for c in out if c]


Conversation = Generator[list[BaseMessage], Any, T]


def _advance(conversation: Conversation[T], answer: Any) -> tuple[bool, Any]:
    """``(False, the next prompt)``, or ``(True, the result)`` once it has ended."""
    try:
        return False, conversation.send(answer)
    except StopIteration as done:
        return True, done.value


def drive(conversation: Conversation[T], ask: Callable[[list[BaseMessage]], Any]) -> T:
    """Send each prompt ``conversation`` yields to ``ask``, and its answer back."""
    done, out = _advance(conversation, None)
    while not done:
        done, out = _advance(conversation, ask(out))
    return out  # type: ignore[no-any-return]


async def adrive(
    conversation: Conversation[T], ask: Callable[[list[BaseMessage]], Awaitable[Any]]
) -> T:
    """Async :func:`drive`."""
    done, out = _advance(conversation, None)
    while not done:
        done, out = _advance(conversation, await ask(out))
    return out  # type: ignore[no-any-return]
