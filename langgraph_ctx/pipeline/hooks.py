"""Hooks written once for sync and async runs: the I/O they wait for is a value.

A middleware's ``before``/``after`` hook is plain code. When it needs genuine
I/O (a summarizer model call, a store search), it does not call it: it yields
an :class:`IOCall` holding both forms, and the runner picks one::

    def before(self, view, ctx):
        try:
            found = yield IOCall(partial(store.search, q), partial(store.asearch, q), timeout=2.0)
        except TimeoutError:
            return view
        return view.replace(...)

Under ``invoke`` the sync form is called; under ``ainvoke`` the async form is
awaited. Either way the hook resumes at the ``yield`` with the result, or with
the exception raised there, so its logic (and its error handling) is written
once. A hook with no I/O just returns its value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar, cast

from langgraph_ctx._workers import call_with_timeout

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IOCall(Generic[T]):
    """One piece of I/O a hook waits for, in its sync and its async form."""

    call: Callable[[], T]
    """Called by the sync runner."""
    acall: Callable[[], Awaitable[T]]
    """Awaited by the async runner."""
    timeout: float | None = None
    """Seconds either form may take; past it, ``TimeoutError`` is raised at the
    ``yield``. The async form is cancelled; the sync form runs in the package's
    bounded pool of daemon threads, one of which a call that never returns
    keeps (never the caller, never the interpreter at exit)."""

    def outcome(self) -> tuple[Any, Exception | None]:
        try:
            if self.timeout is None:
                return self.call(), None
            return run_with_timeout(self.call, self.timeout), None
        except Exception as exc:
            return None, exc

    async def aoutcome(self) -> tuple[Any, Exception | None]:
        try:
            if self.timeout is None:
                return await self.acall(), None
            return await asyncio.wait_for(self.acall(), self.timeout), None
        except Exception as exc:
            return None, exc


Hook: TypeAlias = Generator[IOCall[Any], Any, T]
"""A hook that does I/O: yields :class:`IOCall` requests, returns its value."""
Step: TypeAlias = T | Hook[T]
"""What a hook returns: its value, or (a hook that does I/O) a :data:`Hook`."""


@dataclass(frozen=True, slots=True)
class _Returned(Generic[T]):
    value: T


def drive(step: Step[T]) -> T:
    """Run a hook's step to its value, doing its I/O synchronously."""
    hook, request = _start(step)
    while isinstance(request, IOCall):
        request = _resume(hook, *request.outcome())
    return request.value


async def adrive(step: Step[T]) -> T:
    """Run a hook's step to its value, awaiting its I/O."""
    hook, request = _start(step)
    while isinstance(request, IOCall):
        request = _resume(hook, *await request.aoutcome())
    return request.value


def _start(step: Step[T]) -> tuple[Hook[T], IOCall[Any] | _Returned[T]]:
    # A hook that is a plain function returned its value already: no I/O to drive,
    # so no generator is ever resumed (the loops stop at a _Returned).
    if not isinstance(step, Generator):
        return cast(Hook[T], None), _Returned(step)
    hook = cast(Hook[T], step)
    return hook, _resume(hook, None, None)


def _resume(hook: Hook[T], value: Any, error: Exception | None) -> IOCall[Any] | _Returned[T]:
    try:
        request = hook.throw(error) if error is not None else hook.send(value)
    except StopIteration as stop:
        return _Returned(cast(T, stop.value))
    if not isinstance(request, IOCall):
        hook.close()
        raise TypeError(f"a middleware hook yielded {request!r}; it may only yield IOCall")
    return request


def run_with_timeout(fn: Callable[[], T], timeout: float) -> T:
    """Run ``fn`` in the package's bounded daemon pool; raise ``TimeoutError`` if it
    takes longer.

    A call that never answers keeps one of the pool's few workers, never the
    caller, nor (daemon threads) the interpreter at exit: see
    :mod:`langgraph_ctx._workers`.
    """
    return call_with_timeout(fn, timeout)
