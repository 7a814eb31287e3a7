"""The replay model, and what it records of every prompt it receives.

:class:`ReplayModel` is the project's :class:`ScriptedChatModel` answering with a
session's replies in order, without its call log (which would keep every prompt:
quadratic memory over 10,000 steps) and without usage reports (so no strategy
calibrates). Instead a :class:`Recorder` measures each prompt as it arrives:
its tokens, and whether the probes due at that call find their values.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import PrivateAttr

from langgraph_ctx.testing import ScriptedChatModel

from .session import Probe, Session, TokenTally, holds, prompt_text
from .summaries import Clock


class Recorder:
    """Per-call measurements of the prompts one session's model receives."""

    def __init__(self, session: Session, tally: TokenTally, clock: Clock) -> None:
        self.session, self.tally, self.clock = session, tally, clock
        self.due: dict[str, list[Probe]] = {}
        for p in session.probes:
            if p.at is not None:
                self.due.setdefault(p.at, []).append(p)
        self.step = ""
        self.prompt_tokens: list[int] = []
        self.last_prompt: list[BaseMessage] = []
        self.found: dict[str, bool] = {}

    def begin(self, step_id: str) -> None:
        self.step = step_id

    def observe(self, messages: Sequence[BaseMessage]) -> None:
        start = time.perf_counter()
        self.last_prompt = list(messages)
        self.prompt_tokens.append(self.tally(messages))
        due = self.due.get(self.step)
        if due:
            text = prompt_text(messages, self.session.system)
            for p in due:
                self.found[p.id] = holds(text, p.answers, p.whole_word)
        self.clock.recording += time.perf_counter() - start

    def finish(self, planned: set[str] | None = None) -> dict[str, bool]:
        """Every probe: found where it was due (the last prompt for ``at=None``).

        ``planned``: the step ids the replay meant to make (``None``: all); probes due
        elsewhere are left out. A planned call never made (the run was cut short)
        keeps nothing.
        """
        probes = [
            p for p in self.session.probes if p.at is None or planned is None or p.at in planned
        ]
        last = [p for p in probes if p.at is None]
        if last and self.prompt_tokens:
            text = prompt_text(self.last_prompt, self.session.system)
            for p in last:
                self.found[p.id] = holds(text, p.answers, p.whole_word)
        return {p.id: self.found.get(p.id, False) for p in probes}


class ReplayModel(ScriptedChatModel):
    """Replies from the script in order; hands every prompt to the recorder."""

    _recorder: Recorder | None = PrivateAttr(default=None)

    @classmethod
    def for_session(cls, session: Session, recorder: Recorder) -> ReplayModel:
        model = cls(responses=[s.reply for s in session.steps], default="ok", report_usage=False)
        model._recorder = recorder
        return model

    def _record(
        self,
        messages: Sequence[BaseMessage],
        tools: Sequence[dict[str, Any]],
        structured: str | None = None,
    ) -> None:
        if self._recorder is not None:
            self._recorder.observe(messages)
