"""An alert storm into one Telegram group, with and without digests.

200 alerts posted evenly over 10 s to the relay's default chat, a group, while a fake Telegram
enforces one message a second per chat and twenty a minute per group (429 with retry_after
beyond them). Reports, for RELAY_COALESCE=1 (the default) and RELAY_COALESCE=0: the time until
every alert was visible in the chat, the messages used, the 429s received, duplicates and
alerts still missing, and the webhooks' answer times.

The real `gunicorn wsgi:app` with the project's gunicorn.conf.py and the relay's defaults
(2 workers, RELAY_SEND_TIMEOUT=5), a fresh spool each run. Without digests, 200 messages at
twenty a minute take ten minutes; the run stops watching after --watch seconds (default 90)
and reports what had arrived, unless --full waits for all of it. Run by hand:

    .venv/bin/python bench/storm.py [--full] [--watch SECONDS] [--only on|off|sentry]

Target (issue 4): with digests, all 200 visible within 60 s, in at most 20 messages, none
lost, none duplicated, every webhook answered within RELAY_SEND_TIMEOUT.

`--only sentry` (issue 52): Sentry's signed webhooks, each a different issue alert, from 16
clients at once, with Telegram healthy and then hanging (each send waits RELAY_SEND_TIMEOUT):
the answer's p50, p99 and max, and whether every alert reached the chat once Telegram was
back. Target: p99 well under Sentry's 1 s timeout whatever Telegram does. With SENTRY_API_TOKEN
and the fake Sentry's API (issue 63: each alert's issue looked up for its short id), a third
run has that API hang (each read held 8 s, past the look-up's deadline): the answers should not
show it, and the cards say how many carry their short id.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import hmac
import json
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench.payload import with_new_issue  # noqa: E402
from tests.e2e.helpers import post_paced  # noqa: E402
from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_sentry import ORG, FakeSentry, running_fake_sentry  # noqa: E402
from tests.fake_sentry import TOKEN as SENTRY_TOKEN  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402

ALERTS = 200
STORM_SECONDS = 10.0
SEND_TIMEOUT = 5.0
FULL_WATCH_SECONDS = 900.0  # ten minutes of 20 messages a minute, and margin
STORM_TITLE = re.compile(r"Storm alert \d{3}")
SENTRY_SAMPLE = ROOT / "tests" / "sentry_samples" / "issue_alert.json"


@dataclass
class Result:
    mode: str
    visible_after: float | None  # seconds from the first webhook until the last alert was seen
    watched: float
    delivered: int
    duplicates: int
    messages: int
    too_many: int
    answer_p50: float
    answer_p99: float
    answer_max: float
    statuses: collections.Counter[int]


def delivered_titles(fake: FakeTelegram) -> list[str]:
    """Every storm alert's title in the chat, once per time it was posted."""
    return [title for text in fake.texts() for title in STORM_TITLE.findall(text)]


def storm_payload(n: int) -> dict[str, Any]:
    return with_new_issue(f"Storm alert {n:03d}", n + 100)


def run(coalesce: bool, watch: float, workdir: Path) -> Result:
    mode = "digests (RELAY_COALESCE=1)" if coalesce else "one message each (RELAY_COALESCE=0)"
    titles = {f"Storm alert {n:03d}" for n in range(ALERTS)}
    with running_fake_telegram(limits=True) as fake:
        env = relay_env(
            fake,
            RELAY_SPOOL_PATH=str(workdir / f"spool-{int(coalesce)}.sqlite3"),
            RELAY_SEND_TIMEOUT=str(SEND_TIMEOUT),
            RELAY_RETRY_WAIT="30",
            RELAY_COALESCE="1" if coalesce else "0",
        )
        env.pop("TELEGRAM_THREAD_ID")
        relay = RelayProcess(env, workdir / f"relay-{int(coalesce)}.log").wait_ready()
        try:
            started = time.monotonic()
            answers = post_paced(
                relay.webhook_url,
                [storm_payload(n) for n in range(ALERTS)],
                seconds=STORM_SECONDS,
            )
            visible_after = None
            while time.monotonic() - started < watch:
                if set(delivered_titles(fake)) >= titles:
                    visible_after = time.monotonic() - started
                    break
                time.sleep(0.1)
            time.sleep(2)  # a duplicate would arrive in this time
            watched = time.monotonic() - started
            seen = collections.Counter(delivered_titles(fake))
        finally:
            relay.stop()
        times = sorted(took for _, took in answers)
        return Result(
            mode=mode,
            visible_after=visible_after,
            watched=watched,
            delivered=len(set(seen) & titles),
            duplicates=sum(count - 1 for count in seen.values()),
            messages=len(fake.messages),
            too_many=len(fake.too_many_requests()),
            answer_p50=statistics.median(times),
            answer_p99=times[int(len(times) * 0.99) - 1],
            answer_max=times[-1],
            statuses=collections.Counter(reply.status_code for reply, _ in answers),
        )


SENTRY_CLIENTS = 16
SENTRY_PER_CLIENT = 25
SENTRY_SECRET = "b3" * 32


@dataclass
class SentryRun:
    telegram: str
    api: str
    times: list[float]
    statuses: collections.Counter[int]
    delivered: int
    sent: int
    short_ids: int
    lookups: dict[str, float]


# (Telegram, Sentry's API) in each run.
SENTRY_RUNS = (("healthy", "answering"), ("hanging", "answering"), ("healthy", "hanging"))
# Past the look-up's own deadline (glitchtip/lookups.py: CALL_TIMEOUT, 5 s).
API_HANG = 8.0


def sentry_storm(workdir: Path) -> list[SentryRun]:
    """Signed Sentry issue alerts from SENTRY_CLIENTS clients, Telegram healthy then hanging,
    then Sentry's API hanging."""
    runs: list[SentryRun] = []
    with running_fake_telegram() as fake, running_fake_sentry() as sentry:
        env = relay_env(
            fake,
            RELAY_SPOOL_PATH=str(workdir / "spool-sentry.sqlite3"),
            RELAY_SEND_TIMEOUT=str(SEND_TIMEOUT),
            RELAY_RETRY_WAIT="1",
            SENTRY_CLIENT_SECRET=SENTRY_SECRET,
            SENTRY_API_TOKEN=SENTRY_TOKEN,
            SENTRY_URL=sentry.url,
            TELEGRAM_UPDATES="off",
        )
        env.pop("TELEGRAM_THREAD_ID")
        relay = RelayProcess(env, workdir / "relay-sentry.log").wait_ready()
        before: dict[str, float] = {}
        try:
            for telegram, api in SENTRY_RUNS:
                first = len(runs) * SENTRY_CLIENTS * SENTRY_PER_CLIENT
                for number in range(first, first + SENTRY_CLIENTS * SENTRY_PER_CLIENT):
                    sentry.add_issue(10_000 + number)
                fake.set("ok" if telegram == "healthy" else "hang")
                sentry.read_delay = API_HANG if api == "hanging" else 0.0
                times, statuses = _signed_storm(relay.url, first, sentry)
                fake.set("ok")
                titles = {f"Sentry storm {n:04d}" for n in range(first, first + len(times))}
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline and not titles <= set(sentry_titles(fake)):
                    time.sleep(0.2)
                seen = titles & set(sentry_titles(fake))
                named = _with_short_ids(fake, first, len(times))
                counted = _lookups(relay.url)
                lookups = {k: v - before.get(k, 0.0) for k, v in counted.items()}
                before = counted
                runs.append(
                    SentryRun(
                        telegram,
                        api,
                        sorted(times),
                        statuses,
                        len(seen),
                        len(times),
                        named,
                        lookups,
                    )
                )
                sentry.read_delay = 0.0
        finally:
            relay.stop()
    return runs


LOOKUP_LINE = re.compile(r'^relay_sentry_lookups_total\{outcome="(\w+)"\} ([0-9.e+]+)$', re.M)


def _lookups(relay_url: str) -> dict[str, float]:
    """relay_sentry_lookups_total by outcome, as the relay's /metrics says it now."""
    text = requests.get(f"{relay_url}/metrics", timeout=5).text
    return {outcome: float(value) for outcome, value in LOOKUP_LINE.findall(text)}


def _with_short_ids(fake: FakeTelegram, first: int, count: int) -> int:
    """The alerts of a run whose card names their issue's short id (the fake's FRONT-END-<id>)."""
    texts = "\n".join(message.get("text", "") for message in fake.messages)
    return sum(
        1 for number in range(first, first + count) if f"FRONT-END-{10_000 + number}" in texts
    )


def _signed_storm(
    relay_url: str, first: int, sentry: FakeSentry
) -> tuple[list[float], collections.Counter[int]]:
    """Each client posts SENTRY_PER_CLIENT signed alerts, one after another."""
    times: list[float] = []
    statuses: collections.Counter[int] = collections.Counter()
    lock = threading.Lock()

    def client(index: int) -> None:
        session = requests.Session()
        for n in range(SENTRY_PER_CLIENT):
            number = first + index * SENTRY_PER_CLIENT + n
            body = json.dumps(sentry_alert(number, sentry.url)).encode()
            headers = {
                "Content-Type": "application/json",
                "Request-ID": uuid.uuid4().hex,
                "Sentry-Hook-Resource": "event_alert",
                "Sentry-Hook-Signature": hmac.new(
                    SENTRY_SECRET.encode(), body, hashlib.sha256
                ).hexdigest(),
            }
            started = time.monotonic()
            reply = session.post(
                f"{relay_url}/sentry/webhook", data=body, headers=headers, timeout=15
            )
            took = time.monotonic() - started
            with lock:
                times.append(took)
                statuses[reply.status_code] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(SENTRY_CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times, statuses


def sentry_alert(number: int, sentry_url: str) -> dict[str, Any]:
    """Sentry's documented issue alert (tests/sentry_samples), as its issue `number`, at the
    fake Sentry's address (so that the relay owns it and looks it up)."""
    body: dict[str, Any] = json.loads(SENTRY_SAMPLE.read_text())
    event = body["data"]["event"]
    issue_id = 10_000 + number
    event["issue_id"] = str(issue_id)
    event["event_id"] = f"{number:032x}"
    event["title"] = f"Sentry storm {number:04d}"
    event["web_url"] = f"{sentry_url}/organizations/{ORG}/issues/{issue_id}/events/{number:032x}/"
    event["issue_url"] = f"{sentry_url}/api/0/organizations/{ORG}/issues/{issue_id}/"
    return body


def sentry_titles(fake: FakeTelegram) -> list[str]:
    return [
        found.group(0)
        for message in fake.messages
        for found in re.finditer(r"Sentry storm \d{4}", message.get("text", ""))
    ]


def print_sentry(runs: list[SentryRun]) -> None:
    print(f"\nSentry's signed issue alerts, {SENTRY_CLIENTS} clients x {SENTRY_PER_CLIENT} each;")
    print("2 workers, RELAY_SEND_TIMEOUT=5 (a hanging Telegram holds each send 5 s);")
    print(
        f"SENTRY_API_TOKEN set: each issue looked up (a hanging API holds each read "
        f"{API_HANG:g} s).\n"
    )
    print(
        "| Telegram | Sentry's API | webhooks | answers | p50 ms | p99 ms | max ms "
        "| in the chat, once Telegram was back | with their short id | look-ups |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---|")
    for r in runs:
        answers = ", ".join(f"{n}x {code}" for code, n in sorted(r.statuses.items()))
        p99 = r.times[int(len(r.times) * 0.99) - 1]
        print(
            f"| {r.telegram} | {r.api} | {r.sent} | {answers} "
            f"| {statistics.median(r.times) * 1000:.1f} | {p99 * 1000:.1f} "
            f"| {r.times[-1] * 1000:.1f} | {r.delivered}/{r.sent} | {r.short_ids}/{r.sent} "
            f"| {', '.join(f'{k} {v:g}' for k, v in sorted(r.lookups.items()) if v)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--watch", type=float, default=90.0, help="seconds to watch the chat")
    parser.add_argument("--full", action="store_true", help="wait until every alert arrived")
    parser.add_argument("--only", choices=("on", "off", "sentry"), help="run one mode only")
    args = parser.parse_args()
    if args.only == "sentry":
        with tempfile.TemporaryDirectory() as directory:
            print_sentry(sentry_storm(Path(directory)))
        return
    watch = FULL_WATCH_SECONDS if args.full else args.watch
    modes = {"on": [True], "off": [False]}.get(args.only or "", [True, False])
    with tempfile.TemporaryDirectory() as directory:
        results = [run(coalesce, watch, Path(directory)) for coalesce in modes]
    print(f"\n{ALERTS} alerts over {STORM_SECONDS:g} s into one group; fake Telegram enforces")
    print("1 message/s per chat and 20/min per group. 2 workers, RELAY_SEND_TIMEOUT=5.\n")
    print(
        "| mode | all visible after | alerts seen | messages | 429s | duplicates "
        "| answers | webhook p50 / p99 / max ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for r in results:
        visible = f"{r.visible_after:.1f} s" if r.visible_after is not None else "not yet"
        answers = ", ".join(f"{n}x {code}" for code, n in sorted(r.statuses.items()))
        print(
            f"| {r.mode} | {visible} | {r.delivered}/{ALERTS} after {r.watched:.0f} s "
            f"| {r.messages} | {r.too_many} | {r.duplicates} | {answers} "
            f"| {r.answer_p50 * 1000:.1f} / {r.answer_p99 * 1000:.1f} / {r.answer_max * 1000:.1f} |"
        )
        if r.visible_after is None and r.delivered < ALERTS:
            rest = ALERTS - r.delivered
            print(f"|  | (the other {rest} need about {rest / 20:.0f} more minutes at 20/min) |")


if __name__ == "__main__":
    main()
