"""PACE's glimpse (section 3.4, appendix D): a condensed step's full original, by id.

:class:`StepSource` is a source of the package's one ``glimpse`` tool
(:class:`langgraph_ctx.middleware.Glimpse`, which owns the limits: at most 3 per
agent step, each answer capped in tokens and counted in the next call's
budget). It resolves a step id (``"s12"``) to the step's messages as a
transcript, from the active history, which PACE never rewrites: every step is
there. ``create_context_agent(strategy="pace")`` adds the tool with this source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph_ctx.compression.summarizers import transcript
from langgraph_ctx.strategies.pace.steps import step_bounds, step_number

if TYPE_CHECKING:
    from langgraph_ctx.middleware.glimpse import GlimpseRequest


class StepSource:
    """The steps of the active history, by id: a ``GlimpseSource``."""

    def resolve(self, request: GlimpseRequest) -> list[tuple[str, str]] | None:
        """Step ``request.reference``'s full original; ``None`` for a reference that is
        not a step id (the next source may know it) or a step that does not exist."""
        ref = request.reference.strip()
        number = step_number(ref)
        messages = request.messages
        bounds = None if number is None else step_bounds(messages, number)
        if bounds is None:
            return None
        return [(ref, transcript(messages[bounds[0] : bounds[1]]))]
