"""Hiding passwords in database URLs and libpq connection strings.

A URL reaches error messages in many places (parsing, connecting, migrating,
``inspect``, thread locks); each goes through :func:`redact_url` for the URL
and :func:`scrub` for any text (a driver's error) that might echo it. A
password can sit in three places:

- the userinfo of a URI: ``postgresql://app:s3cret@db/agents``;
- a query parameter of a URI: ``postgresql://app@db/agents?password=s3cret``;
- a key=value string, given where a URL was expected:
  ``host=db user=app password=s3cret``.

libpq's own parser (``psycopg.conninfo``) reads key=value strings and finds
every password a URI carries; psycopg is the optional ``postgres`` extra, so
without it, and for text libpq refuses, a pattern stands in that errs towards
hiding too much.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

SECRET_KEYS = frozenset({"password", "sslpassword"})
"""libpq parameters whose values are secrets."""
MASK = "***"

# key=value with the value quoted (libpq style, backslash escapes; an unclosed
# quote runs to the end; quoted runs back to back, as in 'it''s', count as one)
# or bare up to whitespace.
_KEY_VALUE = re.compile(
    r"(?i)\b(password|sslpassword)(\s*=\s*)((?:'(?:[^'\\]|\\.)*(?:'|$))+|[^\s']*)", re.S
)


def redact_url(url: str) -> str:
    """``url`` with every password replaced by ``***``, safe to put in an error or a log.

    A URI keeps its shape (``postgresql://app:***@db/agents?password=***``); a
    key=value string comes back as one (``host=db password=***``).
    """
    redacted = _redact_uri(url) if "://" in url else _redact_key_values(url)
    return scrub(redacted, url)


def scrub(text: str, url: str) -> str:
    """``text`` with every password ``url`` carries, raw or decoded, replaced by ``***``.

    Values under three characters are left: they would mask ordinary letters of
    the message, and hide nothing worth hiding.
    """
    for secret in sorted(secrets(url), key=len, reverse=True):
        if len(secret) >= 3:
            text = text.replace(secret, MASK)
    return text


def secrets(url: str) -> set[str]:
    """The password values in ``url``, as written and decoded, by every parser that can read it."""
    found = {str(v) for k, v in _libpq(url).items() if k in SECRET_KEYS}
    try:
        parts = urlsplit(url) if "://" in url else None
    except ValueError:
        parts = None
    if parts is None:  # key=value text, or a URI too malformed to split
        found |= {m.group(3) for m in _KEY_VALUE.finditer(url)}
        found |= {value.strip("'") for value in found}
        match = re.search(r"://[^:/?#@]*:(.*)@", url, flags=re.S)
        found |= {match.group(1)} if match else set()
    else:
        userinfo, at, _ = parts.netloc.rpartition("@")
        if at and ":" in userinfo:
            found.add(userinfo.split(":", 1)[1])
        found |= {v for k, v in _params(parts.query) if unquote_plus(k).lower() in SECRET_KEYS}
    found |= {unquote(s) for s in found} | {unquote_plus(s) for s in found}
    return {s for s in found if s and s != MASK}


def _redact_uri(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return _pattern(url)
    if parts.scheme.lower() != url.split("://", 1)[0].lower():
        return _pattern(url)  # not a URI urlsplit understands: do not rebuild one
    userinfo, at, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    netloc = f"{user}:{MASK}@{host}" if at and password else parts.netloc
    query = "&".join(
        f"{k}={MASK}" if unquote_plus(k).lower() in SECRET_KEYS else f"{k}={v}" if eq else k
        for k, eq, v in (p.partition("=") for p in parts.query.split("&") if p)
    )
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    # Rebuilt by hand: urlunsplit drops the '//' of schemes it does not know.
    return (
        f"{parts.scheme}://{netloc}{parts.path}"
        + (f"?{query}" if query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


def _redact_key_values(text: str) -> str:
    params = _libpq(text)
    if not params:
        return _pattern(text)
    if not SECRET_KEYS & params.keys():
        return text
    from psycopg.conninfo import make_conninfo

    return make_conninfo("", **{k: MASK if k in SECRET_KEYS else v for k, v in params.items()})


def _pattern(text: str) -> str:
    # userinfo up to the last '@': a password may itself contain '@'.
    text = re.sub(r"(://[^:/?#@]*):.*@", rf"\1:{MASK}@", text, count=1, flags=re.S)
    return _KEY_VALUE.sub(rf"\1\2{MASK}", text)


def _params(query: str) -> list[tuple[str, str]]:
    return [(k, v) for k, _, v in (p.partition("=") for p in query.split("&") if p)]


def _libpq(text: str) -> dict[str, Any]:
    """libpq's reading of ``text`` (URI or key=value); empty without psycopg or if it refuses."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return {}
    try:
        return dict(conninfo_to_dict(text))
    except Exception:  # psycopg.ProgrammingError for text libpq cannot parse
        return {}
