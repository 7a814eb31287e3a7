"""An operation written once for sync and async: a generator of I/O steps.

Each step is the sync and the async form of one call; :func:`run` makes the
sync calls, :func:`arun` awaits the async ones, and the generator's logic (and
its checks) sits in one place. :class:`~langgraph_ctx.retrieval.memory.MemoryBank`
writes its multi-step operations this way (store, index, store).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from functools import partial
from typing import Any, TypeVar

__all__ = ["Step", "Steps", "arun", "in_thread", "run"]

T = TypeVar("T")

Step = tuple[Callable[[], Any], Callable[[], Awaitable[Any]]]
Steps = Generator[Step, Any, T]
"""A bank operation as a generator of I/O steps (sync and async forms of each), so that its
logic is written once and :func:`run` or :func:`arun` does the I/O."""


def in_thread(fn: Callable[..., Any], *args: Any) -> Step:
    """A step with no async form of its own: under asyncio it runs in a worker thread."""
    return partial(fn, *args), partial(asyncio.to_thread, fn, *args)


def run(steps: Steps[T]) -> T:
    try:
        step = next(steps)
        while True:
            step = steps.send(step[0]())
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def arun(steps: Steps[T]) -> T:
    result: Any = None
    try:
        while True:
            result = await steps.send(result)[1]()
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
