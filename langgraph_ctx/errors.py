"""One error tree for the package.

Two branches, split by whose fault it is:

- :class:`ConfigurationError` — you called it wrong (a bad setting, a filter
  naming a node the graph lacks, a middleware added after wiring). Raised at
  construction or wiring time, before anything runs.
- :class:`ContextRunError` — this run failed (a middleware raised, a budget
  cannot be met). Raised while a graph runs.

Every error carries the data that explains it as attributes, not only in the
message, so callers can react without parsing text.
"""

from __future__ import annotations


class ContextError(Exception):
    """Base class of every error raised by langgraph-ctx."""


class ConfigurationError(ContextError, ValueError):
    """A setting or a wiring step is invalid. Nothing was changed.

    ``field`` names the offending setting (or node, or middleware).
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class ContextRunError(ContextError, RuntimeError):
    """Something failed while a graph was running."""


class MiddlewareError(ContextRunError):
    """A middleware raised. The original exception is ``__cause__``."""

    def __init__(self, middleware: str, node: str, cause: BaseException) -> None:
        super().__init__(
            f"middleware {middleware!r} failed on node {node!r}: {type(cause).__name__}: {cause}"
        )
        self.middleware = middleware
        self.node = node


class NextCalledTwiceError(ContextRunError):
    """A middleware called ``call_next`` again after it returned, or while it ran.

    A new call is allowed only after the previous one raised (a retry or a
    fallback); see :mod:`langgraph_ctx.pipeline.chain` for why.
    """

    def __init__(self, middleware: str, node: str, *, running: bool = False) -> None:
        when = "while its previous call was still running" if running else "after it returned"
        super().__init__(
            f"middleware {middleware!r} called call_next() again on node {node!r} {when}; "
            "a new call is allowed only after the previous one raised (retry, fallback)"
        )
        self.middleware = middleware
        self.node = node


class BudgetExceededError(ContextRunError):
    """The prompt cannot be made to fit the window, even after compression.

    Raised by :class:`~langgraph_ctx.TieredCompression` before the model is
    called, when even with every tool result reduced the prompt stays over
    :attr:`~langgraph_ctx.Budget.prompt_limit` (pinned or system content too
    large): a provider would refuse the call, and pinned content is never
    dropped. It passes through the pipeline unwrapped; nothing is persisted.
    """

    def __init__(self, needed: int, available: int, reason: str) -> None:
        super().__init__(f"prompt needs {needed} tokens, {available} available: {reason}")
        self.needed = needed
        self.available = available


class ThreadBusyError(ContextRunError):
    """Another run holds this thread (see :class:`langgraph_ctx.storage.locks.ThreadLock`).

    Two runs on one thread at once would fork its history and lose a turn, so
    the second one waits ``waited`` seconds for the first, then fails instead.
    """

    def __init__(self, thread_id: str, waited: float) -> None:
        super().__init__(
            f"thread {thread_id!r} is being run by another process or task "
            f"(waited {waited:.1f} s for it); retry when it finishes"
        )
        self.thread_id = thread_id
        self.waited = waited
