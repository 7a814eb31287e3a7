"""Database URLs: one string picks where sessions live, and no error ever shows its password.

Three schemes, the same everywhere a URL is taken (checkpointers, archive,
events, ``migrate``, ``inspect``):

- ``memory://``: this process only; gone when it exits.
- ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` (the
  SQLAlchemy convention: the path is what follows ``sqlite:///``), or
  ``sqlite:///:memory:``.
- ``postgresql://user:password@host:port/dbname?options`` (or ``postgres://``),
  any libpq URI, including ``?host=/socket/dir``.

``None`` means the embedded default: a SQLite file under :func:`data_home`.
Parsing never connects; connecting is the caller's job, at start-up.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage._redact import redact_url

__all__ = ["DatabaseURL", "data_home", "default_url", "parse_url", "redact_url"]

HOME_ENV = "LANGGRAPH_CTX_HOME"
"""Overrides :func:`data_home`, e.g. to keep a project's sessions next to it."""

Kind = Literal["memory", "sqlite", "postgres"]


@dataclass(frozen=True)
class DatabaseURL:
    """A parsed URL: which backend, and for SQLite, which file."""

    kind: Kind
    url: str
    """As given, password included: pass it to a driver, never to a message."""
    path: str = ""
    """The SQLite file (or ``":memory:"``); empty for other kinds."""

    @property
    def redacted(self) -> str:
        return redact_url(self.url)

    def __repr__(self) -> str:  # a repr lands in logs and tracebacks: never the password
        return f"DatabaseURL(kind={self.kind!r}, url={self.redacted!r}, path={self.path!r})"


def data_home() -> Path:
    """Where the embedded default keeps its files.

    ``$LANGGRAPH_CTX_HOME`` if set; otherwise the platform's per-user data
    directory (``$XDG_DATA_HOME`` or ``~/.local/share`` on Linux,
    ``~/Library/Application Support`` on macOS, ``%LOCALAPPDATA%`` on Windows),
    under ``langgraph-ctx``. Not the working directory: a session must not
    depend on where the process happened to start.
    """
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "langgraph-ctx"


def default_url() -> str:
    """``sqlite:///<data_home>/checkpoints.sqlite``."""
    return f"sqlite:///{data_home() / 'checkpoints.sqlite'}"


def parse_url(url: str | None, *, field: str = "database_url") -> DatabaseURL:
    """Classify ``url``; raises :class:`ConfigurationError` (password redacted) if unsupported."""
    if url is None:
        url = default_url()
    if not isinstance(url, str):
        raise ConfigurationError(field, f"expected a URL string, got {type(url).__name__}")
    if url == "memory://":
        return DatabaseURL("memory", url)
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return DatabaseURL("sqlite", url, path=url[len("sqlite:///") :])
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("postgresql", "postgres"):
        try:
            urlsplit(url).port  # noqa: B018 - validates host and port now, not at connect time
        except ValueError as exc:
            # Not urllib's message, and the URL only with its '@': in 'user:secret/db'
            # (the '@host' forgotten) the password is what urllib reads as the port.
            # An IPv6 host urllib cannot read ('[::1', '[zz]') fails the same way.
            netloc = url.split("://", 1)[1].split("/", 1)[0]
            shown = f" {redact_url(url)!r}" if "@" in netloc else ""
            what = (
                "an IPv6 host goes in brackets: 'postgresql://user:password@[::1]:5432/dbname'"
                if "[" in netloc or "]" in netloc or "IPv6" in str(exc) or "IPv4" in str(exc)
                else "the port must be a number from 0 to 65535 (with a password: "
                "'postgresql://user:password@host:5432/dbname')"
            )
            raise ConfigurationError(field, f"malformed {scheme}:// URL{shown}: {what}") from None
        return DatabaseURL("postgres", url)
    if "://" not in url and "=" in url:
        raise ConfigurationError(
            field,
            f"{redact_url(url)!r} looks like a libpq key=value string; give a URL instead: "
            "'postgresql://user:password@host:5432/dbname'",
        )
    raise ConfigurationError(
        field,
        f"unsupported database URL {redact_url(url)!r}; use 'memory://', "
        "'sqlite:///path/to/file.db' or 'postgresql://user:password@host:5432/dbname'",
    )
