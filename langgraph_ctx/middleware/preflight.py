"""Pre-flight check: measure the pending prompt before every LLM call.

It counts each component (system, messages, bound tools, auxiliary), applies
the session's calibration, rebalances the allocations, and writes the
:class:`~langgraph_ctx.budget.UsageReport` to ``ctx.usage`` for the layers
after it. It appends the utilization to the ledger and the custom stream.
After the call, it learns calibration from the provider's reported usage.

Last, just before the node (after every other layer, whatever the strategy),
its **prompt ceiling** (:meth:`PreflightCheck.fit`) makes sure the prompt sent
is within :attr:`~langgraph_ctx.budget.Budget.prompt_limit`: a prompt a
strategy left over it is fitted for this call only (tool results digested or
cut, the oldest unpinned turns left out, then the current turn's unpinned text
cut, each with a marker; the history keeps every original), recorded as
``ceiling_enforced``; if even pinned content cannot fit,
:class:`~langgraph_ctx.errors.BudgetExceededError` is raised before the model
is called.

Cost per call is O(new messages): the message total comes from the session's
incremental cache; only leading system messages and the (cached) tool
schemas are looked at on every call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from functools import partial
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.types import Command

from langgraph_ctx.budget import Component, UsageReport, measure
from langgraph_ctx.compression.ceiling import fit_prompt
from langgraph_ctx.errors import BudgetExceededError
from langgraph_ctx.history.structure import repair_pairs
from langgraph_ctx.ledger import ToolPairsRepaired
from langgraph_ctx.ledger.core import CeilingChecked, RecallSkipped, UtilizationMeasured
from langgraph_ctx.markers import GLIMPSE, KEY, RECALL_PREFIX, is_recall_block, is_summary
from langgraph_ctx.middleware.thought import think_notes, thought_message
from langgraph_ctx.pipeline import CallContext, Middleware, View


class PreflightCheck(Middleware):
    """Measures the prompt against the budget before the node calls its model."""

    name = "preflight"
    priority = 10
    default_nodes = ("call_llm", "think")
    reads = ("messages",)
    writes = ("context_ledger",)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tool_tokens: dict[tuple[str, int], int] = {}
        self._prompt_tokens: dict[str, int] = {}

    def before(self, view: View, ctx: CallContext) -> View:
        messages: list[BaseMessage] = view.get("messages") or []
        with ctx.session.lock:
            history = ctx.session.cache.total(messages)
            unchanged = ctx.session.cache.unchanged  # how much of the history is as it was
        repaired = self.repair(view, ctx, unchanged=unchanged)
        # The history's total is the O(n) part of a call: taken once, unless repaired.
        self.check(repaired, ctx, history=history if repaired is view else None)
        ctx.last_check = partial(self.fit, ctx=ctx)
        return repaired

    def fit(self, view: View, *, ctx: CallContext) -> View:
        """The view the node gets, within the prompt limit (see the module).

        Runs after every layer, on what they made of the view. Every built-in
        layer that changes what is sent re-measures it exactly
        (:meth:`CallContext.adjust_usage`; ``tests/test_usage_exact.py`` checks
        each strategy), so the report as they left it, clearly under the limit,
        is trusted: O(1), which is every call a strategy keeps in budget. The
        slack is for a layer of the user's that reshapes a message without
        re-measuring. Near or over the limit, the messages sent are counted
        (cached counts, by content).
        """
        prompt = self._prompt(ctx) if ctx.system_prompt else 0
        sent, over = prompt_over(view, ctx, prompt)
        if over <= 0:
            return view
        # Recall gives way to the history, never the reverse: a prompt over its
        # limit first loses this call's recall block and the glimpse schema, so
        # that what is cut of the history is what recall off would cut.
        view = self._without_recall(view, ctx)
        sent, over = prompt_over(view, ctx, prompt)
        if over <= 0:
            return view
        report = ctx.measured()
        messages: list[BaseMessage] = list(view.get("messages") or ())
        count = ctx.session.cache.count_of
        calibration = max(report.calibration, 1e-6)
        memo = ctx.session.scratch.setdefault(_CEILING_MEMO, {})
        fit = fit_prompt(messages, over, count, ctx.counter, memo=memo)
        bare = (
            [_without_lines(m) for m in messages if not _is_kept_block(m)] if fit.over > 0 else []
        )
        if bare and (
            len(bare) != len(messages)
            or any(a is not b for a, b in zip(bare, messages, strict=False))
        ):
            # Last, the recall lines kept for the prompt cache (a kept block, the lines
            # at the head of earlier user messages): given up rather than refuse a
            # call recall off would make.
            view = view.replace(messages=bare)
            ctx.record("recall_skipped", RecallSkipped(reason="kept lines gave way", budget=0))
            sent, over = prompt_over(view, ctx, prompt)
            if over <= 0:
                return view
            messages = bare
            fit = fit_prompt(messages, over, count, ctx.counter, memo=memo)
        if fit.over > 0:
            raise BudgetExceededError(
                sent,
                report.prompt_limit,
                f"on node {ctx.node!r}, the prompt stays {math.ceil(fit.over * calibration)} "
                "tokens over its limit with every unpinned message left out or cut to its "
                "header: the system prompt, tools and pinned messages (the task, pinned "
                "messages and their tool exchanges) alone are too large",
            )
        after = sent - math.floor(calibration * (fit.tokens_before - fit.tokens_after))
        report = ctx.adjust_usage("messages", math.ceil((after - report.total) / calibration))
        ctx.record(
            "ceiling_enforced",
            CeilingChecked(
                scope="prompt",  # this call's prompt only: the history keeps every original
                **fit.as_dict(),
                total_after=report.total,
                prompt_limit=report.prompt_limit,
            ),
        )
        return view.replace(messages=fit.messages)

    def _without_recall(self, view: View, ctx: CallContext) -> View:
        """``view`` without this call's recall blocks, and ``ctx.tools`` without
        ``glimpse`` (recall's tool), each re-measured; recorded if either was there."""
        messages: list[BaseMessage] = list(view.get("messages") or ())
        blocks = [m for m in messages if is_recall_block(m)]
        glimpse = [t for t in ctx.tools if _tool_name(t) == GLIMPSE]
        if not blocks and not glimpse:
            return view
        count = ctx.session.cache.count_of
        if blocks:
            ctx.adjust_usage("auxiliary", -sum(count(m) for m in blocks))
            view = view.replace(messages=[m for m in messages if not is_recall_block(m)])
        if glimpse:
            ctx.adjust_usage("tools", -sum(self._tool(t, ctx) for t in glimpse))
            ctx.tools = [t for t in ctx.tools if _tool_name(t) != GLIMPSE]
        ctx.record("recall_skipped", RecallSkipped(reason="gave way at the prompt limit", budget=0))
        return view

    def repair(self, view: View, ctx: CallContext, *, unchanged: int = 0) -> View:
        """The view with its tool pairs made whole, as a provider requires.

        A history handed to us broken (a result with no call, a call with no
        result, a result before its call, an id reused every turn) would be
        rejected by OpenAI-style APIs. The repair is ephemeral, in the view:
        the checkpointed state keeps what the user wrote. Recorded in the ledger.

        Only what follows the last turn found whole is looked at: ``unchanged``
        leading messages are the same as last call's (the token cache knows),
        and a whole history has no call left open where a user turn starts, so
        the check costs O(new messages), not O(history).
        """
        messages: list[BaseMessage] = list(view.get("messages") or ())
        scratch = ctx.session.scratch
        # Back to a turn start: a change inside a turn may have opened one of its calls.
        start = _turn_start(messages, min(scratch.get(_WHOLE_UPTO, 0), unchanged))
        tail = messages[start:]
        repaired, repair = repair_pairs(tail)
        if not repair:
            scratch[_WHOLE_UPTO] = _turn_start(messages, len(messages) - 1)
            return view
        scratch[_WHOLE_UPTO] = start  # a broken stretch stays in the state: look again next call
        ctx.record(
            "tool_pairs_repaired",
            ToolPairsRepaired(
                moved=repair.moved, orphans=repair.orphans, placeholders=repair.placeholders
            ),
        )
        return view.replace(messages=[*messages[:start], *repaired])

    def after(self, view: View, result: Any, ctx: CallContext) -> Any:
        self.observe(result, ctx)
        return result

    def check(self, view: View, ctx: CallContext, *, history: int | None = None) -> UsageReport:
        """Measure ``view``, write ``ctx.usage`` and record the utilization.
        ``history``: the tokens of its messages, if already counted."""
        raw = self.count(view, ctx, history=history)
        calibration = ctx.session.calibration
        used: dict[Component, int] = {c: calibration.apply(n) for c, n in raw.items()}
        report = measure(
            ctx.budget, used, calibration=calibration.ratio, raw_total=sum(raw.values())
        )
        ctx.usage = report
        ctx.usage_entry = ctx.record(
            "utilization",
            UtilizationMeasured(
                **report.as_dict(),
                messages_count=len(view.get("messages") or ()),
                calibration_samples=calibration.samples,
                # What is finally sent; compression lowers it when it runs.
                sent_utilization=round(report.utilization, 4),
            ),
        )
        return report

    def count(
        self, view: View, ctx: CallContext, *, history: int | None = None
    ) -> dict[Component, int]:
        """Raw token counts per component (before calibration). ``history``: the
        tokens of the view's messages, if already counted."""
        messages: list[BaseMessage] = view.get("messages") or []
        session = ctx.session
        with session.lock:
            if history is None:
                history = session.cache.total(messages)
            in_state = sum(session.cache.count_of(m) for m in _leading_system(messages))
        prompt = self._prompt(ctx) if ctx.system_prompt else 0
        tools = sum(self._tool(t, ctx) for t in ctx.tools)
        # The thought messages the node sends, not every thought in state:
        # counting text that is not sent taught calibration a ratio under 1, and
        # the next prompt was measured short.
        if ctx.node == "think":
            shown = think_notes(ctx.state)
        else:
            carried = thought_message(ctx.state)
            shown = [] if carried is None else [carried]
        aux = sum(ctx.counter.count_message(m) for m in shown)
        artifacts = view.get("artifacts")
        if artifacts:
            aux += ctx.counter.count_text(json.dumps(artifacts, default=str))
        return {
            # A layer's standing addition (a kept recall block) joins the system
            # message: counted there, so that compression makes room for it.
            "system": in_state + prompt + sum(session.reserved.values()),
            "messages": history - in_state,
            "tools": tools,
            "auxiliary": aux,
        }

    def observe(self, result: Any, ctx: CallContext) -> None:
        """Complete this call's utilization entry with what was finally sent and
        what the provider counted, and learn calibration from that count."""
        # What was sent, not what pre-flight first measured: compression and
        # recall re-measure (ctx.adjust_usage) when they change the prompt.
        report, entry = ctx.measured(), ctx.usage_entry
        if entry is not None:
            entry["data"]["sent_utilization"] = round(report.utilization, 4)
        for message in _ai_messages(result):
            usage = message.usage_metadata
            if usage and usage.get("input_tokens"):
                calibration = ctx.session.calibration
                calibration.observe(report.raw_total, usage["input_tokens"])
                if entry is not None:
                    entry["data"]["actual_input"] = usage["input_tokens"]
                    entry["data"]["output_tokens"] = usage.get("output_tokens", 0)
                    # What the next call starts from, whichever process serves it.
                    entry["data"]["calibration_next"] = calibration.ratio
                    entry["data"]["calibration_samples_next"] = calibration.samples
                return

    def _prompt(self, ctx: CallContext) -> int:
        prompt = ctx.system_prompt or ""
        if prompt not in self._prompt_tokens:
            _bound(self._prompt_tokens)
            # As the node sends it: a system message of its own (the overhead included).
            self._prompt_tokens[prompt] = ctx.counter.count_message(SystemMessage(prompt))
        return self._prompt_tokens[prompt]

    def _tool(self, tool: Any, ctx: CallContext) -> int:
        name = tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", "")
        key = (str(name), id(tool))
        if key not in self._tool_tokens:
            _bound(self._tool_tokens)
            self._tool_tokens[key] = ctx.counter.count_tool(tool)
        return self._tool_tokens[key]


def prompt_over(view: View, ctx: CallContext, prompt: int) -> tuple[int, int]:
    """What the prompt ``view`` makes would send (calibrated tokens) and how many raw
    tokens that is over the prompt limit (<= 0: within it; ``sent`` is then 0 if the
    report alone showed it). ``prompt``: raw tokens of ``ctx.system_prompt`` sent as
    its own message. Pre-flight's guard fits by it, and so does
    :class:`~langgraph_ctx.strategies.registry.NoStrategy` with recall on, which must
    cut exactly where the guard cuts with recall off."""
    report = ctx.measured()
    # Never trusted under our own count: a ratio under 1 may be a miscount of
    # ours (text measured but not sent, a placement's merge), not the provider's
    # tokenizer, and applied to an exact count it lets a prompt over the limit.
    # Our count is a bound either way: it costs a provider that bills fewer
    # tokens a few of its room, never a prompt over the limit.
    measured = max(report.total, report.raw_total)
    if measured + max(MIN_SLACK, SLACK_SHARE * report.prompt_limit) <= report.prompt_limit:
        return 0, measured - report.prompt_limit
    messages: list[BaseMessage] = list(view.get("messages") or ())
    count = ctx.session.cache.count_of
    # Recall's block stands among the messages but is reported as auxiliary:
    # counted here too, it was counted twice, and the ceiling left out a block
    # that fitted, then reported the prompt it had not sent, which taught
    # calibration a ratio far under 1 (later calls went over their budget).
    apart = sum(count(m) for m in messages if is_recall_block(m))
    raw = sum(count(m) for m in messages) + prompt - apart
    used = report.used
    sent = (
        report.total
        - used.get("system", 0)
        - used.get("messages", 0)
        + ctx.session.calibration.apply(raw)
    )
    calibration = max(report.calibration, 1e-6)
    # Under 1, back to our own count, as above: ``over`` in raw tokens.
    bound = sent if calibration >= 1 else math.ceil(sent / calibration)
    return sent, math.ceil((bound - report.prompt_limit) / max(calibration, 1.0))


SLACK_SHARE = 0.02
MIN_SLACK = 32
"""How far under the prompt limit the report must be for the ceiling to trust it
without counting what is sent: a share of the limit, at least this many tokens.
The built-ins report exactly; what a user's layer leaves unmeasured is a few
tokens a message it reshapes."""

_CEILING_MEMO = "preflight.ceiling_memo"
"""Session scratch key: the ceiling's reductions, for the next call (memory only)."""
_WHOLE_UPTO = "preflight.pairs_whole_upto"
"""Session scratch key: the history before this index was found whole (a turn start)."""


def _turn_start(messages: list[BaseMessage], index: int) -> int:
    """The start of the turn holding ``messages[index]`` (0 if none starts before it)."""
    for i in range(min(index, len(messages) - 1), 0, -1):
        if messages[i].type == "human":
            return i
    return 0


MEMO_SIZE = 1_024
"""Most prompts and tool schemas whose counts pre-flight keeps (per instance)."""


def _bound(memo: dict[Any, int]) -> None:
    # Shared by every session: a system prompt made per user, or tools built per
    # call, must not grow it without end. Starting over costs a recount.
    if len(memo) >= MEMO_SIZE:
        memo.clear()


def _is_kept_block(m: BaseMessage) -> bool:
    """``recall_refresh="compression"``'s block: stable context marked as recall's."""
    marks = m.additional_kwargs.get(KEY)
    return m.type == "system" and isinstance(marks, dict) and "recall" in marks


def _without_lines(m: BaseMessage) -> BaseMessage:
    """A user message without the recall lines ``"delta"`` placed at its head."""
    if m.type != "human":
        return m
    content = m.content
    if isinstance(content, str):
        if not content.startswith(RECALL_PREFIX) or "\n\n" not in content:
            return m
        return m.model_copy(update={"content": content.split("\n\n", 1)[1]})
    first = content[0] if content else None
    text = first.get("text", "") if isinstance(first, dict) else first
    if not (isinstance(text, str) and text.startswith(RECALL_PREFIX)):
        return m
    return m.model_copy(update={"content": list(content[1:])})


def _tool_name(tool: Any) -> str:
    return str(tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", ""))


def _leading_system(messages: list[BaseMessage]) -> Iterator[BaseMessage]:
    for m in messages:
        if m.type != "system" or is_summary(m):
            return
        yield m


def _ai_messages(result: Any) -> Iterator[AIMessage]:
    if isinstance(result, AIMessage):
        yield result
    elif isinstance(result, Command):
        yield from _ai_messages(result.update)
    elif isinstance(result, dict):
        yield from _ai_messages(result.get("messages"))
    elif isinstance(result, (list, tuple)):
        for item in result:
            yield from _ai_messages(item)
