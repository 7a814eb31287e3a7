"""BACM: the agent sees its budget before each observation and folds its past steps.

Before a model call, in order (see :mod:`langgraph_ctx.strategies.bacm.policy` for
blocks, the budget state and the fold action):

1. **The agent's fold.** If the agent's last message called ``fold``
   (:func:`~langgraph_ctx.strategies.fold_tool`), the fold is applied now,
   before the observations of the same step are shown: through the edit core
   (originals archived first, tool pairs whole, pinned messages untouched),
   and the tool's answer is rewritten to say what was folded, or why nothing
   was (an unknown id, the current step, an empty ``merged``).
2. **The policy's fold.** When the prompt with the pending observation would
   reach ``decide_at`` of the red line, the policy (the offline rule, or a chat
   model through structured output) is given the budget state and the blocks,
   without the observation's text, and its fold is applied the same way, to
   bring the prompt to ``target`` of the red line.
3. **The guard.** If the prompt is still at or over the red line, tiered
   compression runs (:class:`TieredCompression`, with its hard ceiling), and
   ``fold_guard`` in the ledger says so with the numbers: the budget is never
   exceeded silently.
4. **What the model sees** (ephemeral: the checkpoint never has it): each
   block's first message starts with ``[step cXXXXX]``, and the last pending
   observation (else a last user turn) ends with the budget line
   ``b_t = (used, remaining, pending)``, in a content block of its own. The tags
   are the same bytes on every call; the line is the one thing the next call
   sends otherwise, so it closes the message: the blocks before it are what the
   next call sends, and a cache that keys on block boundaries (Anthropic's)
   finds them there (the message is marked
   :data:`~langgraph_ctx.markers.PER_CALL_TAIL`, and an Anthropic prompt gets a
   breakpoint on the block before the line). In front of the observation, the
   line changed the message's first block, and Anthropic's rule served little
   more than the system block (see benchmarks/RESULTS.md). With
   ``budget_line="before"`` (``preset="paper"``) the line opens the first pending
   observation instead: the agent reads ``b_t`` before what it is about to load,
   as the paper shows it.

Ledger: ``fold`` for every decision (``by``: agent or policy; ``kind``: null,
partial, full or refused; the commit ids and the budget state), with the
edit core's ``context_edit``; ``fold_failed`` when the policy raised or timed
out; ``fold_guard`` when the guard ran.

Cost per call: a pass over the active history (held to the budget by the
folds), and the policy only near the line.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import ValidationError

from langgraph_ctx._checks import (
    check_has,
    check_instance,
    check_int,
    check_number,
    check_timeout,
)
from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.apply import consult
from langgraph_ctx.edits.core import EditOp, is_edited
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.strategies import (
    FoldApplied,
    FoldApplyRefused,
    FoldFailed,
    FoldGuard,
    FoldRefused,
)
from langgraph_ctx.markers import KEY, PER_CALL_HEAD, PER_CALL_TAIL
from langgraph_ctx.pipeline import CallContext, Hook, View
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.bacm import policy as bacm
from langgraph_ctx.strategies.bacm.offline import OfflineFoldPolicy
from langgraph_ctx.strategies.base import RewritingStrategy
from langgraph_ctx.strategies.recall_room import recall_share
from langgraph_ctx.strategies.tiered.middleware import TieredCompression


class BudgetAwareFolding(RewritingStrategy):
    """Shows the agent its budget state and folds its past steps to keep it."""

    name = "bacm"
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "default": {},
        # The paper shows b_t before the pending observation is loaded (its policy
        # reads the steps it folds whole, as ours does by default).
        "paper": {"budget_line": "before"},
    }

    def __init__(
        self,
        *,
        policy: bacm.FoldPolicy | BaseChatModel | None = None,
        archive: MessageArchive | None = None,
        decide_at: float | None = 0.9,
        target: float = 0.6,
        guard: TieredCompression | None = None,
        show_budget: bool = True,
        pin_task: bool = True,
        timeout: float | None = 30.0,
        budget_line: Literal["end", "before"] = "end",
        preview_chars: int | None = None,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            policy: a chat model (asked for a fold through structured output), a
                policy with ``decide``/``adecide``, or ``None`` for the offline rule.
            archive: where folded originals go (the guard's too). Default: in-process.
            decide_at: consult the policy when used + pending reaches this share
                of the red line; ``None``: never (the agent folds alone, the
                guard stays).
            target: a policy's fold brings used + pending to this share of it.
            guard: the compression that runs when the prompt is still over the
                red line. Default: :class:`TieredCompression` on ``archive``.
            show_budget: tag the blocks and show the budget line to the model.
            pin_task: the session's first user message is pinned.
            timeout: seconds the policy may take; past them, no fold.
            budget_line: where the budget line goes: ``"end"``, a last content block
                of the last pending observation (what follows it is the next call's
                cacheable prefix); ``"before"``, a first one of the first pending
                observation, read before it (the paper's order).
            preview_chars: characters of each step a chat-model policy is shown, a
                cut marked where it cuts; ``None``: every step whole (what its fold
                replaces), over several calls when they are larger than the policy's
                room (``ChatModelFoldPolicy(room=...)``).
        """
        super().__init__(archive=archive, pin_task=pin_task, **kwargs)
        if decide_at is not None and not 0.0 < check_number("decide_at", decide_at) <= 1.0:
            raise ConfigurationError("decide_at", f"must be in (0, 1] or None, got {decide_at}")
        if not 0.0 < check_number("target", target) <= (decide_at or 1.0):
            raise ConfigurationError(
                "target", f"must be in (0, decide_at], got {target} (decide_at={decide_at})"
            )
        timeout = check_timeout("timeout", timeout)
        if policy is not None and not isinstance(policy, BaseChatModel):
            check_has("policy", policy, ("decide", "adecide"), "a chat model or a FoldPolicy")
        if guard is not None:
            check_instance("guard", guard, TieredCompression, "a TieredCompression")
        if isinstance(policy, BaseChatModel):
            policy = bacm.ChatModelFoldPolicy(policy)
        self.policy: bacm.FoldPolicy = policy if policy is not None else OfflineFoldPolicy()
        self.guard = guard or TieredCompression(archive=self.archive, prepare_ahead=False)
        self.decide_at = decide_at
        self.target = target
        self.show_budget = show_budget
        if budget_line not in ("end", "before"):
            raise ConfigurationError(
                "budget_line", f"must be 'end' or 'before', got {budget_line!r}"
            )
        self.budget_line = budget_line
        if preview_chars is not None:
            check_int("preview_chars", preview_chars, least=1)
        self.preview_chars = preview_chars
        self.timeout = timeout
        self.tools = (bacm.fold_tool(),)
        """Tools the agent needs bound: ``fold``."""

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        view = yield from self._agent_fold(view, ctx)
        view = yield from self._policy_fold(view, ctx)
        if not self.show_budget:
            return (yield from self._guard(view, ctx))
        # Counted before the guard looks, since what is sent includes it; the line
        # itself shows the prompt without it, as pre-flight measured it.
        cost = self._display_cost(view, ctx)
        before = ctx.measured().total
        shown = ctx.adjust_usage("messages", cost).total - before
        view = yield from self._guard(view, ctx)
        tagged = self._shown(view, ctx, shown)
        # The cost was a bound (the widest numbers, the blocks before the guard):
        # what is sent is counted, since the prompt ceiling trusts the report.
        ctx.adjust_usage("messages", _added(view, tagged, ctx) - cost)
        return tagged

    def budget_state(self, messages: Sequence[BaseMessage], ctx: CallContext) -> bacm.BudgetState:
        """``b_t`` of ``messages`` from pre-flight's report: used + pending is its total."""
        report = ctx.measured()
        raw = sum(ctx.session.cache.count_of(m) for m in _pending(messages))
        pending = min(report.total, math.ceil(raw * report.calibration))
        return bacm.BudgetState(
            used=report.total - pending, pending=pending, limit=ctx.budget.red_line
        )

    # -- the steps -------------------------------------------------------------

    def _agent_fold(self, view: View, ctx: CallContext) -> Hook[View]:
        messages: list[BaseMessage] = list(view.get("messages") or ())
        found = _fold_request(messages)
        if found is None:
            return view
        call, acks = found
        blocks = self._blocks(messages, ctx)
        state = self.budget_state(messages, ctx)
        current = _current(blocks, messages)
        try:
            action = _parse(call.get("args"))
            ops, ids = bacm.fold_ops(action, blocks, current, by="agent")
            kind: str = bacm.fold_kind(action)
            outcome = (
                f"Folded steps {', '.join(ids)} into one block; the originals are archived."
                if ids
                else "Nothing folded (NONE)."
            )
        except bacm.FoldRefused as exc:
            ops, ids, kind = [], [], "refused"
            outcome = f"Fold refused: {exc}. Nothing was changed."
        ops.append(EditOp((str(acks[0].id),), None, "the fold's outcome", outcome))
        for extra in acks[1:]:
            why = "Fold refused: one fold per step; the first one was applied."
            ops.append(EditOp((str(extra.id),), None, "the fold's outcome", why))
        about = FoldApplied(by="agent", kind=kind, commits=ids, **state.as_dict())
        ctx.record(
            "fold", FoldApplyRefused(**about, reason=outcome) if kind == "refused" else about
        )
        edited, plan = yield from self.edit(view, ctx, ops)
        return view if plan is None else edited

    def _policy_fold(self, view: View, ctx: CallContext) -> Hook[View]:
        messages: list[BaseMessage] = list(view.get("messages") or ())
        state = self.budget_state(messages, ctx)
        # Recall's blocks kept from earlier calls (reserved, counted as system) give
        # way to the history when both do not fit, and recall refills whatever room a
        # fold makes: counted here, each fold's room went to recall and the next call
        # folded again, until the history the answers were in was folded away.
        # So does the glimpse tool's schema recall binds (see recall_share).
        state = dataclasses.replace(state, used=max(0, state.used - recall_share(ctx)))
        if self.decide_at is None or state.used + state.pending < self.decide_at * state.limit:
            return view
        blocks = self._blocks(messages, ctx)
        calibration = max(ctx.measured().calibration, 1e-6)
        excess = state.used + state.pending - self.target * state.limit
        request = bacm.FoldRequest(
            blocks=blocks,
            current=_current(blocks, messages),
            state=state,
            excess=max(0, math.ceil(excess / calibration)),
            task=next((m for m in messages if m.type == "human"), None),
            preview_chars=self.preview_chars,
        )
        answer, failed = yield from consult(
            partial(self.policy.decide, request),
            partial(self.policy.adecide, request),
            timeout=self.timeout,
        )
        if failed is not None:
            ctx.record("fold_failed", FoldFailed(**failed))
            return view
        try:
            action = _parse(answer)
            ops, ids = bacm.fold_ops(action, blocks, request.current, by="policy")
        except bacm.FoldRefused as exc:
            ctx.record("fold", FoldRefused(by="policy", kind="refused", reason=str(exc)))
            return view
        kind = bacm.fold_kind(action)
        ctx.record("fold", FoldApplied(by="policy", kind=kind, commits=ids, **state.as_dict()))
        if not ops:
            return view
        edited, plan = yield from self.edit(view, ctx, ops)
        return view if plan is None else edited

    def _guard(self, view: View, ctx: CallContext) -> Hook[View]:
        # Recall's kept blocks give way at placement when the prompt would pass the
        # red line with them (as in _policy_fold): counted here, a history that fit
        # was compressed for them, on every think call, BACM's fold digests and the
        # tool results the question needed with it (tau-bench 4K: 16 kept off, 9 on).
        if ctx.measured().total - recall_share(ctx) < ctx.budget.red_line:
            return view
        state = self.budget_state(list(view.get("messages") or ()), ctx)
        ctx.record("fold_guard", FoldGuard(**state.as_dict(), fallback="TieredCompression"))
        return (yield from self.guard.before(view, ctx))

    def _shown(self, view: View, ctx: CallContext, display: int) -> View:
        """Block ids on each block's first message, the budget line before the observation.
        ``display``: what they add to the report's total, left out of the line."""
        messages: list[BaseMessage] = list(view.get("messages") or ())
        if not messages:
            return view
        state = self.budget_state(messages, ctx)
        state = dataclasses.replace(state, used=state.used - display)
        tags = {str(b.messages[0].id): b.id for b in self._blocks(messages, ctx)}
        out = [
            _prefixed(m, f"[step {tags[str(m.id)]}]") if str(m.id) in tags else m for m in messages
        ]
        at = _line_at(messages, first=self.budget_line == "before")
        if at is not None and self.budget_line == "before":
            out[at] = _line_first(out[at], state.line())
        elif at is not None:
            out[at] = _with_line(out[at], state.line())
        return view.replace(messages=out)

    def _display_cost(self, view: View, ctx: CallContext) -> int:
        """Raw tokens :meth:`_shown` adds: the budget line and one tag per block."""
        messages: list[BaseMessage] = list(view.get("messages") or ())
        if not messages:
            return 0
        line = bacm.BudgetState(used=10**6, pending=10**6, limit=10**6).line()  # widest numbers
        tags = len(self._blocks(messages, ctx)) * ctx.counter.count_text("[step c00000]\n")
        return tags + (ctx.counter.count_text(line) if _line_at(messages) is not None else 0)

    def _blocks(self, messages: Sequence[BaseMessage], ctx: CallContext) -> list[bacm.CommitBlock]:
        return bacm.commit_blocks(messages, ctx.session.cache.count_of, pin_task=self.pin_task)


def _added(view: View, shown: View, ctx: CallContext) -> int:
    """Raw tokens the tags and the budget line add: the messages they changed, counted
    (cached by content: a block's tag is the same bytes on every call)."""
    before: list[BaseMessage] = list(view.get("messages") or ())
    after: list[BaseMessage] = list(shown.get("messages") or ())
    count = ctx.session.cache.count_of
    return sum(
        count(new) - count(old) for old, new in zip(before, after, strict=True) if new is not old
    )


def _last_ai(messages: Sequence[BaseMessage]) -> int:
    """The agent's last message (a plan note of the think node is not one)."""
    found = (i for i, m in enumerate(messages) if isinstance(m, AIMessage) and not is_note(m))
    return max(found, default=-1)


def _pending(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What the agent has not seen: tool results (not fold's) and user turns after its
    last message. The task, pinned, is never pending."""
    last = _last_ai(messages)
    calls = messages[last].tool_calls if last >= 0 else []  # type: ignore[attr-defined]
    folds = {c["id"] for c in calls if c["name"] == bacm.FOLD_TOOL}
    first_human = next((m for m in messages if m.type == "human"), None)
    return [
        m
        for m in messages[last + 1 :]
        if (isinstance(m, ToolMessage) and m.tool_call_id not in folds)
        or (m.type == "human" and m is not first_human)
    ]


def _line_at(messages: Sequence[BaseMessage], *, first: bool = False) -> int | None:
    """Where the budget line goes: the last pending message (the first if ``first``),
    else a last user turn or result."""
    pending = _pending(messages)
    at = messages.index(pending[0 if first else -1]) if pending else len(messages) - 1
    return at if messages[at].type in ("tool", "human") else None


def _current(blocks: Sequence[bacm.CommitBlock], messages: Sequence[BaseMessage]) -> frozenset[str]:
    """The blocks never folded now: the agent's last step, what came after it, and the
    current turn's question (the last user message). The question is asked before
    the agent's steps that answer it; folded into a digest with them, it left the
    end of the prompt, and the model, seeing the task last, did the task again."""
    last = _last_ai(messages)
    later = {id(m) for m in messages[max(last, 0) :]} if last >= 0 else {id(m) for m in messages}
    question = next((m for m in reversed(messages) if m.type == "human"), None)
    if question is not None:
        later.add(id(question))
    return frozenset(b.id for b in blocks if id(b.messages[0]) in later)


def _fold_request(
    messages: Sequence[BaseMessage],
) -> tuple[dict[str, Any], list[ToolMessage]] | None:
    """The agent's last fold call and the answers to its fold calls, if not yet applied."""
    last = _last_ai(messages)
    if last < 0:
        return None
    calls = [c for c in messages[last].tool_calls if c["name"] == bacm.FOLD_TOOL]  # type: ignore[attr-defined]
    answers = {m.tool_call_id: m for m in messages[last + 1 :] if isinstance(m, ToolMessage)}
    acks = [answers[c["id"]] for c in calls if c["id"] in answers]
    if not acks or is_edited(acks[0]) or acks[0].status == "error":
        return None  # already applied, or the tool itself refused it
    first = next(c for c in calls if answers.get(c["id"]) is acks[0])
    return dict(first), acks


def _parse(value: Any) -> bacm.FoldAction:
    if isinstance(value, bacm.FoldAction):
        return value
    try:
        return bacm.FoldAction.model_validate(value)
    except ValidationError as exc:
        raise bacm.FoldRefused(
            'commit_ids must be "NONE", "ALL" or a list of step ids, and merged a text'
        ) from exc


def _with_line(message: BaseMessage, line: str) -> BaseMessage:
    """``message`` with the budget line as a last content block of its own, marked so
    that a cache breakpoint goes on the block before it (see the module)."""
    content = message.content
    blocks: list[Any] = (
        ([{"type": "text", "text": content}] if content else [])
        if isinstance(content, str)
        else list(content)
    )
    marks = {**(message.additional_kwargs.get(KEY) or {}), PER_CALL_TAIL: True}
    return message.model_copy(
        update={
            "content": [*blocks, {"type": "text", "text": line}],
            "additional_kwargs": {**message.additional_kwargs, KEY: marks},
        }
    )


def _line_first(message: BaseMessage, line: str) -> BaseMessage:
    """``message`` with the budget line as a first content block of its own: read
    before the observation, and marked so that recall's query leaves it out. No
    cache breakpoint goes before it, as none is of use: the message differs from
    the next call's from its first block."""
    content = message.content
    blocks: list[Any] = (
        ([{"type": "text", "text": content}] if content else [])
        if isinstance(content, str)
        else list(content)
    )
    marks = {**(message.additional_kwargs.get(KEY) or {}), PER_CALL_HEAD: True}
    return message.model_copy(
        update={
            "content": [{"type": "text", "text": line}, *blocks],
            "additional_kwargs": {**message.additional_kwargs, KEY: marks},
        }
    )


def _prefixed(message: BaseMessage, text: str) -> BaseMessage:
    content = message.content
    if isinstance(content, str):
        new: Any = f"{text}\n{content}" if content else text
    else:
        new = [{"type": "text", "text": text}, *content]
    return message.model_copy(update={"content": new})
