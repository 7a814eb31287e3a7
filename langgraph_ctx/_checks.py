"""Argument checks for the built-ins' constructors: a bad setting fails where it
is written, with a :class:`~langgraph_ctx.errors.ConfigurationError` naming it,
not at the first graph run (a string where a number belongs used to surface as
a ``TypeError`` deep inside compression)."""

from __future__ import annotations

import math
from typing import Any

from langgraph_ctx.errors import ConfigurationError


def check_int(field: str, value: Any, *, least: int | None = None) -> int:
    """An ``int`` (not a ``bool``), at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(field, f"expected an int, got {value!r}")
    if least is not None and value < least:
        raise ConfigurationError(field, f"must be >= {least}, got {value}")
    return value


def check_number(
    field: str,
    value: Any,
    *,
    above: float | None = None,
    least: float | None = None,
    below: float | None = None,
) -> float:
    """A finite real number (not a ``bool``), within the bounds given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(field, f"expected a finite number, got {value!r}")
    if above is not None and not value > above:
        raise ConfigurationError(field, f"must be > {above}, got {value}")
    if least is not None and value < least:
        raise ConfigurationError(field, f"must be >= {least}, got {value}")
    if below is not None and not value < below:
        raise ConfigurationError(field, f"must be < {below}, got {value}")
    return value


def check_timeout(field: str, value: Any, *, optional: bool = True) -> float | None:
    """Seconds, > 0; ``None`` (no timeout) if ``optional``."""
    if value is None and optional:
        return None
    return check_number(field, value, above=0.0)


def check_bool(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(field, f"expected True or False, got {value!r}")
    return value


def check_str(field: str, value: Any, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ConfigurationError(field, f"expected a string, got {value!r}")
    if not empty and not value.strip():
        raise ConfigurationError(field, "must not be empty")
    return value


def check_has(field: str, value: Any, methods: tuple[str, ...], what: str) -> Any:
    """An object with the callables ``methods`` (a protocol, checked by shape)."""
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise ConfigurationError(
            field, f"expected {what} (with {', '.join(methods)}), got {type(value).__name__}"
        )
    return value


def check_instance(field: str, value: Any, cls: type, what: str) -> Any:
    if not isinstance(value, cls):
        raise ConfigurationError(field, f"expected {what}, got {type(value).__name__}")
    return value
