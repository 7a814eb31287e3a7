"""Every test checks the events the package records against their types.

A pytest plugin (``tests/conftest.py`` loads it): while a test runs,
``CallContext.record`` checks each event of a kind in
:data:`langgraph_ctx.ledger.EVENT_TYPES` with :func:`mismatch`, and the test fails
at teardown if one did not match. The whole suite reaches the failure paths (a
manager's timeout, a refused edit, recall's errors) that one end-to-end run does
not. Kinds of a test's own are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from langgraph_ctx.ledger import EVENT_TYPES
from langgraph_ctx.pipeline.recording import Recording
from langgraph_ctx.state import LedgerEntry


@cache
def _adapter(typed: type[Any]) -> TypeAdapter[Any]:
    return TypeAdapter(typed)


def mismatch(entry: Mapping[str, Any]) -> str | None:
    """Why ``entry`` does not match its kind's type, or ``None``: an unknown kind, a
    field the type does not declare, a required one missing, a value of another
    type (pydantic, strict)."""
    kind, data = entry["kind"], entry["data"]
    if kind not in EVENT_TYPES:
        return f"kind {kind!r} has no type in langgraph_ctx.ledger.EVENT_TYPES"
    typed = EVENT_TYPES[kind]
    undeclared = set(data) - typed.__required_keys__ - typed.__optional_keys__
    if undeclared:
        return f"{kind}: fields {sorted(undeclared)} not declared by {typed.__name__}"
    try:
        _adapter(typed).validate_python(data, strict=True)
    except ValidationError as exc:
        return f"{kind}: {exc}"
    return None


@pytest.fixture(autouse=True)
def _events_match_their_types(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    wrong: list[str] = []
    original = Recording.record

    def record(self: Recording, kind: str, data: Any) -> LedgerEntry:
        if kind in EVENT_TYPES and (why := mismatch({"kind": kind, "data": data})):
            wrong.append(why)
        return original(self, kind, data)  # type: ignore[call-overload]

    record.__wrapped__ = original  # type: ignore[attr-defined]  # its overloads, for inspect.unwrap
    monkeypatch.setattr(Recording, "record", record)
    yield
    assert not wrong, f"events not matching their langgraph_ctx.ledger types: {wrong}"
