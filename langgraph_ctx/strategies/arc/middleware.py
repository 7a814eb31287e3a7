"""ARC: a checklist and an interaction memory kept by a context manager, reorganized
by reflection when the agent stalls.

The history is kept as the actor should see it (paper, section 3.3)::

    system prompt, task, [Checklist], [Interaction memory], the last interaction, raw

Checklist and memory are pinned messages right after the task (rewritable, never
deleted), so they are checkpointed with the history. An interaction is one
agent message and what followed it (its tool results, a user's reply).

Every call of the node, before the actor's model call:

1. the interactions before the last one are **folded** into the memory by the
   manager's incremental update and the checklist updated; their messages
   leave the active history through the edit core (archived first, tool pairs
   whole). The fold **appends** its entry to the memory: the memory before it is
   the new one's prefix, so it is not archived (nothing is lost), and only the
   entry is counted (the memory carries its token count). A fold's work is the
   interaction's, however long the memory has grown. When a stall signal fires
   (:mod:`~langgraph_ctx.strategies.arc.signals`) or the manager flags it,
   **reflection** rewrites memory and checklist together, as a second edit, the
   one step whose cost is the memory's: the memory it replaced is archived under
   its id, and :meth:`ReflectiveContextManager.undo_reflection` puts it back.
   Ledger: ``context_edit`` for each edit (a fold's names the memory it grew),
   ``arc_reflection`` with its triggers;
2. the fold of the last interaction is started **in the background**, while the
   actor's call runs (the paper runs them in parallel); the next call only
   waits for it if it has not finished, at most ``wait`` seconds, and otherwise
   goes on with the previous memory (the unfolded interaction stays raw:
   ``arc_update_late``). Without a job to wait for (the first call after a
   restart: jobs live in memory only) the fold runs synchronously, so a process
   killed mid-update loses nothing but that work.

A manager that raises leaves everything as it was (``arc_update_failed``); the
chat-model manager falls back to the offline one by itself.

The first checklist is written by the manager's model when it has one (the
paper's way), once per session; the offline rule's (the task's goal and
constraint sentences) without a model, when the model fails, or with
``initial_checklist="rule"``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langgraph_ctx._checks import check_bool, check_has, check_int, check_number, check_timeout
from langgraph_ctx.edits import is_note
from langgraph_ctx.edits.core import EditOp, note, protected_ids
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.history import jobs as _prepare
from langgraph_ctx.ledger.parts import EditNote
from langgraph_ctx.ledger.strategies import ArcReflection, ArcUpdateFailed, ArcUpdateLate
from langgraph_ctx.markers import KEY, PARTS, grown_parts, pin
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View
from langgraph_ctx.storage.archive import MessageArchive
from langgraph_ctx.strategies import managed
from langgraph_ctx.strategies.arc import manager as arc
from langgraph_ctx.strategies.arc.model import ChatModelArcManager
from langgraph_ctx.strategies.arc.offline import OfflineArcManager
from langgraph_ctx.strategies.arc.signals import FoldSettings, StallState
from langgraph_ctx.strategies.base import RewritingStrategy

CHECKLIST_ID = "lgctx-arc-checklist"
MEMORY_ID = "lgctx-arc-memory"
_JOB = "arc:job"
"""The session scratch key of the fold under way (memory only)."""


class ReflectiveContextManager(RewritingStrategy):
    """Keeps ARC's checklist and interaction memory; the actor sees the last interaction raw."""

    name = "arc"
    default_nodes = ("call_llm",)
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "default": {},
        # The paper's manager model writes the first checklist from the task (as
        # ours does by default).
        "paper": {"initial_checklist": "manager"},
    }
    requires = ()  # folds every turn, whatever the zone
    protection = "tiers"
    """What is folded is the code's plan (every interaction before the last), not a
    model's choice: an interaction goes whole, the think node's ``[plan]`` trace and
    a later system message with it (archived, like the rest). Under a manager's
    rules those are kept, and every fold of an agent that thinks was refused."""

    def __init__(
        self,
        *,
        manager: arc.ArcManager | BaseChatModel | None = None,
        archive: MessageArchive | None = None,
        in_background: bool = True,
        wait: float = 10.0,
        timeout: float | None = 60.0,
        stall_turns: int = 6,
        memory_tokens: int | None = None,
        memory_share: float = 0.4,
        background: str = "",
        initial_checklist: Literal["rule", "manager"] = "manager",
        pin_task: bool = True,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            manager: a chat model (asked through structured output), an
                :class:`~langgraph_ctx.strategies.ArcManager`, or ``None`` for the
                offline manager.
            archive: where folded interactions and replaced memories go. Default:
                in-process.
            in_background: fold the last interaction while the actor's call runs;
                ``False``: fold it at the start of the next call.
            wait: seconds the next call waits for a background fold still under way.
            timeout: seconds a synchronous fold may take, and the age at which a
                background one is given up and done again; ``None``: no limit.
            stall_turns: updates in a row with no checklist change that trigger
                reflection.
            memory_tokens: the memory's cap (reflection condenses it past it);
                ``None``: ``memory_share`` of the budget's message allocation.
            memory_share: see ``memory_tokens``.
            background: a paragraph added to a chat-model manager's instructions.
            initial_checklist: who writes the first checklist: ``"manager"``, a
                manager with ``plan``/``aplan`` (the chat-model one) asks its model,
                as the paper does, once per session, under ``timeout`` (the rule's
                if it fails, and for a manager without a model); ``"rule"``, the
                task's sentences with a goal or constraint, even with a model.
            pin_task: the session's first user message is pinned.
        """
        super().__init__(archive=archive, pin_task=pin_task, **kwargs)
        if isinstance(manager, BaseChatModel):
            manager = ChatModelArcManager(manager)
        methods = ("checklist_for", "update", "aupdate", "reflect", "areflect")
        self.manager: arc.ArcManager = (
            OfflineArcManager()
            if manager is None
            else check_has("manager", manager, methods, "an ARC manager or a chat model")
        )
        self.in_background = check_bool("in_background", in_background)
        self.wait = check_number("wait", wait, least=0.0)
        self.timeout = check_timeout("timeout", timeout)
        self.stall_turns = check_int("stall_turns", stall_turns, least=1)
        if memory_tokens is not None:
            check_int("memory_tokens", memory_tokens, least=50)
        self.memory_tokens = memory_tokens
        self.memory_share = check_number("memory_share", memory_share, above=0.0, below=1.0)
        self.background = background
        if initial_checklist not in ("rule", "manager"):
            raise ConfigurationError(
                "initial_checklist", f"must be 'rule' or 'manager', got {initial_checklist!r}"
            )
        self.initial_checklist = initial_checklist

    def before(self, view: View, ctx: CallContext) -> Hook[View]:
        before = list(view.get("messages") or ())
        items = yield from self._first_checklist(before)
        at = self._layout(before, items)
        if at is None:
            return view  # no task yet: nothing to keep
        if at.created:
            ctx.persist(self.name, messages=[RemoveMessage(id=REMOVE_ALL_MESSAGES), *at.messages])
            # Once a session: the report the prompt ceiling trusts counts the new
            # checklist and memory.
            count = ctx.session.cache.count_of
            added = sum(map(count, at.messages)) - sum(map(count, before))
            if ctx.usage is not None:
                ctx.adjust_usage("messages", added)
        view = view.replace(messages=at.messages)
        job: _Job | None = ctx.session.scratch.pop(_JOB, None)
        if job is not None and not job.fits(at):
            job.discard()  # its interaction or the memory changed: never applied stale
            job = None
        if job is not None and len(at.interactions) < 2:
            ctx.session.scratch[_JOB] = job  # its interaction is still the last: not yet
            return view
        if job is not None:
            try:
                folded = yield IOCall(
                    partial(job.result, self.wait), partial(job.aresult, self.wait)
                )
            except TimeoutError:
                if self.timeout is None or job.age() < self.timeout:
                    ctx.session.scratch[_JOB] = job
                    ctx.record("arc_update_late", ArcUpdateLate(waited=self.wait, raw=len(at.raw)))
                    return view  # the previous memory; the interaction stays raw
                job.discard()
                ctx.record(
                    "arc_update_failed", ArcUpdateFailed(reason="timeout", seconds=job.age())
                )
            except Exception as exc:
                ctx.record("arc_update_failed", ArcUpdateFailed(reason="error", error=_error(exc)))
            else:
                view = yield from self._absorb(view, ctx, at, at.interactions[0], folded)
                at = self._layout(list(view["messages"])) or at
        # One interaction at a time, oldest first, whatever ran before (a restart, a
        # failed job): the same updates a session that never stopped makes.
        while len(at.interactions) >= 2:
            request, stall, settings = self._request(at, at.interactions[0], ctx)
            try:
                folded = yield IOCall(
                    partial(arc.fold, self.manager, request, stall, settings),
                    partial(arc.afold, self.manager, request, stall, settings),
                    timeout=self.timeout,
                )
            except Exception as exc:
                ctx.record("arc_update_failed", ArcUpdateFailed(reason="error", error=_error(exc)))
                return view
            view = yield from self._absorb(view, ctx, at, at.interactions[0], folded)
            after = self._layout(list(view["messages"]))
            if after is None or after.raw == at.raw:
                return view  # the edit was refused (recorded): stop, the call goes on
            at = after
        if self.in_background:
            self._start(view, ctx)
        return view

    def undo_reflection(
        self, thread_id: str, messages: Sequence[BaseMessage], *, namespace: str = ""
    ) -> list[BaseMessage]:
        """``messages`` with the last reflection undone: its memory and checklist
        replaced by the ones it rewrote, from the archive. Write the result back
        with ``graph.update_state(config, {"messages": [RemoveMessage(REMOVE_ALL_MESSAGES),
        *result]})``. Raises ``LookupError`` if no reflection produced them."""
        out = list(messages)
        undone = 0
        for i, m in enumerate(out):
            state = _arc(m)
            if not state.get("reflected"):
                continue
            sources = m.additional_kwargs[KEY]["edited"]["from"]
            before = self.archive.get(thread_id, sources[0], namespace=namespace)
            if before is None:
                raise LookupError(f"the archive has no {sources[0]!r} for thread {thread_id!r}")
            out[i], undone = before, undone + 1
        if not undone:
            raise LookupError("no message here was written by a reflection")
        return out

    # -- the steps -------------------------------------------------------------

    def _first_checklist(self, messages: list[BaseMessage]) -> Hook[list[arc.ChecklistItem] | None]:
        """The manager model's first checklist when it writes it (``initial_checklist=
        "manager"``) and the session has none yet; ``None``: the rule's."""
        plan, aplan = (getattr(self.manager, n, None) for n in ("plan", "aplan"))
        if self.initial_checklist != "manager" or plan is None or aplan is None:
            return None  # the offline manager has no model to ask
        if any(_arc(m).get("kind") == "checklist" for m in messages):
            return None
        task = _task_at(messages)
        if task is None:
            return None
        text = messages[task].text
        try:
            items: list[arc.ChecklistItem] = yield IOCall(
                partial(plan, text), partial(aplan, text), timeout=self.timeout
            )
        except Exception:
            return None  # timed out: the rule's, and the fold goes on
        return items

    def _layout(
        self, messages: list[BaseMessage], items: list[arc.ChecklistItem] | None = None
    ) -> _Layout | None:
        """``items``: the first checklist if it is made now; ``None``: the manager's rule."""
        task = _task_at(messages)
        if task is None:
            return None
        checklist = next((m for m in messages if _arc(m).get("kind") == "checklist"), None)
        memory = next((m for m in messages if _arc(m).get("kind") == "memory"), None)
        created = checklist is None or memory is None
        if created:
            items = items or self.manager.checklist_for(messages[task].text)
            checklist = checklist or _state_message(
                CHECKLIST_ID, arc.render_checklist(items), _checklist_state(items, StallState())
            )
            memory = memory or _state_message(
                MEMORY_ID, arc.render_memory(""), {"kind": "memory"}, parts=True
            )
            rest = [m for m in messages[task + 1 :] if m.id not in (checklist.id, memory.id)]
            messages = [*messages[: task + 1], checklist, memory, *rest]
        assert checklist is not None and memory is not None
        protected = protected_ids(messages, pin_task=self.pin_task)
        raw = [
            m
            for m in messages[task + 1 :]
            if m is not checklist and m is not memory and str(m.id) not in protected
        ]
        # The current turn's question stays where it is, raw, until the next one comes:
        # folded with the answer before it, the actor saw its tool results without
        # what they answer, and answered an earlier turn's question from the memory.
        asked = next((i for i in range(len(raw) - 1, -1, -1) if raw[i].type == "human"), None)
        if asked is not None:
            raw = raw[:asked] + raw[asked + 1 :]
        return _Layout(messages, messages[task], checklist, memory, raw, created)

    def _request(
        self, at: _Layout, span: Sequence[BaseMessage], ctx: CallContext
    ) -> tuple[arc.UpdateRequest, StallState, FoldSettings]:
        stall = StallState.from_json(_arc(at.checklist).get("stall"))
        cap = self.memory_tokens or max(50, int(self.memory_share * ctx.budget.messages))
        request = arc.UpdateRequest(
            task=at.task.text,
            checklist=at.items,
            memory=arc.memory_body(at.memory.text),
            interaction=tuple(span),
            turn=stall.turn + 1,
            memory_tokens=cap,
            background=self.background,
            memory_used=_tokens_of(at.memory, ctx),
        )
        settings = FoldSettings(
            count=ctx.counter.count_text, stall_turns=self.stall_turns, memory_full=cap
        )
        return request, stall, settings

    def _absorb(
        self,
        view: View,
        ctx: CallContext,
        at: _Layout,
        span: Sequence[BaseMessage],
        folded: arc.Folded,
    ) -> Hook[View]:
        """Fold ``span`` in (one edit, the memory grown by its entry), then apply the
        reflection if any (a second one)."""
        turn = folded.stall.turn
        ops = [
            EditOp(
                tuple(str(m.id) for m in span),
                None,
                f"interaction folded into the memory at turn {turn}",
                "",
            ),
            EditOp(
                (str(at.checklist.id),),
                None,
                "checklist update",
                arc.render_checklist(folded.checklist),
                {"arc": _checklist_state(folded.checklist, folded.stall)},
            ),
        ]
        about = EditNote(arc="update", turn=turn)
        grown = _grown(at.memory, arc.stamped(turn, folded.entry), ctx)
        base = view
        if grown is not None:
            about["memory"] = {
                "grew": str(at.memory.id),
                "into": str(grown.message.id),
                "tokens_added": grown.added,
            }
            messages = [grown.message if m.id == at.memory.id else m for m in view["messages"]]
            base = view.replace(messages=messages)
        edited, plan = yield from self.edit(base, ctx, ops if span else ops[1:], about)
        if plan is None:
            return view  # refused or failed (recorded): the memory as it was, too
        if grown is not None:
            # Its count is known: the next call's pre-flight looks it up, not tokenizes it.
            ctx.session.cache.remember(grown.message, grown.tokens)
            ctx.session.cache.forget([str(at.memory.id)])
            if ctx.usage is not None:
                ctx.adjust_usage("messages", grown.added)
        if folded.reflection is None:
            return edited
        after = self._layout(list(edited["messages"]))
        assert after is not None
        reflection = folded.reflection
        items = reflection.checklist or list(folded.checklist)
        marks = {"arc": {**_checklist_state(items, folded.stall), "reflected": True}}
        ops = [
            EditOp(
                (str(after.memory.id),),
                None,
                f"reflection: {reflection.rationale}",
                arc.render_memory(reflection.memory.strip()),
                {"arc": {"kind": "memory", "reflected": True}, PARTS: []},
            ),
            EditOp(
                (str(after.checklist.id),), None, "reflection", arc.render_checklist(items), marks
            ),
        ]
        triggers = list(folded.triggers)
        about = EditNote(arc="reflection", turn=turn, triggers=triggers)
        reflected, done = yield from self.edit(edited, ctx, ops, about)
        if done is not None:
            ctx.record(
                "arc_reflection",
                ArcReflection(
                    arc="reflection",
                    turn=turn,
                    triggers=triggers,
                    rationale=reflection.rationale,
                    replaced=[str(after.memory.id), str(after.checklist.id)],
                    by=[a.new_id for a in done.applied],
                ),
            )
        return reflected

    def _start(self, view: View, ctx: CallContext) -> None:
        """Start folding what is raw now, while the actor's call runs."""
        if _JOB in ctx.session.scratch:
            return  # one under way already (late): the next call absorbs it first
        at = self._layout(list(view["messages"]))
        if at is None or not at.raw:
            return
        span = at.interactions[0]
        request, stall, settings = self._request(at, span, ctx)
        run = partial(arc.fold, self.manager, request, stall, settings)
        # A chat model does I/O worth a task on the loop; the offline manager is CPU
        # work, which would stall the loop: a thread of the package's pool.
        arun = partial(arc.afold, self.manager, request, stall, settings)
        is_model = isinstance(self.manager, ChatModelArcManager)
        future, task = _prepare.in_background(run, arun if is_model else None)
        base = (str(at.checklist.id), str(at.memory.id))
        job = _Job(_prepare.span_key(span), base, future, task, time.monotonic())
        ctx.session.scratch[_JOB] = job


@dataclass(frozen=True, slots=True)
class _Layout:
    messages: list[BaseMessage]
    """The history, with checklist and memory (made now if ``created``)."""
    task: BaseMessage
    checklist: BaseMessage
    memory: BaseMessage
    raw: list[BaseMessage]
    """The interactions not yet folded, in order (pinned messages aside)."""
    created: bool

    @property
    def items(self) -> tuple[arc.ChecklistItem, ...]:
        found = _arc(self.checklist).get("items") or ()
        return tuple(arc.ChecklistItem.model_validate(i) for i in found)

    @property
    def interactions(self) -> list[list[BaseMessage]]:
        """The raw messages, one list per interaction; all but the last may be folded."""
        return _interactions(self.raw)


@dataclass(slots=True)
class _Job:
    """A fold under way in the background (memory only)."""

    span: _prepare.SpanKey
    base: tuple[str, str]
    """The checklist's and the memory's ids it was made from."""
    future: concurrent.futures.Future[arc.Folded]
    task: asyncio.Task[Any] | None
    started: float

    def fits(self, at: _Layout) -> bool:
        """Whether it still folds the first raw interaction, as it is, into this memory."""
        ids = (str(at.checklist.id), str(at.memory.id))
        first = at.interactions[0] if at.raw else []
        return ids == self.base and _prepare.span_key(first) == self.span

    def age(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def result(self, wait: float) -> arc.Folded:
        if self.task is not None and not self.future.done():
            raise TimeoutError("the fold runs on an event loop this call cannot wait for")
        try:
            return self.future.result(timeout=wait)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"the fold took over {wait} s") from None
        except (concurrent.futures.CancelledError, asyncio.CancelledError):
            raise RuntimeError("the fold was cancelled") from None

    async def aresult(self, wait: float) -> arc.Folded:
        try:
            waiting = asyncio.shield(asyncio.wrap_future(self.future))
            return await asyncio.wait_for(waiting, wait)
        except asyncio.TimeoutError:
            raise TimeoutError(f"the fold took over {wait} s") from None
        except (concurrent.futures.CancelledError, asyncio.CancelledError):
            raise RuntimeError("the fold was cancelled") from None

    def discard(self) -> None:
        self.future.cancel()
        if self.task is not None:
            self.task.cancel()


@dataclass(frozen=True, slots=True)
class _Grown:
    message: BaseMessage
    """The memory with the entry appended."""
    tokens: int
    """Its count (as the session's cache counts a message)."""
    added: int


def _grown(memory: BaseMessage, entry: str, ctx: CallContext) -> _Grown | None:
    """``memory`` with ``entry`` appended, counting only what the entry adds."""
    if not entry:
        return None
    body = arc.memory_body(memory.text)
    # Quoted line by line, appended to the memory as it was sent: its prefix.
    quoted = managed.quoted(entry)
    text = f"{memory.text}\n{quoted}" if body else arc.render_memory(entry)
    # A deterministic id, as the edit core makes: a step re-run after a crash makes
    # the same message, and each version has its own id (reflection archives by id).
    digest = hashlib.sha1(f"{memory.id}\n{entry}".encode(), usedforsecurity=False).hexdigest()
    old = memory.additional_kwargs.get(KEY) or {}
    kept = {k: v for k, v in old.items() if k in ("pinned", "note")}
    before = _tokens_of(memory, ctx)
    counter = ctx.session.cache.counter
    if body:
        # Tokenizers may merge a line's end with the newline after it, never the
        # newline with the next line: the last line, counted again with the entry,
        # is all that changes.
        last = memory.text.rpartition("\n")[2]
        tokens = before + counter.count_text(f"{last}\n{quoted}") - counter.count_text(last)
    else:  # the placeholder goes: title and entry are all there is to count
        tokens = counter.count_message(HumanMessage(text))
    # Each entry is a part of its own, from the line break before it (placement sends
    # the parts as content blocks): the memory as the previous call sent it, its last
    # part included, stays a block boundary this call, where a cache keyed on blocks
    # (Anthropic's) finds it.
    parts = {PARTS: grown_parts(memory, len(text) - len(quoted) - 1) if body else []}
    grown = memory.model_copy(
        update={
            "content": text,
            "id": f"{MEMORY_ID}-{digest[:16]}",
            "additional_kwargs": {
                **memory.additional_kwargs,
                KEY: {**kept, **parts, "arc": {"kind": "memory", "tokens": tokens}},
            },
        }
    )
    return _Grown(grown, tokens, tokens - before)


def _tokens_of(memory: BaseMessage, ctx: CallContext) -> int:
    """The memory's tokens: carried by the memory since it grew, else counted (once)."""
    carried = _arc(memory).get("tokens")
    return carried if isinstance(carried, int) else ctx.session.cache.count_of(memory)


def _task_at(messages: Sequence[BaseMessage]) -> int | None:
    """Where the task is: the first user message that is not ARC's own."""
    return next(
        (i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not _arc(m)), None
    )


def _arc(message: BaseMessage) -> dict[str, Any]:
    marks = message.additional_kwargs.get(KEY)
    found = marks.get("arc") if isinstance(marks, dict) else None
    return found if isinstance(found, dict) else {}


def _checklist_state(items: Sequence[arc.ChecklistItem], stall: StallState) -> dict[str, Any]:
    return {"kind": "checklist", "items": [i.model_dump() for i in items], "stall": stall.to_json()}


def _state_message(
    message_id: str, text: str, state: dict[str, Any], *, parts: bool = False
) -> BaseMessage:
    """A pinned note; with ``parts``, one that grows by appending (one part so far),
    which placement always sends as content blocks: a memory sent as text on one
    call and as blocks on the next would share no prefix."""
    marks: dict[str, Any] = {"arc": state, **({PARTS: []} if parts else {})}
    return pin(note(HumanMessage(text, id=message_id, additional_kwargs={KEY: marks})))


def _interactions(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """``messages`` cut before each agent message: one interaction each (what comes
    before the first agent message is one too). The think node's ``[plan]`` trace
    and the reply it was made for are one agent message, as placement sends them."""
    out: list[list[BaseMessage]] = []
    for m in messages:
        planned = bool(out) and isinstance(out[-1][-1], AIMessage) and is_note(out[-1][-1])
        if (isinstance(m, AIMessage) and not planned) or not out:
            out.append([m])
        else:
            out[-1].append(m)
    return out


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
