"""The kernel every strategy shares: what a history is made of, and work keyed to it.

A context strategy compresses, folds or evicts a message list, and all of them
need the same answers first: where turns start, which tool call goes with which
result (a pair is never split), what is pinned, protected or compressible;
how to run a summary in the background without applying it to a history that
has since changed; where the provider's prompt cache needs a breakpoint. Those
answers live here, once, below every strategy and every middleware, so a
strategy changes its policy without copying or reaching into another's
private helpers.

- ``structure``: turns, tool units, the three tiers, pair repair (pure functions);
- ``jobs``: background jobs keyed by the snapshot of the history they read;
- ``breakpoints``: Anthropic prompt-cache breakpoints on a message list.
"""

__all__: list[str] = []
