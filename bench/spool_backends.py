"""The spool in SQLite against PostgreSQL, with one relay and with three: intake and a storm.

For each setup (SQLite with one relay; PostgreSQL with one relay; PostgreSQL with three relays
behind a round-robin client), the real `gunicorn wsgi:app` (2 workers each, default settings)
against the fake Telegram:

- intake: 16 clients post the 3-of-12-issue alert into one chat, Telegram healthy: webhooks a
  second and answer times (nearly all are queued for digests, so this is the spool's work);
- storm: 200 alerts over 10 s into one group while the fake enforces one message a second per
  chat and twenty a minute per group: when all were visible, messages, 429s, duplicates.

PostgreSQL is a server the script starts itself (tests/postgres.py: Debian's postgresql), on
this machine, with fsync off as in the tests: a network round trip and a durable commit on a
real server cost more. Run by hand:

    .venv/bin/python bench/spool_backends.py [--webhooks-per-client 200]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.payload import PAYLOAD, with_new_issue  # noqa: E402
from tests.e2e.helpers import post_paced  # noqa: E402
from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402
from tests.postgres import PostgresServer  # noqa: E402

CLIENTS = 16
STORM_ALERTS = 200
STORM_SECONDS = 10.0
WATCH_SECONDS = 90.0
STORM_TITLE = re.compile(r"Storm alert \d{3}")


@dataclass
class Setup:
    name: str
    replicas: int
    # A fresh, empty spool for each phase: RELAY_SPOOL_PATH or RELAY_SPOOL_URL.
    new_spool: Callable[[], dict[str, str]]


@dataclass
class Result:
    setup: str
    rate: float
    p50: float
    p99: float
    statuses: collections.Counter[int]
    visible_after: float | None
    delivered: int
    messages: int
    too_many: int
    duplicates: int
    storm_p99: float


def drive(urls: list[str], clients: int, per_client: int) -> tuple[list[float], list[int], float]:
    """`clients` threads, client i posting to urls[i % len(urls)]; in its own process, so the
    load generator does not share a GIL with the fake Telegram."""
    latencies: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        session = requests.Session()
        url = urls[number % len(urls)]
        for _ in range(per_client):
            started = time.monotonic()
            reply = session.post(url, json=PAYLOAD, timeout=15)
            took = time.monotonic() - started
            with lock:
                latencies.append(took)
                statuses.append(reply.status_code)

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, statuses, time.monotonic() - started


@contextmanager
def relays(
    setup: Setup, fake: FakeTelegram, workdir: Path, tag: str
) -> Iterator[list[RelayProcess]]:
    started = []
    spool = setup.new_spool()
    try:
        for number in range(setup.replicas):
            env = relay_env(fake, RELAY_SEND_TIMEOUT="5", RELAY_RETRY_WAIT="30", **spool)
            env.pop("TELEGRAM_THREAD_ID")
            log = workdir / f"{tag}-{number}.log"
            started.append(RelayProcess(env, log))
        yield [relay.wait_ready() for relay in started]
    finally:
        for relay in started:
            relay.stop()


def storm_payload(n: int) -> dict[str, Any]:
    return with_new_issue(f"Storm alert {n:03d}", n + 100)


def storm_titles(fake: FakeTelegram) -> list[str]:
    """Every storm alert's title in the chat, once per time it was posted."""
    return [title for text in fake.texts() for title in STORM_TITLE.findall(text)]


def run(setup: Setup, workdir: Path, per_client: int, load: ProcessPoolExecutor) -> Result:
    with running_fake_telegram() as fake, relays(setup, fake, workdir, "intake") as fleet:
        urls = [relay.webhook_url for relay in fleet]
        load.submit(drive, urls, 2, 5).result()  # warm up
        latencies, statuses, seconds = load.submit(drive, urls, CLIENTS, per_client).result()
    times = sorted(latencies)
    titles = {f"Storm alert {n:03d}" for n in range(STORM_ALERTS)}
    with running_fake_telegram(limits=True) as fake, relays(setup, fake, workdir, "storm") as fleet:
        started = time.monotonic()
        answers = post_paced(
            [relay.webhook_url for relay in fleet],
            [storm_payload(n) for n in range(STORM_ALERTS)],
            seconds=STORM_SECONDS,
        )
        visible_after = None
        while time.monotonic() - started < WATCH_SECONDS:
            if set(storm_titles(fake)) >= titles:
                visible_after = time.monotonic() - started
                break
            time.sleep(0.1)
        time.sleep(2)  # a duplicate would arrive in this time
        seen = collections.Counter(storm_titles(fake))
        storm_times = sorted(took for _, took in answers)
        return Result(
            setup=setup.name,
            rate=len(latencies) / seconds,
            p50=statistics.median(times),
            p99=times[int(len(times) * 0.99) - 1],
            statuses=collections.Counter(statuses),
            visible_after=visible_after,
            delivered=len(set(seen) & titles),
            messages=len(fake.messages),
            too_many=len(fake.too_many_requests()),
            duplicates=sum(count - 1 for count in seen.values()),
            storm_p99=storm_times[int(len(storm_times) * 0.99) - 1],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--webhooks-per-client", type=int, default=200)
    args = parser.parse_args()
    server = PostgresServer()
    try:
        with tempfile.TemporaryDirectory() as directory, ProcessPoolExecutor(1) as load:
            workdir = Path(directory)
            files = itertools.count()

            def new_file() -> dict[str, str]:
                return {"RELAY_SPOOL_PATH": str(workdir / f"spool-{next(files)}.sqlite3")}

            def new_database() -> dict[str, str]:
                return {
                    "RELAY_SPOOL_URL": server.new_database(),
                    "RELAY_LOCAL_SPOOL_PATH": str(workdir / f"local-{next(files)}.sqlite3"),
                }

            setups = [
                Setup("SQLite, 1 relay", 1, new_file),
                Setup("PostgreSQL, 1 relay", 1, new_database),
                Setup("PostgreSQL, 3 relays", 3, new_database),
            ]
            results = [run(s, workdir, args.webhooks_per_client, load) for s in setups]
    finally:
        server.close()
    print(
        f"\nintake: {CLIENTS} clients x {args.webhooks_per_client} webhooks into one chat, "
        f"Telegram healthy; storm: {STORM_ALERTS} alerts over {STORM_SECONDS:g} s into one "
        "group, Telegram's limits enforced. 2 workers per relay.\n"
    )
    print(
        "| spool | intake webhooks/s | p50 / p99 ms | answers | storm: all visible after "
        "| messages | 429s | duplicates | storm answer p99 ms |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in results:
        visible = f"{r.visible_after:.1f} s" if r.visible_after is not None else "not yet"
        if r.delivered < STORM_ALERTS:
            visible += f" ({r.delivered}/{STORM_ALERTS} seen)"
        answers = ", ".join(f"{n}x {code}" for code, n in sorted(r.statuses.items()))
        print(
            f"| {r.setup} | {r.rate:.0f} | {r.p50 * 1000:.1f} / {r.p99 * 1000:.1f} | {answers} "
            f"| {visible} | {r.messages} | {r.too_many} | {r.duplicates} "
            f"| {r.storm_p99 * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
