"""How fast the relay takes GlitchTip's webhooks, against the floor its design can reach.

Starts the relay under gunicorn with the project's own gunicorn.conf.py against a local fake
Telegram, and beside it a bare Flask endpoint (bench/floor_app.py) under the same settings that
only makes the same requests.post, and drives both with a real GlitchTip payload at concurrency
1 and 16, with Telegram healthy and hanging, in rounds alternating between the two. Prints a
table. Run by hand:

    .venv/bin/python bench/intake.py

Targets (issue 2): relay throughput at least 0.8x the floor's with Telegram healthy; p99 answer
while Telegram hangs at most RELAY_SEND_TIMEOUT + 0.5 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench.payload import PAYLOAD  # noqa: E402
from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402

MAX_SECONDS_PER_RUN = 60.0


@dataclass
class Run:
    """One app in one scenario, over all its rounds."""

    app: str
    telegram: str
    concurrency: int
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, latencies: list[float], statuses: list[int], seconds: float) -> None:
        self.latencies += latencies
        self.statuses.update(statuses)
        self.seconds += seconds

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def the_payload(_: int) -> dict[str, Any]:
    return PAYLOAD


def drive(
    url: str,
    concurrency: int,
    count: int,
    payload_for: Callable[[int], dict[str, Any]] = the_payload,
) -> tuple[list[float], list[int], float]:
    """Posts `payload_for(n)` for n in range(count). In its own process, so the load generator
    does not share a GIL with the fake Telegram."""
    latencies: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + MAX_SECONDS_PER_RUN
    remaining = iter(range(count))

    def client() -> None:
        session = requests.Session()
        while time.monotonic() < stop_at:
            with lock:
                n = next(remaining, None)
            if n is None:
                return
            started = time.monotonic()
            reply = session.post(url, json=payload_for(n), timeout=15)
            took = time.monotonic() - started
            with lock:
                latencies.append(took)
                statuses.append(reply.status_code)

    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, statuses, time.monotonic() - started


def measure(
    servers: dict[str, RelayProcess],
    fake: FakeTelegram,
    per_client: int,
    rounds: int,
    load: ProcessPoolExecutor,
) -> list[Run]:
    """Each scenario in rounds that alternate between the apps, so a slow spell of this shared
    machine costs both alike rather than whichever happened to run then."""
    runs: list[Run] = []
    for telegram in ("healthy", "hanging"):
        fake.set("ok" if telegram == "healthy" else "hang")
        for concurrency in (1, 16):
            if telegram == "healthy":
                count, repeat = per_client * concurrency, rounds
            else:  # every answer takes the whole timeout: a few tell enough
                count, repeat = max(5, 3 * concurrency), 1
            scenario = {name: Run(name, telegram, concurrency) for name in servers}
            for _ in range(repeat):
                for name, server in servers.items():
                    if telegram == "healthy":
                        load.submit(drive, server.webhook_url, 1, 5).result()  # warm up
                    scenario[name].add(
                        *load.submit(drive, server.webhook_url, concurrency, count).result()
                    )
            runs += scenario.values()
    fake.set("ok")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--requests",
        type=int,
        default=200,
        help="webhooks per client and round with Telegram healthy (default 200)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds per app with Telegram healthy, alternating between the apps (default 3)",
    )
    parser.add_argument(
        "--send-timeout",
        default="5",
        help="RELAY_SEND_TIMEOUT for both apps (default 5, the relay's default)",
    )
    parser.add_argument(
        "--routes",
        metavar="FILE",
        help="RELAY_ROUTES for the relay (examples/routes.toml: every webhook routed, as a "
        "routes file makes it; the floor has none to read)",
    )
    args = parser.parse_args()
    send_timeout = float(args.send_timeout)

    with (
        running_fake_telegram() as fake,
        ProcessPoolExecutor(1) as load,
        tempfile.TemporaryDirectory() as logs,
    ):
        env = relay_env(
            fake,
            RELAY_SEND_TIMEOUT=args.send_timeout,
            RELAY_RETRY_WAIT="30",
            RELAY_SPOOL_PATH=str(Path(logs) / "spool.sqlite3"),
            **({"RELAY_ROUTES": str(Path(args.routes).resolve())} if args.routes else {}),
        )
        env.pop("TELEGRAM_THREAD_ID")
        servers = {
            name: RelayProcess(env, Path(logs) / f"{name}.log", app=app)
            for name, app in (("relay", "wsgi:app"), ("floor", "bench.floor_app:app"))
        }
        try:
            for server in servers.values():
                server.wait_ready()
            runs = measure(servers, fake, args.requests, args.rounds, load)
        finally:
            for server in servers.values():
                server.stop()

    print_table(runs, send_timeout)


def print_table(runs: list[Run], send_timeout: float) -> None:
    print(f"gunicorn wsgi:app, project gunicorn.conf.py; RELAY_SEND_TIMEOUT={send_timeout:g} s")
    print()
    print(
        "| telegram | clients | app | webhooks | webhooks/s | p50 ms | p99 ms | max ms | answers |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for run in sorted(runs, key=lambda r: (r.telegram, r.concurrency, r.app != "relay")):
        statuses = ", ".join(f"{code}x{n}" for code, n in sorted(run.statuses.items()))
        print(
            f"| {run.telegram} | {run.concurrency} | {run.app} | {len(run.latencies)} "
            f"| {run.rate:.3g} | {run.percentile(0.5) * 1000:.1f} "
            f"| {run.percentile(0.99) * 1000:.1f} | {max(run.latencies) * 1000:.0f} | {statuses} |"
        )
    print()
    by_key = {(r.app, r.telegram, r.concurrency): r for r in runs}
    for concurrency in (1, 16):
        relay = by_key[("relay", "healthy", concurrency)]
        floor = by_key[("floor", "healthy", concurrency)]
        ratio = relay.rate / floor.rate
        verdict = "meets" if ratio >= 0.8 else "MISSES"
        print(
            f"healthy, concurrency {concurrency}: relay/floor throughput {ratio:.2f}x "
            f"({verdict} the 0.8x target)"
        )
    bound = send_timeout + 0.5
    for concurrency in (1, 16):
        p99 = by_key[("relay", "hanging", concurrency)].percentile(0.99)
        verdict = "meets" if p99 <= bound else "MISSES"
        print(
            f"hanging, concurrency {concurrency}: relay p99 {p99:.2f} s "
            f"({verdict} the {bound:g} s bound)"
        )


if __name__ == "__main__":
    main()
