"""The state key PACE keeps besides the core state: its ``state_schema``."""

from __future__ import annotations

from typing import Annotated, Any

from langgraph.channels.delta import DeltaChannel
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from langgraph_ctx.state import SNAPSHOT_EVERY, merge_records


class PaceState(TypedDict, total=False):
    """What :class:`~langgraph_ctx.strategies.PredictiveExtraction` adds to the
    graph's state. :func:`~langgraph_ctx.agent.create_context_agent` merges it in;
    a graph of your own extends it with the core state::

        class MyState(ContextState, PaceState): ...

    The key's name and channel are those it had in the core state before, so a
    PACE session checkpointed then resumes."""

    pace_chunks: Annotated[
        dict[str, Any], DeltaChannel(merge_records, snapshot_frequency=SNAPSHOT_EVERY)
    ]
    """PACE's per-step records for resume (key vector, summaries), by step id. A
    delta channel: a step checkpoints the records it added (one per step), not all
    of them, and a read replays them onto the last snapshot."""
