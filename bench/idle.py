"""What an idle relay costs: its transactions a second on PostgreSQL, and its threads a worker.

The real `gunicorn wsgi:app` (2 workers, the relay's defaults, buttons, the watcher and
polling for Telegram's updates on: GLITCHTIP_API_TOKEN, TELEGRAM_UPDATES=poll) with its spool
in a PostgreSQL database of its own (tests/postgres.py starts the server), the fake Telegram
answering and the fake GlitchTip with nothing to say. Nothing arrives. After a warm-up, the
database's committed and rolled-back transactions (pg_stat_database) are read over a window,
and each worker's threads (/proc/<pid>/status). `--routes FILE`: with that routes file in
force (a route with `topics = "per_issue"` and `board = true` costs what their looks cost).
Run by hand:

    .venv/bin/python bench/idle.py [--seconds N] [--routes FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_glitchtip import TOKEN, running_fake_glitchtip  # noqa: E402
from tests.fake_telegram import running_fake_telegram  # noqa: E402
from tests.postgres import PostgresServer  # noqa: E402

WARM_UP = 5.0


def transactions(url: str) -> int:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            (name,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--routes", help="a routes file in force (RELAY_ROUTES)")
    args = parser.parse_args()
    server = PostgresServer()
    try:
        url = server.new_database()
        with (
            tempfile.TemporaryDirectory() as directory,
            running_fake_telegram() as fake,
            running_fake_glitchtip() as glitchtip,
        ):
            env = relay_env(
                fake,
                RELAY_SPOOL_URL=url,
                RELAY_LOCAL_SPOOL_PATH=str(Path(directory) / "local.sqlite3"),
                GLITCHTIP_API_TOKEN=TOKEN,
                GLITCHTIP_URL=glitchtip.url,
                RELAY_SEND_TIMEOUT="5",
                WEB_CONCURRENCY="2",
                **({"RELAY_ROUTES": str(Path(args.routes).resolve())} if args.routes else {}),
            )
            relay = RelayProcess(env, Path(directory) / "relay.log").wait_ready()
            try:
                time.sleep(WARM_UP)
                before, started = transactions(url), time.monotonic()
                time.sleep(args.seconds)
                after, took = transactions(url), time.monotonic() - started
                workers = relay.workers()
                threads = [threads_of(pid) for pid in workers]
            finally:
                relay.stop()
    finally:
        server.close()
    # The reads of pg_stat_database are transactions of their own: two, in all.
    per_second = (after - before - 1) / took
    print(f"\nAn idle relay of {len(workers)} workers on PostgreSQL, over {took:.0f} s:\n")
    print("| transactions a second | threads a worker |")
    print("|---:|---|")
    print(f"| {per_second:.1f} | {', '.join(str(n) for n in threads)} |")


if __name__ == "__main__":
    main()
