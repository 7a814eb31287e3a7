"""A deterministic BACM policy: the folding rule, with no model.

A baseline, not the learned policy. Given the budget state and the tokens to
free (``FoldRequest.excess``), it answers:

- **Null** when nothing needs freeing;
- **Partial**: the oldest past steps that no later step references, then, if
  that is not enough, the oldest ones that are referenced, until folding them
  frees the excess; the most recent ``keep_last`` past steps stay verbatim.
  A step is referenced when a later assistant message or tool call mentions
  its id or an entity of its results (an identifier, a value, a name: see
  :func:`~langgraph_ctx.compression.entities`);
- **Full** when even that falls short: every past step.

The merged text is an extractive digest of the folded steps, a quarter of
their size (earlier digests carried whole) within ``max_share`` of the red
line, so what the task needs most (its entities) stays in view.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import InitVar, dataclass
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_ctx._checks import check_has, check_int, check_number
from langgraph_ctx.compression import Summarizer
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.strategies.bacm.policy import FOLD_HEAD, CommitBlock, FoldAction, FoldRequest
from langgraph_ctx.strategies.base import OfflineBaseline
from langgraph_ctx.strategies.managed import unquoted

STEP_ID = re.compile(r"\bc[0-9a-f]{5}x*\b")
"""A step id as the agent writes it."""


@dataclass(kw_only=True, eq=False)
class OfflineFoldPolicy(OfflineBaseline):
    """Folds the oldest unreferenced steps, sized to fit the pending observation."""

    keep_last: int = 1
    """Past steps, the most recent, a Partial fold leaves alone."""
    ratio: float = 4.0
    """A digest is this many times smaller than the steps it folds; an earlier
    digest folded again is carried at its size, so what was folded long ago is
    not shrunk again on every fold."""
    min_tokens: int = 40
    """The smallest digest."""
    max_share: float = 0.4
    """The largest digest, as a share of the red line."""
    summarizer: InitVar[Summarizer | None] = None
    """Writes the digests. Default: the offline extractive one, on ``counter``."""

    def __post_init__(self, summarizer: Summarizer | None) -> None:
        super().__post_init__()
        check_int("OfflineFoldPolicy.keep_last", self.keep_last, least=0)
        check_number("OfflineFoldPolicy.ratio", self.ratio, least=1.0)
        check_int("OfflineFoldPolicy.min_tokens", self.min_tokens, least=1)
        check_number("OfflineFoldPolicy.max_share", self.max_share, above=0.0)
        if self.max_share > 1.0:
            raise ConfigurationError(
                "OfflineFoldPolicy.max_share", f"must be in (0, 1], got {self.max_share}"
            )
        if summarizer is not None:
            check_has("OfflineFoldPolicy.summarizer", summarizer, ("summarize",), "a Summarizer")
            self.summarizer = summarizer

    def decide(self, request: FoldRequest) -> FoldAction:
        if request.excess <= 0:
            return FoldAction(commit_ids="NONE")
        past = [b for b in request.blocks if b.id not in request.current]
        eligible = past[: max(0, len(past) - self.keep_last)]
        referenced = self._referenced(request.blocks)
        cap = max(self.min_tokens, int(self.max_share * request.state.limit))
        chosen: list[CommitBlock] = []
        for wanted in (False, True):  # unreferenced first, then the rest, oldest first
            for b in eligible:
                if (b.id in referenced) == wanted and self._frees(chosen, cap) < request.excess:
                    chosen.append(b)
        ids: Literal["ALL"] | list[str]
        if self._frees(chosen, cap) < request.excess:
            chosen, ids = past, "ALL"
        else:
            order = {b.id: i for i, b in enumerate(past)}
            chosen = sorted(chosen, key=lambda b: order[b.id])
            ids = [b.id for b in chosen]
        if not chosen:
            return FoldAction(commit_ids="NONE")
        messages = [_body(m) for b in chosen for m in b.messages]
        text = self.summarizer.summarize(messages, max_tokens=self._digest(chosen, cap))
        return FoldAction(commit_ids=ids, merged=text)

    async def adecide(self, request: FoldRequest) -> FoldAction:
        return self.decide(request)

    def _digest(self, blocks: Sequence[CommitBlock], cap: int) -> int:
        carried = sum(b.tokens for b in blocks if b.folded)
        fresh = sum(b.tokens for b in blocks if not b.folded)
        return max(self.min_tokens, min(cap, carried + int(fresh / self.ratio)))

    def _frees(self, blocks: Sequence[CommitBlock], cap: int) -> int:
        return sum(b.tokens for b in blocks) - self._digest(blocks, cap) if blocks else 0

    def _referenced(self, blocks: Sequence[CommitBlock]) -> set[str]:
        """Ids of the blocks a later step mentions: by id, or by an entity of their text."""
        out: set[str] = set()
        named: set[str] = set()  # step ids later assistant messages mention
        later: set[str] = set()  # entities later assistant messages mention
        for b in reversed(blocks):  # newest first, gathering what later steps said
            mine = set().union(*(self._of(m) for m in b.messages if m.type == "tool"))
            if b.folded:
                mine |= self._of(b.messages[0])
            if b.id in named or mine & later:
                out.add(b.id)
            for m in b.messages:
                if isinstance(m, AIMessage):
                    text = _said(m)
                    named.update(STEP_ID.findall(text))
                    later |= self._of(m, text)
        return out

    def _of(self, message: BaseMessage, text: str | None = None) -> set[str]:
        return self.entities_of(str(message.id), message.text if text is None else text)


def _body(message: BaseMessage) -> BaseMessage:
    """An earlier digest without its ``[Folded steps ...]`` line: the summarizer then reads
    its own lines back (speakers, calls, entities) instead of one block of prose."""
    text = message.text
    if message.type != "system" or not text.startswith(FOLD_HEAD):
        return message
    return message.model_copy(update={"content": unquoted(text.partition("\n")[2])})


def _said(message: AIMessage) -> str:
    """What an assistant message says that could cite a step: text and tool arguments."""
    return " ".join([message.text, *(json.dumps(c["args"]) for c in message.tool_calls)])
