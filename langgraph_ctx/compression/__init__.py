"""Summarizers (public) and the machinery of tiered compression (private modules).

The middleware that runs compression is :class:`langgraph_ctx.strategies.TieredCompression`;
this package holds what it uses (the tier planner it shares with the other
strategies is in :mod:`langgraph_ctx.history`): the offline extractive
summarizer (``_extractive``; it reads text with ``_prose`` and selects among
``_units``), entity retention (``_entities``) and the common-word list both
lean on (``_lexicon``). ``ceiling`` (the hard prompt limit: compact tool results,
cut what still does not fit) is a public module, as preflight and the prebuilt
agent fit prompts with it too. ``__all__`` below is
the one list of its public names.
"""

from langgraph_ctx.compression._entities import entities, entity_retention
from langgraph_ctx.compression._extractive import ExtractiveSummarizer
from langgraph_ctx.compression.summarizers import ChatModelSummarizer, Summarizer

__all__ = [
    "ChatModelSummarizer",
    "ExtractiveSummarizer",
    "Summarizer",
    "entities",
    "entity_retention",
]
