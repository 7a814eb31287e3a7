"""Runs one documentation block as a reader would, from a file, in a fresh interpreter.

A block that names a real provider client (``langchain_openai``,
``langchain_anthropic``, ``init_chat_model``) runs with those clients offline
(:mod:`offline_providers`): the request payload is built by the client, only the
network call is left out.
"""

from __future__ import annotations

import sys

PROVIDERS = ("langchain_openai", "langchain_anthropic", "init_chat_model")


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        code = f.read()
    if any(name in code for name in PROVIDERS):
        import offline_providers

        offline_providers.install()
    exec(compile(code, path, "exec"), {"__name__": "__main__", "__file__": path})


if __name__ == "__main__":
    main(sys.argv[1])
