"""Memory recall: long-term memories injected before the LLM call, within budget and time.

:class:`MemoryRecall` reads pre-flight's usage report (after compression has
re-measured it), so it must run after :class:`PreflightCheck`. Per call:

1. query = the latest user message + the current thought's hypothesis;
2. search the run's scope (:class:`~langgraph_ctx.retrieval.memory.MemoryBank`) under a
   strict timeout; a slow, failing or unreachable store records
   ``recall_timeout`` / ``recall_error`` and the call goes on without recall;
3. include, best score first, each item that still fits the auxiliary tokens
   pre-flight left (the previous session's summary on the same task first);
4. inject them as ONE ephemeral system message, after the leading system
   messages and summaries: the model sees it, the checkpoint never does.

The tokens injected are added to ``ctx.usage`` (auxiliary), and ``recall`` is
recorded with latency, items and tokens.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_ctx._checks import check_instance, check_int, check_str, check_timeout
from langgraph_ctx.markers import (
    KEY,
    RECALL_PREFIX,
    is_ephemeral,
    is_summary,
    last_summary_index,
    summary_body,
)
from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, Middleware, View
from langgraph_ctx.retrieval.memory import Memory, MemoryBank, Scope, SessionSummary

logger = logging.getLogger("langgraph_ctx.recall")

RECALL_END = "[End of Recalled Memory]"
_HEADER = (
    f"{RECALL_PREFIX} From long-term memory, not from this conversation; use what is relevant."
)
Found = tuple[SessionSummary | None, list[Memory]]


@dataclass(frozen=True)
class _Request:
    scope: Scope
    query: str
    task_key: str | None
    budget: int


class MemoryRecall(Middleware):
    """Injects the memories most relevant to the call, within the auxiliary budget."""

    name = "recall"
    priority = 40
    """After compression (30): it fills the room compression leaves, not the room before."""
    default_nodes = ("call_llm",)
    requires = (PreflightCheck,)
    """It fills what pre-flight left of the auxiliary budget, and no more."""
    reads = ("messages",)
    writes = ("context_ledger",)

    def __init__(
        self,
        bank: MemoryBank,
        *,
        timeout: float = 2.0,
        max_tokens: int | None = None,
        task_key: str = "task_key",
        **kwargs: Any,
    ) -> None:
        """
        Args:
            bank: the memories, their store and how a run's scope is read.
            timeout: seconds the store may take (search and session summary
                together) before the call goes on without recall.
            max_tokens: a cap below the auxiliary budget pre-flight leaves.
            task_key: the ``config["configurable"]`` key (or ``state["session"]``
                key) naming the task, for cross-session warming.
        """
        super().__init__(**kwargs)
        check_instance("MemoryRecall.bank", bank, MemoryBank, "a MemoryBank")
        check_timeout("MemoryRecall.timeout", timeout, optional=False)
        if max_tokens is not None:
            check_int("MemoryRecall.max_tokens", max_tokens, least=1)
        check_str("MemoryRecall.task_key", task_key)
        self.bank = bank
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.task_key = task_key

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        request = self._request(view, ctx)
        if request is None:
            return view
        start = time.perf_counter()
        fetch = IOCall(
            partial(self._fetch, request), partial(self._afetch, request), timeout=self.timeout
        )
        try:
            found = yield fetch
        except Exception as exc:
            record_failure(ctx, "recall", exc, start, self.timeout)
            return view
        return self._inject(view, ctx, request, found, start, elapsed_ms(start))

    # -- the steps -----------------------------------------------------------

    def _request(self, view: View, ctx: CallContext) -> _Request | None:
        report = ctx.measured()
        config = ctx.config
        scope = self.bank.scope(config)
        # Within the auxiliary allocation, and never past the red line: a pinned
        # system prompt over its own share is not covered by rebalancing.
        headroom = ctx.budget.red_line - report.total
        budget = max(0, min(report.remaining("auxiliary"), headroom))
        if self.max_tokens is not None:
            budget = min(budget, self.max_tokens)
        if scope is None or budget <= 0:
            reason = "no scope in config" if scope is None else "no auxiliary budget"
            ctx.record("recall_skipped", {"reason": reason, "budget": budget})
            return None
        session = view.get("session") or {}
        task = (config.get("configurable") or {}).get(self.task_key) or session.get(self.task_key)
        return _Request(scope, query_of(view), None if task is None else str(task), budget)

    def _fetch(self, r: _Request) -> Found:
        warm = self.bank.session_summary(r.scope, r.task_key) if r.task_key else None
        return warm, self.bank.search(r.scope, r.query)

    async def _afetch(self, r: _Request) -> Found:
        warm = await self.bank.asession_summary(r.scope, r.task_key) if r.task_key else None
        return warm, await self.bank.asearch(r.scope, r.query)

    def _inject(
        self, view: View, ctx: CallContext, r: _Request, found: Found, start: float, store: float
    ) -> View:
        warm, memories = found
        if warm is not None and warm.thread_id is not None and warm.thread_id == ctx.thread_id:
            warm = None  # the session that wrote it already has it
        # A summary still in the history is no memory to bring back (the observer
        # stored it). Only looked for when a found memory came from compression,
        # so a call with none pays nothing for it.
        if any(m.source == "compression" for m in memories):
            present = {summary_body(m) for m in view.get("messages") or () if is_summary(m)}
            memories = [m for m in memories if m.text not in present]
        lines, chosen, raw = select(warm, memories, r.budget, ctx)
        data: dict[str, Any] = {
            "latency_ms": elapsed_ms(start),  # all of recall: store, ranking, selection
            "store_ms": store,
            "mode": "semantic" if self.bank.semantic else "lexical",
            "candidates": len(memories),
            "items": len(chosen),
            "warm": bool(lines) and len(lines) > len(chosen),
            "budget": r.budget,
            "tokens": 0,
        }
        if not lines:
            ctx.record("recall", data)
            return view
        data["tokens"] = ctx.session.calibration.apply(raw)
        data["levels"] = [m.level for m in chosen]
        data["keys"] = [m.key for m in chosen]
        ctx.adjust_usage("auxiliary", raw)
        message = _block(lines)
        message.additional_kwargs[KEY] = {
            "ephemeral": True,
            "recall": {"keys": data["keys"], "tokens": data["tokens"], "warm": data["warm"]},
        }
        ctx.record("recall", data)
        messages: list[BaseMessage] = list(view.get("messages") or ())
        at = insert_at(messages)
        return view.replace(messages=[*messages[:at], message, *messages[at:]])


# -- helpers -------------------------------------------------------------------


def select(
    warm: SessionSummary | None, memories: Sequence[Memory], budget: int, ctx: CallContext
) -> tuple[list[str], list[Memory], int]:
    """Greedy, best first: every memory whose line still fits ``budget`` (calibrated tokens).

    Returns the block's lines, the memories chosen and the block's raw token count.
    Lines are one line each and the block joins them with newlines, a boundary
    tiktoken's pre-tokenizer never merges across, so each line is counted once
    (``line + "\\n"``) and the running total is exact; the final count checks it.
    """
    apply, count = ctx.session.calibration.apply, ctx.counter.count_text
    lines: list[str] = []
    if warm is not None and warm.text.strip():
        line = _fit(f"- [previous session] {_one_line(warm.text)}", budget, ctx)
        lines += [line] if line else []
    raw = ctx.counter.count_message(_block(lines))
    chosen: list[Memory] = []
    for memory in memories:
        line = f"- [{memory.level}] {_one_line(memory.text)}"
        cost = count(line + "\n")
        if apply(raw + cost) <= budget:
            lines.append(line)
            chosen.append(memory)
            raw += cost
    raw = ctx.counter.count_message(_block(lines))
    while chosen and apply(raw) > budget:  # only if the estimator (no tiktoken) is in use
        chosen.pop()
        lines.pop()
        raw = ctx.counter.count_message(_block(lines))
    return lines, chosen, raw


def query_of(view: View) -> str:
    """The latest user message's text plus the current thought's hypothesis."""
    messages: list[BaseMessage] = list(view.get("messages") or ())
    human = next((m for m in reversed(messages) if m.type == "human"), None)
    parts = [str(human.text)] if human is not None else []
    thoughts = view.get("thoughts") or []
    if thoughts and isinstance(thoughts[-1], dict):
        thought = thoughts[-1]
        current = human is None or thought.get("turn") in (None, human.id)
        if current and thought.get("hypothesis"):
            parts.append(str(thought["hypothesis"]))
    return "\n".join(p for p in parts if p.strip())


def insert_at(messages: Sequence[BaseMessage]) -> int:
    """After the leading system messages and after the last summary: before the conversation."""
    i = 0
    while i < len(messages) and messages[i].type == "system" and not is_ephemeral(messages[i]):
        i += 1
    return max(i, last_summary_index(messages) + 1)


def _block(lines: Sequence[str]) -> SystemMessage:
    return SystemMessage("\n".join([_HEADER, *lines, RECALL_END]), id="lgctx-recall")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fit(line: str, budget: int, ctx: CallContext) -> str | None:
    """``line``, or its longest prefix (marked) whose block fits ``budget``; None if none does."""

    def cost(lines: Sequence[str]) -> int:
        return ctx.session.calibration.apply(ctx.counter.count_message(_block(lines)))

    if cost([line]) <= budget:
        return line
    low, high = 0, len(line)
    while low < high:
        mid = (low + high + 1) // 2
        if cost([line[:mid] + " [...]"]) <= budget:
            low = mid
        else:
            high = mid - 1
    return line[:low] + " [...]" if low > len("- [previous session] ") else None


def record_failure(
    ctx: CallContext, what: str, exc: BaseException, start: float, timeout: float
) -> None:
    """Record ``<what>_timeout`` or ``<what>_error`` (with the error) and log it."""
    timed_out = isinstance(exc, (TimeoutError, asyncio.TimeoutError))
    kind = f"{what}_timeout" if timed_out else f"{what}_error"
    data: dict[str, Any] = {"latency_ms": elapsed_ms(start), "timeout_s": timeout}
    if not timed_out:
        data["error"] = f"{type(exc).__name__}: {exc}"
    ctx.record(kind, data)
    logger.warning("%s on node %r: %s; the call goes on without it", kind, ctx.node, exc)


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)
