"""Alerts first: how long a new alert waits behind what else its chat owes, at a group's pace.

Two scenarios, each the real `gunicorn wsgi:app` (2 workers, the relay's defaults) against a
fake Telegram that keeps Telegram's limits (a group: twenty messages a minute, one every
3.05 s as the relay spreads them), a fresh spool each:

- queued: 1,000 answers to commands and 100 escalation calls wait in the spool for the
  default chat when the relay starts (as a flood before this change left them, or as a tool
  would queue them); once the chat has been busy for a while, one alert is posted.
- flood: 1,000 `/issues` from one member of the served group (not allowed to act), posted
  to the relay's Telegram webhook eight at a time as Telegram delivers updates, then one
  alert.

Reported: the alert's delay (webhook to Telegram accepting it), how many other messages the
chat got between the two, what went next (calls before answers), and, for the flood, the
answers it cost and the refusals counted. Before this change (issue 48, on 003b7e6) the
flood's alert was the 996th message of 1,001, about 50 minutes later. Run by hand:

    .venv/bin/python bench/alerts_first.py [--only queued|flood] [--after SECONDS]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.payload import with_new_issue  # noqa: E402
from relay_app.core.routing import Destination  # noqa: E402
from relay_app.spool import Precedence, on_store  # noqa: E402
from relay_app.spool.database import Database  # noqa: E402
from relay_app.spool.model import NewJob  # noqa: E402
from tests.e2e.helpers import register_webhook  # noqa: E402
from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env  # noqa: E402
from tests.fake_glitchtip import TOKEN, running_fake_glitchtip  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402
from tests.prometheus import parse, value  # noqa: E402

ANSWERS = 1000
CALLS = 100
FLOOD = 1000
ALERT_TITLE = "The alert after them"
WATCH_SECONDS = 60.0  # for the alert, at most; it comes within a turn or two


@dataclass
class Result:
    scenario: str
    delay: float | None  # seconds from its webhook to Telegram accepting it
    before_it: int  # other messages the chat got meanwhile
    next_kinds: str  # what the chat got after it, in order
    answers: int  # messages the flood's answers cost (flood)
    refused: float  # refusals counted (flood)


def chat_messages(fake: FakeTelegram) -> list[tuple[float, str]]:
    return [(r.at, str(r.body.get("text", ""))) for r in fake.messages_to(CHAT_ID)]


def kind_of(text: str) -> str:
    if ALERT_TITLE in text:
        return "alert"
    if "Nobody has taken" in text:
        return "call"
    return "answer"


def queue_what_the_chat_owes(spool_path: Path) -> None:
    """1,000 answers and 100 calls waiting for the default chat, as rows of the spool."""
    spool = on_store(Database(str(spool_path)))
    chat = Destination(int(CHAT_ID))
    now = time.time()
    try:
        for number in range(ANSWERS):
            about = {"say": {"word": "issues_none", "values": {}}, "message_id": 10_000 + number}
            lane = chat.message_lane(10_000 + number)
            spool.queue.add(NewJob("reply", about, chat, Precedence.ANSWER, lane=lane), now=now)
        for number in range(CALLS):
            said = {"word": "escalation_call", "values": {"minutes": "5", "people": "@ops"}}
            lane = chat.message_lane(1_000 + number)
            about = {"say": said, "message_id": 1_000 + number}
            spool.queue.add(NewJob("reply", about, chat, Precedence.CALL, lane=lane), now=now)
    finally:
        spool.close()


def alert_posted(relay: RelayProcess, fake: FakeTelegram, scenario: str) -> Result:
    """Post the alert; watch for it; what the chat got around it."""
    sent_before = len(chat_messages(fake))
    posted_at = time.monotonic()
    requests.post(relay.webhook_url, json=with_new_issue(ALERT_TITLE, 9999), timeout=10)
    delay = None
    while time.monotonic() - posted_at < WATCH_SECONDS:
        seen = [at for at, text in chat_messages(fake) if ALERT_TITLE in text]
        if seen:
            delay = seen[0] - posted_at
            break
        time.sleep(0.05)
    time.sleep(6 * 3.05)  # what the chat gets next: six more turns
    kinds = [kind_of(text) for _, text in chat_messages(fake)[sent_before:]]
    at = kinds.index("alert") if "alert" in kinds else len(kinds)
    return Result(scenario, delay, at, " ".join(kinds[at + 1 :]) or "-", 0, 0.0)


def run_queued(workdir: Path, after: float) -> Result:
    spool_path = workdir / "queued.sqlite3"
    queue_what_the_chat_owes(spool_path)
    with running_fake_telegram(limits=True) as fake:
        fake.add_chat(CHAT_ID)
        env = relay_env(fake, RELAY_SPOOL_PATH=str(spool_path), RELAY_SEND_TIMEOUT="5")
        relay = RelayProcess(env, workdir / "queued.log").wait_ready()
        try:
            time.sleep(after)  # the chat busy with what waited
            return alert_posted(relay, fake, f"queued: {ANSWERS} answers, {CALLS} calls")
        finally:
            relay.stop()


def run_flood(workdir: Path) -> Result:
    with running_fake_telegram(limits=True) as fake, running_fake_glitchtip() as glitchtip:
        fake.add_chat(CHAT_ID)
        variables = {
            "RELAY_SPOOL_PATH": str(workdir / "flood.sqlite3"),
            "RELAY_SEND_TIMEOUT": "5",
            "GLITCHTIP_API_TOKEN": TOKEN,
            "GLITCHTIP_URL": glitchtip.url,
            "TELEGRAM_UPDATES": "webhook",
            "TELEGRAM_ACTION_USER_IDS": "4242",
        }
        relay = RelayProcess(relay_env(fake, **variables), workdir / "flood.log").wait_ready()
        try:
            register_webhook(fake, relay.url, variables)
            started = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(
                    pool.map(
                        lambda _: fake.say(CHAT_ID, "/issues", user_id=666, username="mallory"),
                        range(FLOOD),
                    )
                )
            flooded = time.monotonic() - started
            result = alert_posted(relay, fake, f"flood: {FLOOD} /issues in {flooded:.1f} s")
            samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
            result.refused = value(samples, "relay_answers_refused_total", reason="person")
            result.answers = sum(kind_of(text) == "answer" for _, text in chat_messages(fake))
            return result
        finally:
            relay.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("queued", "flood"))
    parser.add_argument(
        "--after", type=float, default=10.0, help="seconds the chat is busy before the alert"
    )
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as directory:
        if args.only in (None, "queued"):
            results.append(run_queued(Path(directory), args.after))
        if args.only in (None, "flood"):
            results.append(run_flood(Path(directory)))
    print("\nOne alert after what else its chat owes; a group's pace (3.05 s a message).\n")
    print("| scenario | alert's delay | messages between | next six | answers sent | refused |")
    print("|---|---:|---:|---|---:|---:|")
    for r in results:
        delay = f"{r.delay:.2f} s" if r.delay is not None else f"not within {WATCH_SECONDS:g} s"
        print(
            f"| {r.scenario} | {delay} | {r.before_it} | {r.next_kinds} | {r.answers} "
            f"| {r.refused:.0f} |"
        )


if __name__ == "__main__":
    main()
