"""Small helpers shared by the end-to-end tests."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from relay_app.core.pacing import TELEGRAMS, Pace
from relay_app.core.routing import Destination
from relay_app.spool import Queue
from relay_app.spool.database import Database
from relay_app.spool.postgres.database import PgDatabase
from relay_app.words import ENGLISH
from tests.e2e.relay_process import CHAT_ID, SECRET, SEND_TIMEOUT, relay_env, run_here
from tests.fake_telegram import FakeTelegram, Posted
from tests.payloads import issue, issue_alert
from tests.telegram_rules import visible_text

# GlitchTip waits 10 s; the relay answers within its one attempt's timeout plus the spool's
# writes around it. Those wait for the lock behind the other workers' writes, which on CI's two
# busy cores once took more than 0.5 s: the bound still tells an attempt cut at its deadline
# from one that hangs.
ANSWER_BOUND = SEND_TIMEOUT + 1.0


def post(url: str, payload: dict[str, Any]) -> tuple[requests.Response, float]:
    started = time.monotonic()
    reply = requests.post(url, json=payload, timeout=10)
    return reply, time.monotonic() - started


def post_paced(
    url: str | list[str], payloads: list[dict[str, Any]], *, seconds: float
) -> list[tuple[requests.Response, float]]:
    """Post the payloads evenly over `seconds`, as GlitchTip's workers would in a storm; each
    answer with how long it took. Several URLs take turns, as behind a round-robin load
    balancer, which sends a webhook a replica refuses to the next one."""
    started = time.monotonic()
    gap = seconds / len(payloads)
    urls = [url] if isinstance(url, str) else url

    def send(numbered: tuple[int, dict[str, Any]]) -> tuple[requests.Response, float]:
        number, payload = numbered
        time.sleep(max(0.0, started + number * gap - time.monotonic()))
        for turn in range(len(urls)):
            try:
                return post(urls[(number + turn) % len(urls)], payload)
            except requests.ConnectionError:
                if turn == len(urls) - 1:
                    raise
        raise AssertionError("unreachable")

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(send, enumerate(payloads)))


def titled(title: str) -> dict[str, Any]:
    """An alert about an issue of its own (its link), named by its title."""
    return issue_alert(issue(zlib.crc32(title.encode()) % 1_000_000 + 1, title=title))


# How the webhook answers an alert it did not send at once: 202 when its chat's turn had not
# come (pacing), 502 when its attempt failed; either way it is queued.
QUEUED = {202, 502}


# A backlog's line (message/lines.py): severity, short id, title, then ' · ' and the rest.
_BACKLOG_LINE = re.compile(r"^[🔴🟠⚪🔵] [A-Z0-9][A-Z0-9_]*(?:-[A-Z0-9]+)+ (.+?)(?: · .*)?$")


def titles_in(text: str) -> list[str]:
    """The issue titles in a message's visible text: one for an alert sent alone, several for
    a digest. Each issue is a paragraph of its own (its title, then 'in <culprit>'), or, in a
    backlog's digest, a line of its own, after a head that may say the beginning every title
    shares once ('Deployed build…'), each line then showing the rest ('…12')."""
    paragraphs = [paragraph.split("\n") for paragraph in text.split("\n\n")]
    titles = []
    start = ""
    for lines in paragraphs:
        if len(lines) > 1 and lines[1].startswith("in "):
            titles.append(lines[0])
            continue
        found = [found.group(1) for line in lines if (found := _BACKLOG_LINE.match(line))]
        if not found:
            shared = [m.group(1) for line in lines if (m := _SHARED_START.match(line))]
            start = shared[0] if shared else start
            continue
        titles += [start + title[1:] if title.startswith("…") else title for title in found]
    return titles


# A backlog head's line with the beginning every title shares: 'Deployed build… · app.views'.
_SHARED_START = re.compile(r"^(?![🔴🟠⚪🔵] )(.+?)…(?: · .*)?$")


def delivered_titles(fake: FakeTelegram) -> list[str]:
    return [title for text in fake.texts() for title in titles_in(text)]


def first_seen(fake: FakeTelegram) -> dict[str, float]:
    """When each alert first reached the chat (its message was posted), by title."""
    seen: dict[str, float] = {}
    for received in fake.sends():
        if received.outcome == "accepted":
            for title in titles_in(_visible(received.body)):
                seen.setdefault(title, received.at)
    return seen


def posted_in_order(fake: FakeTelegram) -> list[str]:
    """The titles in the order they first reached the chat."""
    seen = first_seen(fake)
    return sorted(seen, key=lambda title: seen[title])


def copies(fake: FakeTelegram) -> collections.Counter[str]:
    """How many times each alert was posted: more than once only where a reply was lost."""
    counted: collections.Counter[str] = collections.Counter()
    for received in fake.sends():
        if received.outcome == "accepted":
            counted.update(titles_in(_visible(received.body)))
    return counted


# An attempt the relay knows Telegram took, as its log says it (delivery/job.py).
# Labels: '#12' (the spool), 'local-3@web-1' (a host's own file), 'mem-41-2' (memory).
_DELIVERED = re.compile(
    r"attempt \d+ of alert\(s\) ([#\w@.-]+(?:, [#\w@.-]+)*) to .*\): delivered ", re.MULTILINE
)


def unexplained_repeats(fake: FakeTelegram, logs: list[str]) -> str | None:
    """What was posted again that the relays could have known not to post, if anything. An
    alert Telegram posted but whose answer never reached the relay (its deadline passed while
    Telegram was slow, or the relay was killed) is sent again, saying so: that copy is the
    contract. A copy that does not say so, or an alert the relays' `logs` say Telegram took
    twice (two relays on one alert), is not."""
    seen: set[str] = set()
    unsaid: list[str] = []
    for received in fake.sends():
        if received.outcome != "accepted":
            continue
        text = _visible(received.body)
        titles = titles_in(text)
        if not text.startswith((ENGLISH.repeat_note, ENGLISH.repeat_note_digest)):
            unsaid += [title for title in titles if title in seen]
        seen.update(titles)
    if unsaid:
        return f"posted again without saying so: {unsaid}"
    taken = collections.Counter(
        label
        for log in logs
        for match in _DELIVERED.finditer(log)
        for label in match[1].split(", ")
    )
    if twice := sorted(label for label, count in taken.items() if count > 1):
        return f"delivered by two attempts, as the relays logged them: {twice}"
    return None


def accepted_since(fake: FakeTelegram, since: float) -> int:
    """Messages posted since `since` (time.monotonic())."""
    return sum(1 for r in fake.sends() if r.outcome == "accepted" and r.at >= since)


def _visible(body: dict[str, Any]) -> str:
    return visible_text(body["text"], parse_mode=body.get("parse_mode"))


def spool_settled(spool: str) -> bool:
    """Whether the relays on this spool (a SQLite file's path, or PostgreSQL's URL) have nothing
    left to send: no job pending, no lane claimed. From then on no copy of an alert can arrive
    (a retry would be pending first), so a test asserts exactly-once after this, not after a
    sleep."""
    store = (
        PgDatabase(spool, for_service=False)
        if spool.startswith("postgresql")
        else Database(spool, for_service=False)
    )
    try:
        busy = store.read(
            lambda tx: tx.one(
                "SELECT (SELECT count(*) FROM jobs WHERE state = 'pending')"
                " + (SELECT count(*) FROM lanes WHERE token IS NOT NULL) AS busy"
            )
        )
    finally:
        store.close()
    return int(busy["busy"]) == 0


def card_kept(spool: str, posted: Posted) -> bool:
    """Whether the relay keeps the posted message as a card: Telegram shows it a moment before
    the relay has recorded its buttons, and a person's press comes seconds later, a test's at
    once."""
    store = Database(spool, for_service=False)
    try:
        found = store.read(
            lambda tx: tx.one(
                "SELECT 1 AS kept FROM issue_buttons WHERE chat = ? AND message_id = ?",
                (posted.chat, posted.message_id),
            )
        )
    finally:
        store.close()
    return found is not None


def turn_has_come(spool_path: str, destination: Destination, pace: Pace = TELEGRAMS) -> bool:
    """Whether the chat's turn has come, as the relays on this spool pace it (their `pace`):
    the next webhook for it is attempted at once."""
    store = Database(spool_path, for_service=False)
    try:
        now = time.time()
        return Queue(store, pace=pace).next_turn(destination, now=now) <= now
    finally:
        store.close()


def wait_until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


def register_webhook(fake: FakeTelegram, relay_url: str, variables: dict[str, str]) -> None:
    """Telegram posts the bot's updates to the relay, as the operator sets it up: 'relay-app
    telegram-webhook set', run with the relay's `variables`."""
    registered = run_relay_app(relay_env(fake, **variables), "telegram-webhook", "set", relay_url)
    assert registered.returncode == 0, registered.stderr
    assert fake.webhook_url == f"{relay_url}/telegram/{SECRET}"


def run_relay_app(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `relay-app` command, run from the project's directory as an operator
    would, with these variables on top of the test's own environment."""
    return run_here([str(Path(sys.executable).with_name("relay-app")), *args], environ)


def once_edited(fake: FakeTelegram, posted: Posted, shows: str, timeout: float = 15) -> Posted:
    """The message as it stands once an edit made it show `shows` (a regular expression): a
    card's edit is a job, sent in the chat's turn, after the press is answered."""

    def now() -> Posted:
        return fake.message(posted.chat, posted.message_id)

    assert wait_until(lambda: re.search(shows, now().visible()) is not None, timeout), (
        now().visible()
    )
    return now()


def once_offering(fake: FakeTelegram, posted: Posted, label: str, timeout: float = 15) -> Posted:
    """The message as it stands once its buttons offer `label` (its card's edit sent)."""

    def now() -> Posted:
        return fake.message(posted.chat, posted.message_id)

    offered = wait_until(lambda: any(b["text"] == label for b in now().buttons()), timeout)
    assert offered, [b["text"] for b in now().buttons()]
    return now()


# From a press to its answer: the relay asks GlitchTip, queues the card's edit and answers,
# each a local round trip.
ANSWER_WITHIN = 10.0
# Each card's edit and each reply waits for a turn of the chat's own (a group's: 3 s): a
# quarter of that (RELAY_TIME_SCALE), as the fake keeps no limits.
CHAT_SCALE = "0.25"


def only_message(fake: FakeTelegram) -> Posted:
    """The one message in the default chat, as it stands (the fake's copy follows its edits)."""
    assert wait_until(lambda: len(fake.posted_to(CHAT_ID)) == 1, timeout=10)
    [posted] = fake.posted_to(CHAT_ID)
    return posted


def only_card(fake: FakeTelegram, spool: str) -> Posted:
    """The one message in the default chat, once the relay keeps it as a card (a message sent
    in the background is shown a moment before: a test's press would come first)."""
    posted = only_message(fake)
    assert wait_until(lambda: card_kept(spool, posted), timeout=10)
    return posted


def alert_for(fake_glitchtip: Any, *numbers: int) -> dict[str, Any]:
    """An issue alert for issues the fake GlitchTip has, numbered as given, short ids
    BACKEND-<n>A (in each issue's section, as GlitchTip names them)."""
    links = [fake_glitchtip.add_issue(n, f"BACKEND-{n}A") for n in numbers]
    payload = issue_alert(*(issue(n, link=link) for n, link in zip(numbers, links, strict=True)))
    for section, n, link in zip(payload["sections"], numbers, links, strict=True):
        section["activitySubtitle"] = f"[View Issue BACKEND-{n}A]({link})"
    return payload


def labels(posted: Posted) -> list[str]:
    """The texts of a message's buttons, in order."""
    return [button["text"] for button in posted.buttons()]


def answered(fake: FakeTelegram, press_id: str) -> dict[str, Any]:
    """The relay's answer to a press, once it came."""
    answer = fake.wait_for_answer(press_id, timeout=ANSWER_WITHIN)
    assert answer is not None, "the press was never answered"
    return answer
