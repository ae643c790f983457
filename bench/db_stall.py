"""What a stall of the spool's database costs: the webhook's answer time while PostgreSQL does
not answer (its processes paused, as in a failover or a long lock), and the time the relay
takes to move 1,000 alerts held in this host's own file into the database once it answers.

The real `gunicorn wsgi:app` (2 workers) on a real PostgreSQL with RELAY_LOCAL_SPOOL_PATH,
against the fake Telegram, which answers 500 to everything, so that every alert waits (a
webhook is then answered 502 or 202 at once, and the figures are the spool's, not Telegram's).
Phases, each on a fresh database and file:

  healthy    the database answers: N webhooks from 4 clients
  stalled    the database paused before the first webhook: the same N webhooks; then
             webhooks arriving 10 a second through a 20 s stall
  drain      1,000 alerts taken while it is paused, then it answers: the time until the file
             is empty and the database holds all 1,000

Run by hand (about a minute):

    .venv/bin/python bench/db_stall.py [--webhooks N] [--held N]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from relay_app.operating.console import print_table  # noqa: E402
from tests.e2e.helpers import post, titled, wait_until  # noqa: E402
from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402
from tests.postgres import PostgresServer  # noqa: E402

CLIENTS = 4
PACED_FOR = 20  # seconds of a stall with webhooks arriving steadily
DRAIN_WITHIN = 120.0


def waiting_in_file(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as file:
        return int(file.execute("SELECT count(*) FROM jobs WHERE state = 'pending'").fetchone()[0])


def waiting_in_database(url: str) -> int:
    try:
        with psycopg.connect(url, connect_timeout=2) as database:
            row = database.execute("SELECT count(*) FROM jobs WHERE state = 'pending'").fetchone()
    except psycopg.Error:
        return 0  # not made yet
    return int(row[0]) if row else 0


def answers(
    relay: RelayProcess, count: int, prefix: str, every: float = 0.0
) -> tuple[list[float], list[int]]:
    """`count` webhooks from CLIENTS clients, one each `every` seconds (0: as fast as they are
    answered): each answer's seconds, and its status."""
    began = time.monotonic()

    def one(number: int) -> tuple[float, int]:
        time.sleep(max(0.0, began + number * every - time.monotonic()))
        reply, seconds = post(relay.webhook_url, titled(f"{prefix} {number}"))
        return seconds, reply.status_code

    with ThreadPoolExecutor(CLIENTS) as pool:
        done = list(pool.map(one, range(count)))
    return [seconds for seconds, _ in done], [status for _, status in done]


def quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def start(fake: FakeTelegram, url: str, local: Path, log: Path) -> RelayProcess:
    env = relay_env(
        fake,
        RELAY_SPOOL_URL=url,
        RELAY_LOCAL_SPOOL_PATH=str(local),
        WEB_CONCURRENCY="2",
        RELAY_SEND_TIMEOUT="5",
    )
    return RelayProcess(env, log, telegram=fake).wait_ready()


def answer_row(name: str, seconds: list[float], statuses: list[int]) -> list[str]:
    said = ", ".join(f"{s}: {statuses.count(s)}" for s in sorted(set(statuses)))
    return [
        name,
        str(len(seconds)),
        f"{quantile(seconds, 0.5) * 1000:.0f}",
        f"{quantile(seconds, 0.99) * 1000:.0f}",
        f"{max(seconds) * 1000:.0f}",
        said,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webhooks", type=int, default=200)
    parser.add_argument("--held", type=int, default=1000)
    args = parser.parse_args()
    server = PostgresServer()
    rows: list[list[str]] = []
    drained: list[str] = []
    try:
        with tempfile.TemporaryDirectory() as directory, running_fake_telegram() as fake:
            work = Path(directory)
            fake.set("error", status=500, description="Internal Server Error")

            relay = start(fake, server.new_database(), work / "healthy.sqlite3", work / "h.log")
            rows.append(answer_row("healthy", *answers(relay, args.webhooks, "Healthy")))
            relay.stop()

            relay = start(fake, server.new_database(), work / "stalled.sqlite3", work / "s.log")
            with server.paused():
                rows.append(answer_row("stalled", *answers(relay, args.webhooks, "Stalled")))
            relay.stop()

            relay = start(fake, server.new_database(), work / "paced.sqlite3", work / "p.log")
            with server.paused():
                paced = answers(relay, PACED_FOR * 10, "Paced", every=0.1)
                rows.append(answer_row(f"stalled, 10/s for {PACED_FOR} s", *paced))
            relay.stop()

            url, local = server.new_database(), work / "drain.sqlite3"
            relay = start(fake, url, local, work / "d.log")
            with server.paused():
                taken = answers(relay, args.held, "Held")
                rows.append(answer_row(f"stalled ({args.held})", *taken))
                held = waiting_in_file(local)
                resumed = time.monotonic()
            moved = wait_until(
                lambda: waiting_in_file(local) == 0 and waiting_in_database(url) == held,
                timeout=DRAIN_WITHIN,
            )
            seconds = time.monotonic() - resumed
            drained = [
                str(held),
                f"{seconds:.1f}" if moved else f"> {DRAIN_WITHIN:.0f}",
                f"{held / seconds:.0f}" if moved else "-",
                str(waiting_in_database(url)),
            ]
            relay.stop()
    finally:
        server.close()
    print("\nwebhook answers, Telegram answering 500 (every alert waits), 4 clients")
    print_table(
        [["database", "webhooks", "p50 ms", "p99 ms", "max ms", "answers"], *rows], sys.stdout
    )
    print("\nheld alerts moved into the database once it answers again")
    print_table(
        [["held in the file", "drained in s", "alerts/s", "in the database"], drained], sys.stdout
    )


if __name__ == "__main__":
    main()
