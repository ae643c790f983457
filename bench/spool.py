"""What the durable spool costs on the webhook's path, and what it saves in an outage.

1. Telegram healthy: the relay with its spool against the same relay with RELAY_SPOOL_PATH=off,
   in rounds alternating between the two, at concurrency 1 and 16.
2. Outage drill: Telegram refuses connections while 1000 webhooks arrive at concurrency 16,
   stays down a while longer, then comes back. Reports the answer times, the time until every
   alert was delivered, and duplicates.

Both use the real `gunicorn wsgi:app` with the project's gunicorn.conf.py and the relay's
default settings (2 workers, RELAY_SEND_TIMEOUT=5, RELAY_RETRY_WAIT=30) against a local fake
Telegram. Prints tables. Run by hand:

    .venv/bin/python bench/spool.py

Targets (issue 3): at most +2 ms p50 with the spool at one client; in the drill, 1000
delivered, 0 duplicates, no answer slower than RELAY_SEND_TIMEOUT.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import re
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from bench.intake import Run, drive  # noqa: E402
from bench.payload import with_new_issue  # noqa: E402
from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402

SEND_TIMEOUT = 5.0
# At twenty messages a minute, a thousand alerts in digests of twenty take about 2.5 minutes.
MAX_DRILL_SECONDS = 600.0
DRILL_TITLE = re.compile(r"Drill alert \d{4}")


def numbered(n: int) -> dict[str, Any]:
    """The bench payload with an issue of its own, so duplicates can be told apart."""
    return with_new_issue(f"Drill alert {n:04d}", n + 100)


def workers_cpu_seconds(relay: RelayProcess) -> float:
    """CPU time (user + system) used so far by the relay's gunicorn workers, from /proc."""
    total = 0.0
    for pid in re.findall(r"Booting worker with pid: (\d+)", relay.logs()):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def compare_on_and_off(
    fake: FakeTelegram,
    logs: Path,
    per_client: int,
    rounds: int,
    load: ProcessPoolExecutor,
    cpu: dict[tuple[str, int], float],
) -> list[Run]:
    """The two relays in alternating rounds; `cpu` receives each run's worker CPU seconds."""
    env = relay_env(fake, RELAY_SPOOL_PATH=str(logs / "spool.sqlite3"))
    env.pop("TELEGRAM_THREAD_ID")
    servers = {
        "spool on": RelayProcess(env, logs / "on.log"),
        "spool off": RelayProcess({**env, "RELAY_SPOOL_PATH": "off"}, logs / "off.log"),
    }
    runs: list[Run] = []
    try:
        for server in servers.values():
            server.wait_ready()
        fake.set("ok")
        for concurrency in (1, 16):
            scenario = {name: Run(name, "healthy", concurrency) for name in servers}
            for _ in range(rounds):
                for name, server in servers.items():
                    load.submit(drive, server.webhook_url, 1, 5).result()  # warm up
                    count = per_client * concurrency
                    cpu_before = workers_cpu_seconds(server)
                    scenario[name].add(
                        *load.submit(drive, server.webhook_url, concurrency, count).result()
                    )
                    cpu_used = workers_cpu_seconds(server) - cpu_before
                    cpu[(name, concurrency)] = cpu.get((name, concurrency), 0.0) + cpu_used
            runs += scenario.values()
    finally:
        for server in servers.values():
            server.stop()
    return runs


def drill_titles(fake: FakeTelegram, skip: int) -> Counter[str]:
    """How often each drill alert was posted, in messages after the first `skip`: one alert
    alone, or many in a digest."""
    return Counter(title for text in fake.texts()[skip:] for title in DRILL_TITLE.findall(text))


def outage_drill(
    fake: FakeTelegram, logs: Path, alerts: int, outage: float, load: ProcessPoolExecutor
) -> dict[str, Any]:
    env = relay_env(
        fake,
        RELAY_SPOOL_PATH=str(logs / "drill.sqlite3"),
        RELAY_SEND_TIMEOUT=f"{SEND_TIMEOUT:g}",
        RELAY_RETRY_WAIT="30",
    )
    env.pop("TELEGRAM_THREAD_ID")
    relay = RelayProcess(env, logs / "drill.log").wait_ready()
    try:
        delivered_before = len(fake.messages)
        fake.stop()  # connections refused from here on
        down_at = time.monotonic()
        latencies, statuses, _ = load.submit(
            drive, relay.webhook_url, 16, alerts, numbered
        ).result()
        intake_seconds = time.monotonic() - down_at
        time.sleep(max(0.0, outage - intake_seconds))
        fake.start()
        up_at = time.monotonic()
        deadline = up_at + MAX_DRILL_SECONDS
        while len(drill_titles(fake, delivered_before)) < alerts and time.monotonic() < deadline:
            time.sleep(0.1)
        all_delivered_at = time.monotonic()
        time.sleep(3)  # room for duplicates to show
        titles = drill_titles(fake, delivered_before)
        messages = len(fake.messages) - delivered_before
    finally:
        relay.stop()
    return {
        "alerts": alerts,
        "statuses": Counter(statuses),
        "p50": sorted(latencies)[len(latencies) // 2],
        "p99": sorted(latencies)[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "max": max(latencies),
        "intake_seconds": intake_seconds,
        "outage_seconds": up_at - down_at,
        "deliver_seconds": all_delivered_at - up_at,
        "delivered": len(titles),
        "messages": messages,
        "duplicates": sum(n - 1 for n in titles.values()),
        "lost_logged": relay.logs().count("ALERT NOT DELIVERED"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="per client and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per setting, alternating")
    parser.add_argument("--alerts", type=int, default=1000, help="webhooks in the outage drill")
    parser.add_argument("--outage", type=float, default=60.0, help="seconds Telegram is down")
    parser.add_argument("--drill-only", action="store_true", help="skip the on/off comparison")
    args = parser.parse_args()

    with (
        # Spawned, not forked: a forked load process would inherit the fake's listening socket
        # and keep it open while the drill needs Telegram to refuse connections.
        ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as load,
        running_fake_telegram() as fake,
        tempfile.TemporaryDirectory() as directory,
    ):
        logs = Path(directory)
        cpu: dict[tuple[str, int], float] = {}
        runs = (
            []
            if args.drill_only
            else compare_on_and_off(fake, logs, args.requests, args.rounds, load, cpu)
        )
        drill = outage_drill(fake, logs, args.alerts, args.outage, load)
    if runs:
        print_healthy_table(runs, cpu)
    print_drill_table(drill)


def print_healthy_table(runs: list[Run], cpu: dict[tuple[str, int], float]) -> None:
    print("Telegram healthy; gunicorn wsgi:app, project gunicorn.conf.py, 2 workers")
    print()
    print(
        "| clients | relay | webhooks | webhooks/s | p50 ms | p99 ms | max ms "
        "| worker CPU ms per webhook | answers |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for run in sorted(runs, key=lambda r: (r.concurrency, r.app != "spool on")):
        statuses = ", ".join(f"{code}x{n}" for code, n in sorted(run.statuses.items()))
        cpu_ms = cpu[(run.app, run.concurrency)] / len(run.latencies) * 1000
        print(
            f"| {run.concurrency} | {run.app} | {len(run.latencies)} | {run.rate:.3g} "
            f"| {run.percentile(0.5) * 1000:.1f} | {run.percentile(0.99) * 1000:.1f} "
            f"| {max(run.latencies) * 1000:.0f} | {cpu_ms:.2f} | {statuses} |"
        )
    print()
    by_key = {(r.app, r.concurrency): r for r in runs}
    for concurrency in (1, 16):
        on, off = by_key[("spool on", concurrency)], by_key[("spool off", concurrency)]
        delta = (on.percentile(0.5) - off.percentile(0.5)) * 1000
        p99_delta = (on.percentile(0.99) - off.percentile(0.99)) * 1000
        verdict = "" if concurrency != 1 else (" (meets" if delta <= 2 else " (MISSES") + " +2 ms)"
        cpu_delta = (
            cpu[("spool on", concurrency)] / len(on.latencies)
            - cpu[("spool off", concurrency)] / len(off.latencies)
        ) * 1000
        print(
            f"concurrency {concurrency}: the spool adds {delta:+.2f} ms at p50{verdict}, "
            f"{p99_delta:+.2f} ms at p99, {cpu_delta:+.2f} ms of worker CPU per webhook"
        )
    print()


def print_drill_table(drill: dict[str, Any]) -> None:
    statuses = ", ".join(f"{code}x{n}" for code, n in sorted(drill["statuses"].items()))
    print(
        f"Outage drill: {drill['alerts']} webhooks at concurrency 16 while Telegram refuses "
        f"connections for {drill['outage_seconds']:.0f} s, then recovers"
    )
    print()
    print("| measure | value |")
    print("|---|---:|")
    print(f"| answers | {statuses} |")
    print(
        f"| answer p50 / p99 / max | {drill['p50'] * 1000:.1f} / {drill['p99'] * 1000:.1f} / "
        f"{drill['max'] * 1000:.0f} ms |"
    )
    print(f"| intake of all webhooks | {drill['intake_seconds']:.1f} s |")
    print(f"| recovery until all delivered | {drill['deliver_seconds']:.1f} s |")
    print(f"| delivered | {drill['delivered']} of {drill['alerts']} |")
    print(f"| messages used | {drill['messages']} |")
    print(f"| duplicates | {drill['duplicates']} |")
    print(f"| 'ALERT NOT DELIVERED' in the log | {drill['lost_logged']} |")
    print()
    met = (
        drill["delivered"] == drill["alerts"]
        and drill["duplicates"] == 0
        and drill["max"] <= SEND_TIMEOUT
    )
    print(
        "drill: "
        + ("meets" if met else "MISSES")
        + f" the target ({drill['alerts']} delivered, 0 duplicates, no answer over "
        f"{SEND_TIMEOUT:g} s)"
    )


if __name__ == "__main__":
    main()
