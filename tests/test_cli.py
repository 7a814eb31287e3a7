"""The ``langgraph-ctx`` command as a whole (each subcommand is tested with its module)."""

from __future__ import annotations

import argparse

from langgraph_ctx.cli import commands as cli


def test_the_module_docstring_lists_every_subcommand() -> None:
    (commands,) = (a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    first_line = (cli.__doc__ or "").splitlines()[0]
    listed = [c for c in commands.choices if f"``{c}``" in first_line]
    assert "bench" not in commands.choices  # the harness lives in benchmarks/
    assert listed == list(commands.choices)  # all of them, in the parser's order
