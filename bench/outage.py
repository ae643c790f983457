"""What happens when Telegram comes back: alerts during an outage of each kind, then recovery.

The real `gunicorn wsgi:app` with the project's gunicorn.conf.py and the relay's defaults
(2 workers, RELAY_SEND_TIMEOUT=5, RELAY_RETRY_ATTEMPTS=3, RELAY_RETRY_WAIT=30), a fresh spool
each scenario, against the fake Telegram. For each scenario it prints the time from Telegram
answering again to the last alert being visible in the chat, the messages used after
recovery, whether the alerts reached the chat oldest first, the requests made during the
outage (sendMessage and getMe), and duplicates. Run by hand (about four minutes):

    .venv/bin/python bench/outage.py [--only NAME ...] [--workers N]

Scenarios (the rows of issue 11's table):
  500        Telegram answers 500 to everything for 30 s while 10 alerts arrive 3 s apart
  refused    connections refused for 30 s while 10 alerts arrive 3 s apart
  hang       Telegram hangs for 20 s; 5 alerts at once
  loss       25% of requests lost (half before Telegram saw them, half their reply); 40 alerts
  sigkill    connections refused, 20 alerts, the relay killed (SIGKILL) and restarted
  429        a flood wait of 5 s on the chat; 6 alerts 0.3 s apart
  backlog    60 alerts over a 20 s outage (refused)
  thousand   1000 distinct alerts over a 60 s outage (refused), then a Telegram that holds the
             group to one message every 3 s (`--only thousand` runs it alone, in about two
             minutes); its own table: time from Telegram's return until the last alert is
             visible, messages used, 429s, duplicates

Targets (issue 11): recovery to last alert at most 3 s for 500, hang and sigkill, in at most 3
messages for 500, oldest first everywhere, at most 1 request per alert and 1 per 2 s during an
outage, duplicates only where a reply was lost, loss done within 35 s.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from tests.e2e.helpers import (  # noqa: E402
    accepted_since,
    copies,
    first_seen,
    post,
    posted_in_order,
    titled,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402
from tests.payloads import issue, issue_alert  # noqa: E402
from tests.prometheus import parse  # noqa: E402

DEFAULTS = {"RELAY_SEND_TIMEOUT": "5", "RELAY_RETRY_ATTEMPTS": "3", "RELAY_RETRY_WAIT": "30"}
# Every wait below ends by itself: no scenario runs past this.
WATCH_SECONDS = 120.0


@dataclass
class Row:
    scenario: str
    alerts: int
    delivered: int
    after_recovery: float | None  # Telegram answering again to the last alert visible
    messages: int  # posted after recovery
    in_order: bool
    sends_during: int | None  # sendMessage requests while Telegram failed
    questions_during: int | None  # getMe
    outage: float
    duplicates: int
    lost_replies: int


class Run:
    """One scenario's relay (or relays, after a restart) against its fake Telegram."""

    def __init__(self, fake: FakeTelegram, workdir: Path, workers: int, name: str) -> None:
        self.fake = fake
        self.workdir = workdir
        self.workers = workers
        self.name = name
        self.relays: list[RelayProcess] = []

    def start(self) -> RelayProcess:
        env = relay_env(
            self.fake,
            RELAY_SPOOL_PATH=str(self.workdir / f"{self.name}.sqlite3"),
            WEB_CONCURRENCY=str(self.workers),
            **DEFAULTS,
        )
        env.pop("TELEGRAM_THREAD_ID")
        log = self.workdir / f"{self.name}-{len(self.relays)}.log"
        relay = RelayProcess(env, log, telegram=self.fake).wait_ready()
        self.relays.append(relay)
        return relay

    def stop(self) -> None:
        for relay in self.relays:
            relay.stop()

    def counted_requests(self, relay: RelayProcess) -> tuple[int, int]:
        """(attempts, questions) the relay itself counted: refused ones never reach the fake."""
        samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
        attempts = sum(v for (n, _), v in samples.items() if n == "relay_delivery_attempts_total")
        questions = sum(v for (n, _), v in samples.items() if n == "relay_telegram_probes_total")
        return int(attempts), int(questions)

    def row(
        self,
        titles: list[str],
        recovered: float,
        outage: float,
        during: tuple[int | None, int | None],
    ) -> Row:
        """The scenario's row; `titles` in the order the alerts arrived."""
        wait_until(lambda: len(first_seen(self.fake)) == len(titles), timeout=WATCH_SECONDS)
        time.sleep(2)  # a duplicate would arrive in this time
        seen = first_seen(self.fake)
        counted = copies(self.fake)
        return Row(
            scenario=self.name,
            alerts=len(titles),
            delivered=len(set(seen) & set(titles)),
            after_recovery=max(seen.values()) - recovered if len(seen) == len(titles) else None,
            messages=accepted_since(self.fake, recovered),
            in_order=posted_in_order(self.fake) == [t for t in titles if t in seen],
            sends_during=during[0],
            questions_during=during[1],
            outage=outage,
            duplicates=sum(n - 1 for n in counted.values()),
            lost_replies=sum(1 for r in self.fake.sends() if r.reply_lost),
        )


def _seen_during(fake: FakeTelegram, start: float, end: float) -> tuple[int, int]:
    sends = sum(1 for r in fake.sends() if start <= r.at < end)
    questions = sum(1 for r in fake.questions() if start <= r.at < end)
    return sends, questions


def failing(run: Run, *, status: int | None) -> Row:
    """Telegram answers `status` (or refuses connections) for 30 s; 10 alerts 3 s apart."""
    relay = run.start()
    titles = [f"{run.name} {n:02}" for n in range(10)]
    started = time.monotonic()
    if status is None:
        run.fake.stop()
    else:
        run.fake.set("error", status=status, description="Internal Server Error")
    for number, title in enumerate(titles):
        time.sleep(max(0.0, started + 3 * number - time.monotonic()))
        post(relay.webhook_url, titled(title))
    time.sleep(max(0.0, started + 30 - time.monotonic()))
    if status is None:
        during: tuple[int | None, int | None] = run.counted_requests(relay)
        run.fake.start()
    else:
        run.fake.set("ok")
        during = _seen_during(run.fake, started, time.monotonic())
    recovered = time.monotonic()
    return run.row(titles, recovered, recovered - started, during)


def hang(run: Run) -> Row:
    relay = run.start()
    titles = [f"hang {n}" for n in range(5)]
    run.fake.set("hang")
    started = time.monotonic()
    with ThreadPoolExecutor(5) as pool:
        replies = list(pool.map(lambda title: post(relay.webhook_url, titled(title)), titles))
    # Posted at once: the order they arrived in is the order of their spool ids.
    ids = [int(reply.json()["alert"].lstrip("#")) for reply, _ in replies]
    arrived = [title for _, title in sorted(zip(ids, titles, strict=True))]
    time.sleep(max(0.0, started + 20 - time.monotonic()))
    run.fake.set("ok")
    recovered = time.monotonic()
    during = _seen_during(run.fake, started, recovered)
    return run.row(arrived, recovered, recovered - started, during)


def loss(run: Run) -> Row:
    relay = run.start()
    titles = [f"loss {n:02}" for n in range(40)]
    run.fake.set("ok", drop_rate=0.125, lost_reply_rate=0.125)
    started = time.monotonic()
    for title in titles:
        post(relay.webhook_url, titled(title))
    row = run.row(titles, started, 0.0, (None, None))
    row.after_recovery = max(first_seen(run.fake).values()) - started  # from the first alert
    return row


def sigkill(run: Run) -> Row:
    relay = run.start()
    titles = [f"sigkill {n:02}" for n in range(20)]
    run.fake.stop()
    started = time.monotonic()
    for title in titles:
        post(relay.webhook_url, titled(title))
    wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=20)
    during = run.counted_requests(relay)
    relay.crash()
    run.fake.start()
    run.start()
    recovered = time.monotonic()  # the restarted relay is ready, and Telegram is back
    return run.row(titles, recovered, recovered - started, during)


def rate_limited(run: Run) -> Row:
    run.fake.limits = True
    relay = run.start()
    titles = [f"429 {n}" for n in range(6)]
    run.fake.flood(CHAT_ID, 5.0)
    started = time.monotonic()
    for title in titles:
        post(relay.webhook_url, titled(title))
        time.sleep(0.3)
    recovered = started + 5.0
    return run.row(titles, recovered, 5.0, _seen_during(run.fake, started, recovered))


def backlog(run: Run) -> Row:
    relay = run.start()
    titles = [f"backlog {n:02}" for n in range(60)]
    run.fake.stop()
    started = time.monotonic()
    for number, title in enumerate(titles):
        time.sleep(max(0.0, started + number / 3 - time.monotonic()))
        post(relay.webhook_url, titled(title))
    time.sleep(max(0.0, started + 20 - time.monotonic()))
    during = run.counted_requests(relay)
    run.fake.start()
    recovered = time.monotonic()
    return run.row(titles, recovered, recovered - started, during)


THOUSAND = 1000
THOUSAND_OUTAGE = 60.0
THOUSAND_GROUP_INTERVAL = 3.0
_SHORT_ID = re.compile(r"\bSHOP-(\d+)\b")


@dataclass
class DrillRow:
    alerts: int
    visible: int
    after_return: float | None
    messages: int
    too_many_requests: int
    in_order: bool
    duplicates: int


def thousand(workers: int, workdir: Path) -> DrillRow:
    """1000 distinct alerts (each its own issue, short id SHOP-n) arrive evenly through a 60 s
    outage; then Telegram is back, holding the group to a message every 3 s."""
    with running_fake_telegram(limits=True, group_interval=THOUSAND_GROUP_INTERVAL) as fake:
        run = Run(fake, workdir, workers, "thousand")
        try:
            relay = run.start()
            fake.stop()
            started = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                for number in range(1, THOUSAND + 1):
                    time.sleep(max(0.0, started + number * 0.055 - time.monotonic()))
                    pool.submit(post, relay.webhook_url, _shop_alert(number))
            time.sleep(max(0.0, started + THOUSAND_OUTAGE - time.monotonic()))
            fake.start()
            returned = time.monotonic()
            wait_until(lambda: len(_first_posted(fake)) == THOUSAND, timeout=WATCH_SECONDS)
            time.sleep(3)  # a duplicate would arrive in this time
            first = _first_posted(fake)
            copies_of = _copies(fake)
            order = sorted(first, key=lambda n: (first[n], n))
            return DrillRow(
                alerts=THOUSAND,
                visible=len(first),
                after_return=max(first.values()) - returned if len(first) == THOUSAND else None,
                messages=accepted_since(fake, returned),
                too_many_requests=len(fake.too_many_requests()),
                in_order=order == sorted(first),
                duplicates=sum(n - 1 for n in copies_of.values()),
            )
        finally:
            run.stop()


def _shop_alert(number: int) -> dict[str, Any]:
    """An alert as GlitchTip sends it for issue SHOP-<number>, with a realistic title."""
    link = f"https://glitchtip.example.org/acme/issues/{number}"
    title = f"TimeoutError: upstream checkout-api did not answer within 30 s (order {number})"
    payload = issue_alert(issue(number, title=title, link=link, culprit="shop.checkout.pay"))
    payload["sections"][0]["activitySubtitle"] = f"[View Issue SHOP-{number}]({link})"
    return payload


def _ids_posted(fake: FakeTelegram) -> list[tuple[float, list[int]]]:
    """Each accepted message's time and the issues (SHOP-n) it shows."""
    return [
        (received.at, [int(n) for n in _SHORT_ID.findall(str(received.body.get("text", "")))])
        for received in fake.sends()
        if received.outcome == "accepted"
    ]


def _first_posted(fake: FakeTelegram) -> dict[int, float]:
    seen: dict[int, float] = {}
    for at, numbers in _ids_posted(fake):
        for number in numbers:
            seen.setdefault(number, at)
    return seen


def _copies(fake: FakeTelegram) -> collections.Counter[int]:
    counted: collections.Counter[int] = collections.Counter()
    for _, numbers in _ids_posted(fake):
        counted.update(set(numbers))
    return counted


def print_thousand(row: DrillRow, workers: int) -> None:
    print(
        f"\n{workers} workers; {row.alerts} distinct alerts over a {THOUSAND_OUTAGE:.0f} s outage; "
        f"Telegram back holding the group to one message every {THOUSAND_GROUP_INTERVAL:.0f} s\n"
    )
    print(
        "| alerts visible | last alert after Telegram's return | messages used | 429s "
        "| oldest first | duplicates |"
    )
    print("|---:|---:|---:|---:|---|---:|")
    after = f"{row.after_return:.1f} s" if row.after_return is not None else "not within 120 s"
    print(
        f"| {row.visible}/{row.alerts} | {after} | {row.messages} | {row.too_many_requests} "
        f"| {'yes' if row.in_order else 'NO'} | {row.duplicates} |"
    )


SCENARIOS: dict[str, Callable[[Run], Row]] = {
    "500": lambda run: failing(run, status=500),
    "refused": lambda run: failing(run, status=None),
    "hang": hang,
    "loss": loss,
    "sigkill": sigkill,
    "429": rate_limited,
    "backlog": backlog,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only", nargs="+", choices=[*SCENARIOS, "thousand"], help="run these scenarios only"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    args = parser.parse_args()
    rows = []
    drill = None
    with tempfile.TemporaryDirectory() as directory:
        if args.only is None or "thousand" in args.only:
            drill = thousand(args.workers, Path(directory))
        for name in [n for n in args.only or SCENARIOS if n != "thousand"]:
            with running_fake_telegram() as fake:
                run = Run(fake, Path(directory), args.workers, name)
                try:
                    rows.append(SCENARIOS[name](run))
                finally:
                    run.stop()
    if drill is not None:
        print_thousand(drill, args.workers)
    if not rows:
        return
    print(f"\n{args.workers} workers, RELAY_SEND_TIMEOUT=5, RELAY_RETRY_WAIT=30 (the defaults)\n")
    print(
        "| scenario | delivered | last alert after recovery | messages after | oldest first "
        "| requests during outage (send + getMe) | duplicates (replies lost) |"
    )
    print("|---|---:|---:|---:|---|---|---:|")
    for r in rows:
        after = f"{r.after_recovery:.2f} s" if r.after_recovery is not None else "not yet"
        if r.sends_during is None or r.questions_during is None:
            during = "-"
        else:
            during = (
                f"{r.sends_during} + {r.questions_during} in {r.outage:.0f} s ({r.alerts} alerts)"
            )
        print(
            f"| {r.scenario} | {r.delivered}/{r.alerts} | {after} | {r.messages} "
            f"| {'yes' if r.in_order else 'NO'} | {during} | {r.duplicates} ({r.lost_replies}) |"
        )
    print("\nloss: the time is from the first alert to the last one visible.")


if __name__ == "__main__":
    main()
