"""AdaCoM: an external manager edits the agent's context before its call.

Before the agent's call, when a trigger fires, a manager (any LangChain chat
model through :class:`~langgraph_ctx.strategies.ChatModelManager`, or a
deterministic policy such as :class:`~langgraph_ctx.strategies.OfflinePolicy`)
gets the context as an ordered list with ids and roles, a background paragraph
you set, and returns edit operations; the edit core
(:func:`~langgraph_ctx.edits.apply.apply_edits`) applies them with its guarantees:
originals archived first, tool pairs whole, pinned messages and the working
note safe, all or nothing.

Triggers (the paper runs the manager on every step, ``preset="paper"``: ``every=1``;
its limitations section proposes the first two to cut that cost):

- every ``every`` rounds (calls of this node);
- pre-flight's utilization at or above ``utilization``;
- always, a new tool result over ``extract_threshold`` tokens (the paper's
  extract: keep what the task needs before the agent reads it).

The working note is one pinned message right after the task, which the
manager maintains (rewrites); it is added, with a placeholder text, the first
time the manager changes anything. A manager that raises, times out or answers
an invalid action leaves the context as it was, the reason in the ledger
(``manager_failed``, ``edit_rejected``), and the agent's call goes on.

Ledger: one entry per manager call: ``context_edit`` (what changed, with each
operation's rationale), ``manager_unchanged``, ``edit_rejected`` or
``manager_failed``; each carries the round and the triggers.

The round count is checkpointed (``state["session"]["adacom:rounds"]``) when the
graph's state has a ``session`` key, as ``ContextState`` does, so a restarted
process, or another one serving the thread's next run, keeps the schedule.
Without one it lives in the process's memory: after a restart it starts again at
0 (the next scheduled call at most ``every`` rounds late), and each process
counts its own. The utilization and extract triggers read the state.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_ctx._checks import (
    check_bool,
    check_has,
    check_int,
    check_number,
    check_str,
    check_timeout,
)
from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.apply import consult
from langgraph_ctx.edits.core import is_edited, is_working_note, note, protected_ids
from langgraph_ctx.edits.ops import EditRejected, parse_ops
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.parts import EditNote
from langgraph_ctx.ledger.strategies import ManagerFailed, ManagerUnchanged
from langgraph_ctx.markers import pin
from langgraph_ctx.pipeline import CallContext, Hook, View
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies.adacom.offline import OfflinePolicy
from langgraph_ctx.strategies.adacom.policy import (
    NOTE_TITLE,
    ChatModelManager,
    ContextManagerPolicy,
    ManagerRequest,
    marked_note,
    marked_rewrite,
)
from langgraph_ctx.strategies.base import RewritingStrategy
from langgraph_ctx.strategies.recall_room import recall_share

NOTE_ID = "lgctx-working-note"
"""The id of the working note until the manager first rewrites it."""
NOTE_PLACEHOLDER = marked_note(f"{NOTE_TITLE}\n(nothing recorded yet)")


class AdaptiveContextManager(RewritingStrategy):
    """Runs an AdaCoM manager before the agent's call and applies its edits."""

    name = "adacom"
    default_nodes = ("call_llm",)
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "default": {},
        # The paper's manager runs before every step and extracts what the task
        # needs (every message is read whole under both).
        "paper": {"every": 1, "extract_for_task": True},
    }

    def __init__(
        self,
        *,
        manager: ContextManagerPolicy | BaseChatModel | None = None,
        archive: MessageArchive | None = None,
        every: int | None = 3,
        utilization: float | None = 0.7,
        target_utilization: float = 0.75,
        extract_threshold: int | None = 2_000,
        extract_tokens: int = 500,
        background: str = "",
        timeout: float | None = 30.0,
        preview_chars: int | None = None,
        extract_for_task: bool = False,
        pin_task: bool = True,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            manager: a chat model (asked through structured output), a policy
                with ``propose``/``apropose``, or ``None`` for the offline policy.
            archive: where edited and deleted originals go. Default: in-process.
            every: run every this many rounds; ``None``: never on a schedule.
            utilization: run when pre-flight's utilization reaches it; ``None``: never.
            target_utilization: where a manager under pressure should bring it back
                to, as a share of ``utilization`` (the request's ``excess_tokens``):
                well under the trigger, so the next run is not the next call.
            extract_threshold: a new tool result over this many tokens always
                triggers the manager, which is asked to extract it; ``None``: off.
            extract_tokens: about how large an extraction should be.
            background: a paragraph added to the manager's instructions (what
                the agent is for, what matters in its results).
            timeout: seconds the manager may take; past them the context stays.
            preview_chars: characters of each message a model manager is shown (and
                of each tool call's arguments, 200), a cut marked where it cuts;
                ``None``: every message whole, as the paper's manager reads them (it
                writes what replaces them), over several calls when the context is
                larger than the manager's room (``ChatModelManager(room=...)``).
            extract_for_task: the offline policy's extraction of an oversized
                result keeps first its lines that share terms with the task and the
                working note (the paper's extract: what the task needs), then a
                digest of the rest; ``False``: a digest of the result alone.
            pin_task: the session's first user message is pinned.
        """
        super().__init__(archive=archive, pin_task=pin_task, **kwargs)
        # Each checked where it is written (a string or a bool would fail, or be
        # taken for a number, only once the graph runs), named as the argument.
        if manager is not None and not isinstance(manager, BaseChatModel):
            check_has("manager", manager, ("propose", "apropose"), "a chat model or a policy")
        for label, value in (("every", every), ("extract_threshold", extract_threshold)):
            if value is not None:
                check_int(label, value, least=1)
        if utilization is not None:
            check_number("utilization", utilization, above=0.0)
            if utilization > 1.0:
                raise ConfigurationError(
                    "utilization", f"must be in (0, 1] or None, got {utilization}"
                )
        check_number("target_utilization", target_utilization, above=0.0)
        if target_utilization > 1.0:
            raise ConfigurationError(
                "target_utilization", f"must be in (0, 1], got {target_utilization}"
            )
        if isinstance(manager, BaseChatModel):
            manager = ChatModelManager(manager)
        self.manager: ContextManagerPolicy = manager if manager is not None else OfflinePolicy()
        self.every = every
        self.utilization = utilization
        self.target_utilization = target_utilization
        self.extract_threshold = extract_threshold
        self.extract_tokens = check_int("extract_tokens", extract_tokens, least=20)
        self.background = check_str("background", background, empty=True)
        self.timeout = check_timeout("timeout", timeout)
        if preview_chars is not None:
            check_int("preview_chars", preview_chars, least=1)
        self.preview_chars = preview_chars
        self.extract_for_task = check_bool("extract_for_task", extract_for_task)

    def _round(self, ctx: CallContext) -> int:
        """This call's round: one more than the thread's last committed call counted
        (checkpointed in ``session`` when the state has it, so that any process
        serving the thread, or one restarted, keeps the schedule), else than this
        process counted."""
        key = f"{self.name}:rounds"
        saved = (ctx.state.get("session") or {}).get(key) if "session" in ctx.channels else None
        rounds = (saved if isinstance(saved, int) else ctx.session.scratch.get(key, 0)) + 1
        ctx.session.scratch[key] = rounds
        if "session" in ctx.channels:
            ctx.persist(self.name, session={key: rounds})
        return rounds

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        messages: list[BaseMessage] = list(view.get("messages") or ())
        rounds = self._round(ctx)
        report = ctx.measured()
        # Recall's blocks kept from earlier calls (reserved, counted as system) are
        # not the history the manager edits: they give way to it when both do not
        # fit, and recall fills whatever room an edit makes. Counted, each edit's room
        # went to recall, the next call found the context as full, and the manager
        # distilled again, until the facts asked about were digested away.
        others = recall_share(ctx)  # as recall off has it: strategies/recall_room.py
        utilization = max(0, report.total - others) / max(report.window, 1)
        oversized = self._oversized(messages, ctx)
        triggers = self._triggers(rounds, utilization, oversized)
        if not triggers:
            return view
        staged = _with_note(messages)
        request = self._request(staged, ctx, triggers, oversized, rounds, utilization, others)
        fired = list(triggers)
        started = time.perf_counter()
        ops, failed = yield from consult(
            partial(self.manager.propose, request),
            partial(self.manager.apropose, request),
            timeout=self.timeout,
        )
        if failed is not None:
            ctx.record("manager_failed", ManagerFailed(round=rounds, triggers=fired, **failed))
            return view
        seconds = round(time.perf_counter() - started, 4)
        about = EditNote(round=rounds, triggers=fired, manager_seconds=seconds)
        if not ops:
            unchanged = ManagerUnchanged(round=rounds, triggers=fired, manager_seconds=seconds)
            ctx.record("manager_unchanged", unchanged)
            return view
        ops = _marked(ops, staged, request.note_id)
        edited, plan = yield from self.edit(view.replace(messages=staged), ctx, ops, about)
        if plan is None:  # rejected, or the archive failed: the view as it came, no note
            return view
        if len(staged) > len(messages):
            # The staged placeholder is sent (or was replaced, and the edit core took
            # its count out): pre-flight never measured it, and the prompt ceiling
            # trusts this report.
            placeholder = next(m for m in staged if is_working_note(m))
            ctx.adjust_usage("messages", ctx.session.cache.count_of(placeholder))
        return edited

    # -- the steps -------------------------------------------------------------

    def _triggers(
        self, rounds: int, utilization: float, oversized: Sequence[str]
    ) -> tuple[str, ...]:
        found = []
        if self.every is not None and rounds % self.every == 0:
            found.append("every_k_rounds")
        if self.utilization is not None and utilization >= self.utilization:
            found.append("utilization")
        if oversized:
            found.append("oversized_result")
        return tuple(found)

    def _oversized(self, messages: Sequence[BaseMessage], ctx: CallContext) -> tuple[str, ...]:
        """Tool results the agent has not read yet (after its last message), over the threshold."""
        if self.extract_threshold is None:
            return ()
        last = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
        count = ctx.session.cache.count_of
        return tuple(
            str(m.id)
            for m in messages[last + 1 :]
            if isinstance(m, ToolMessage)
            and m.id
            and not is_edited(m)
            and count(m) > self.extract_threshold
        )

    def _request(
        self,
        messages: list[BaseMessage],
        ctx: CallContext,
        triggers: tuple[str, ...],
        oversized: tuple[str, ...],
        rounds: int,
        utilization: float,
        others: int = 0,
    ) -> ManagerRequest:
        """``others``: calibrated tokens of the total the manager does not edit (recall's
        kept blocks), left out of its excess as out of its trigger."""
        count = ctx.session.cache.count_of
        note_msg = next(m for m in messages if is_working_note(m))
        report = ctx.measured()
        excess = 0
        if self.utilization is not None:
            # Raw tokens, as the cache counts them: the report is calibrated.
            goal = self.utilization * self.target_utilization * report.window
            total = report.total - others
            excess = max(0, int((total - goal) / max(report.calibration, 1e-6)))
        return ManagerRequest(
            messages=messages,
            tokens={str(m.id): count(m) for m in messages if m.id},
            protected=frozenset(protected_ids(messages, pin_task=self.pin_task) | _asked(messages)),
            task=next((m for m in messages if m.type == "human"), None) if self.pin_task else None,
            note_id=str(note_msg.id),
            triggers=triggers,
            oversized=oversized,
            round=rounds,
            utilization=round(utilization, 4),
            excess_tokens=excess,
            background=self.background,
            extract_tokens=self.extract_tokens,
            preview_chars=self.preview_chars,
            extract_for_task=self.extract_for_task,
        )


def _with_note(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with a working note right after the task (a placeholder if none)."""
    if any(is_working_note(m) for m in messages):
        return messages
    task = next((i for i, m in enumerate(messages) if m.type == "human"), None)
    at = task + 1 if task is not None else sum(1 for m in messages if m.type == "system")
    placeholder = pin(note(HumanMessage(NOTE_PLACEHOLDER, id=NOTE_ID)))
    return [*messages[:at], placeholder, *messages[at:]]


def _marked(ops: Sequence[Any], messages: Sequence[BaseMessage], note_id: str) -> Sequence[Any]:
    """``ops`` with the text a manager writes into the working note, or into a user or
    system message, marked as the context manager's (strategies/managed.py): it copies
    tool output there, which the agent must not read as the user's words. Operations
    of the wrong shape are left as they came, for the edit core to refuse."""
    try:
        parsed = parse_ops(ops)
    except EditRejected:
        return ops
    roles = {str(m.id): m.type for m in messages}
    out = []
    for op in parsed:
        role = op.role or roles.get(op.ids[0], "")
        if note_id in op.ids and op.new_content:
            op = dataclasses.replace(op, new_content=marked_note(op.new_content))
        elif role in ("user", "human", "system") and op.new_content:
            op = dataclasses.replace(op, new_content=marked_rewrite(op.new_content))
        out.append(op)
    return out


def _asked(messages: Sequence[BaseMessage]) -> set[str]:
    """The user's latest message, kept as it is: distilled into a digest mid-turn, the
    agent saw its tool results without the question they answer (and answered the
    task instead)."""
    for m in reversed(messages):
        if m.type == "human" and not is_note(m) and not is_edited(m):
            return {str(m.id)}
    return set()
