"""No password in any error a bad database URL can cause, whatever form the URL takes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from langgraph_ctx.cli import main
from langgraph_ctx.cli.inspect import inspect_session
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.checkpointers import (
    archive_from_url,
    async_checkpointer_from_url,
    checkpointer_from_url,
)
from langgraph_ctx.storage.locks import ThreadLock
from langgraph_ctx.storage.migrations import migrate, migration_status
from langgraph_ctx.storage.pgconn import connect_error
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink
from langgraph_ctx.storage.urls import parse_url, redact_url

SECRET = "s3cretXYZ"

# Port 1 on the loopback refuses at once: every opener gets as far as connecting.
UNREACHABLE = [
    f"postgresql://app:{SECRET}@127.0.0.1:1/agents",
    f"postgresql://app@127.0.0.1:1/agents?password={SECRET}&sslmode=disable",
    f"postgres://app@127.0.0.1:1/agents?sslmode=disable&PASSWORD={SECRET}",
    f"postgresql://app:{SECRET[:3]}%40{SECRET[3:]}@127.0.0.1:1/agents",  # '@', encoded
    # libpq's error for a bad %-escape quotes the value: here, the password.
    f"postgresql://app@127.0.0.1:1/agents?password={SECRET}%ZZ",
]
REFUSED = [
    f"host=db user=app password={SECRET} dbname=agents",  # key=value, given by mistake
    f"host=db user=app password='{SECRET} x' dbname=agents",
    f"mysql://app@db/agents?password={SECRET}",
    f"postgresql+psycopg://app:{SECRET}@db/agents",
    f"postgresql://app:{SECRET}/agents",  # '@host' forgotten: urllib reads the password as port
    f"postgresql://app@db:99999/agents?password={SECRET}",
]


def _checkpointer(url: str) -> None:
    with checkpointer_from_url(url):
        pass


def _async_checkpointer(url: str) -> None:
    import asyncio

    async def enter() -> None:
        async with async_checkpointer_from_url(url):
            pass

    asyncio.run(enter())


def _lock(url: str) -> None:
    ThreadLock(url, "t").acquire()


OPENERS: dict[str, Callable[[str], Any]] = {
    "parse_url": parse_url,
    "checkpointer_from_url": _checkpointer,
    "async_checkpointer_from_url": _async_checkpointer,
    "archive_from_url": archive_from_url,
    "migrate": migrate,
    "migration_status": migration_status,
    "ThreadLock": _lock,
    "PostgresArchive": PostgresArchive,
    "PostgresEventSink": PostgresEventSink,
    "inspect_session": lambda url: inspect_session(url, "t"),
}


def assert_hidden(text: str) -> None:
    assert SECRET not in text
    assert SECRET[:3] + "@" + SECRET[3:] not in text  # nor decoded


@pytest.mark.parametrize("url", UNREACHABLE + REFUSED)
@pytest.mark.parametrize("opener", list(OPENERS))
def test_every_opener_fails_without_the_password(opener: str, url: str) -> None:
    if opener == "parse_url" and url in UNREACHABLE:
        assert parse_url(url).kind == "postgres"  # valid: parsing never connects
        return
    with pytest.raises(ConfigurationError) as info:
        OPENERS[opener](url)
    assert_hidden(str(info.value))
    assert_hidden(repr(info.value))


@pytest.mark.parametrize("url", UNREACHABLE[:2] + REFUSED[:1])
@pytest.mark.parametrize("command", [["migrate"], ["migrate", "--status"], ["inspect", "t"]])
def test_the_cli_fails_on_one_line_without_the_password(
    command: list[str], url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--database-url", url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert_hidden(err)


def test_errors_still_say_what_is_wrong() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_url(REFUSED[0])
    assert "key=value" in str(info.value) and "postgresql://" in str(info.value)
    with pytest.raises(ConfigurationError) as info:
        _checkpointer(UNREACHABLE[1])
    message = str(info.value)
    assert "database 'agents' on host '127.0.0.1:1' as user 'app'" in message
    assert "password=***&sslmode=disable" in message
    with pytest.raises(ConfigurationError, match="port must be a number") as info:
        parse_url(REFUSED[4])
    assert "app:" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://app:{SECRET}@[::1:5432/db",
        f"postgresql://app:{SECRET}@[zz]/db",
        "postgres://[::1/db",
    ],
)
def test_a_malformed_ipv6_host_is_a_configuration_error(url: str) -> None:
    # urllib raises a bare ValueError for these; the user must see which setting is wrong.
    with pytest.raises(ConfigurationError, match="IPv6 host goes in brackets") as info:
        parse_url(url, field="checkpointer")
    assert info.value.field == "checkpointer"
    assert_hidden(str(info.value))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://bob:hunter2@db:5432/app", "postgresql://bob:***@db:5432/app"),
        ("postgresql://bob@db/app", "postgresql://bob@db/app"),
        ("postgresql://bob:@db/app", "postgresql://bob:@db/app"),  # no password to hide
        ("postgresql://bob:p@ss@db/app", "postgresql://bob:***@db/app"),
        (
            "postgresql://app@db/agents?password=s3cret&sslmode=require",
            "postgresql://app@db/agents?password=***&sslmode=require",
        ),
        ("postgresql://h/db?sslpassword=k3y", "postgresql://h/db?sslpassword=***"),
        ("postgresql://[bad:hunter2@x/y", "postgresql://[bad:***@x/y"),  # urllib refuses it
        ("sqlite:///x.db", "sqlite:///x.db"),
        ("sqlite:////abs/x.db", "sqlite:////abs/x.db"),
        ("memory://", "memory://"),
    ],
)
def test_redact_url_keeps_the_shape_of_a_uri(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "dsn",
    [
        r"host=db user=app password='it\'s quoted' dbname=agents",  # libpq reads it
        r"host=db user=app password='it''s quoted' dbname=agents",  # libpq refuses it
    ],
)
def test_redact_url_hides_quoted_values_in_key_value_strings(dsn: str) -> None:
    shown = redact_url(dsn)
    assert "quoted" not in shown and "password=***" in shown
    assert {"host=db", "user=app", "dbname=agents"} <= set(shown.split())


def test_a_parsed_url_never_shows_its_password() -> None:
    db = parse_url(f"postgresql://app:{SECRET}@db/agents")
    assert_hidden(repr(db))
    assert_hidden(str(db))
    assert db.url.count(SECRET) == 1  # still there for the driver


def test_a_driver_message_echoing_the_password_is_scrubbed() -> None:
    url = f"postgresql://app:{SECRET}@db/agents?sslpassword=k3y!x"
    error = connect_error(url, ValueError(f"bad value {SECRET} and k3y!x"), "database_url")
    assert_hidden(str(error))
    assert "k3y!x" not in str(error)


@pytest.mark.slow
def test_without_psycopg_nothing_password_like_is_echoed() -> None:
    # psycopg is the optional postgres extra: the fallback must hide every form too.
    code = f"""
import sys
sys.modules["psycopg"] = None  # as if not installed
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.urls import parse_url, redact_url
shown = [
    redact_url("host=db user=app password={SECRET} dbname=agents"),
    redact_url("host=db password='{SECRET} x' user=app"),
    redact_url("host=db password='{SECRET}"),
    redact_url("postgresql://app@db/agents?password={SECRET}&sslmode=require"),
    redact_url("postgresql://app:{SECRET}@db/agents"),
    redact_url("postgresql://[app:{SECRET}@db/agents"),
]
for url in ["host=db password={SECRET}", "mysql://app:{SECRET}@db/x", "postgresql://app:{SECRET}/x"]:
    try:
        parse_url(url)
    except ConfigurationError as exc:
        shown.append(str(exc))
print("\\n".join(shown))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 9
    for line in lines:
        assert_hidden(line)
    assert lines[0] == "host=db user=app password=*** dbname=agents"
    assert lines[1] == "host=db password=*** user=app"
    assert lines[3] == "postgresql://app@db/agents?password=***&sslmode=require"
