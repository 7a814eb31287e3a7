"""What the offline baselines share: AdaCoM's policy, BACM's folding rule, ARC's manager.

Each baseline is its settings and the rules that read them: a keyword-only
dataclass with a docstring per field, each setting checked in
``__post_init__`` with a :class:`~langgraph_ctx.errors.ConfigurationError`
naming it (as :class:`~langgraph_ctx.strategies.PaceSettings`). This base
holds what all three need besides: the token counter their digests are sized
with, the extractive summarizer on it, and the entities of each message, cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langgraph_ctx._checks import check_instance
from langgraph_ctx.compression import ExtractiveSummarizer, Summarizer, entities
from langgraph_ctx.tokens import TokenCounter

_CACHED = 20_000
"""Entity sets kept before the cache starts again (a few MB at most)."""


@dataclass(kw_only=True, eq=False)
class OfflineBaseline:
    """A deterministic stand-in for a learned manager: rules, no model."""

    counter: TokenCounter = field(default_factory=TokenCounter)
    """Counts tokens: digests are sized with it. Default: tiktoken's ``cl100k_base``."""

    def __post_init__(self) -> None:
        label = f"{type(self).__name__}.counter"
        check_instance(label, self.counter, TokenCounter, "a TokenCounter")
        self.summarizer: Summarizer = ExtractiveSummarizer(self.counter)
        self._entities: dict[tuple[str, int], set[str]] = {}

    def entities_of(self, key: str, text: str) -> set[str]:
        """The entities of ``text`` (:func:`~langgraph_ctx.compression.entities`).

        Cached: every decision would otherwise re-read the whole history. Keyed by
        the text's hash as well as ``key`` (a message id, say), as one baseline may
        serve threads that reuse ids.
        """
        cache_key = (key, hash(text))
        found = self._entities.get(cache_key)
        if found is None:
            if len(self._entities) > _CACHED:
                self._entities.clear()
            found = self._entities[cache_key] = entities(text)
        return found
