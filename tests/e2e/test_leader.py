"""One leader for the fleet's chores, end to end: of a relay's workers (and of relays on other
hosts sharing a spool), one holds the leader's lease and polls Telegram's updates, runs the
watcher and the upkeep; when it stalls (SIGSTOP) another takes over within a term and a look,
and the stalled one, let go, stops its chores; when it dies (SIGKILL) a worker on its host takes
over at its next look, one on another host once its term lapses. Presses are answered
throughout, and Telegram never sees two pollers for long. Time runs four times faster
(RELAY_TIME_SCALE): a look every 0.25 s, a term of 1.25 s."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import psycopg

from relay_app.core.timing import PRODUCTION
from relay_app.spool.holders import Holder
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import alert_for, answered, post, wait_until
from tests.e2e.relay_process import CHAT_ID, RelayProcess
from tests.e2e.test_hosts import on_host
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted

SCALE = 0.25
LOOK = PRODUCTION.leader_look * SCALE
TERM = PRODUCTION.leader_term * SCALE
# What a loaded machine adds to a takeover: the processes' own writes and scheduling.
SLACK = 1.5


def leader_in(spool: str) -> Holder | None:
    """The process the leader's lease names, while its term holds (a path, or a database's
    URL)."""
    query = "SELECT holder, until FROM leader"
    if spool.startswith("postgresql://"):
        with psycopg.connect(spool, autocommit=True) as pg:
            row = pg.execute(query).fetchone()
    else:
        with sqlite3.connect(spool) as db:
            row = db.execute(query).fetchone()
        db.close()
    if row is None or row[0] is None or row[1] < time.time():
        return None
    return Holder.parse(row[0])


def chores(glitchtip: FakeGlitchTip, **more: str) -> dict[str, str]:
    return {
        "GLITCHTIP_API_TOKEN": TOKEN,
        "GLITCHTIP_URL": glitchtip.url,
        "RELAY_TIME_SCALE": str(SCALE),
        **more,
    }


def card_in_the_chat(relay: RelayProcess, fake: FakeTelegram, glitchtip: FakeGlitchTip) -> Posted:
    reply, _ = post(relay.webhook_url, alert_for(glitchtip, 5))
    # Sent (200), or queued (202) when a loaded host keeps the spool's first answer past its
    # second (the alert waits in this host's file, and goes once it moves in): the chat is
    # where it is checked.
    assert reply.status_code in (200, 202), reply.text
    assert wait_until(lambda: len(fake.posted_to(CHAT_ID)) == 1, timeout=10)
    return fake.posted_to(CHAT_ID)[0]


def press_is_answered(fake: FakeTelegram, card: Posted) -> None:
    current = fake.message(CHAT_ID, card.message_id)
    verb = "✅ Resolve" if "✅ Resolve" in str(current.keyboard) else "↩️ Reopen"
    answered(fake, fake.press(current, verb))


def test_a_worker_leads_and_another_takes_over_when_it_stalls_or_dies(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    pg_url: str,
    tmp_path: Path,
) -> None:
    # On PostgreSQL, where a worker stopped inside a unit of work has its session ended past
    # that work's budget; on SQLite it would hold the file's write lock, and every writer of
    # the relay would wait for it (SQLite's one lock: test_actions.py kills a leader there).
    spool_path = pg_url
    relay = start_relay(
        **chores(
            fake_glitchtip,
            WEB_CONCURRENCY="2",
            RELAY_SPOOL_URL=pg_url,
            RELAY_SPOOL_PATH="",
            RELAY_LOCAL_SPOOL_PATH=str(tmp_path / "local.sqlite3"),
        )
    )
    card = card_in_the_chat(relay, fake_telegram, fake_glitchtip)
    assert wait_until(lambda: leader_in(spool_path) is not None, timeout=5)
    first = leader_in(spool_path)
    assert first is not None
    assert first.pid in relay.workers()
    press_is_answered(fake_telegram, card)

    # It stalls: the other worker leads within a term and a look, and answers the presses.
    os.kill(first.pid, signal.SIGSTOP)
    stalled_at = time.monotonic()
    try:
        assert wait_until(
            lambda: (now := leader_in(spool_path)) is not None and now.pid != first.pid,
            timeout=TERM + LOOK + SLACK,
        ), relay.logs()
        took = time.monotonic() - stalled_at
        press_is_answered(fake_telegram, card)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert took < TERM + LOOK + SLACK
    # Let go, it finds another leads and stops its chores.
    stepped_down = f"[{first.pid}] [INFO] relay_app.delivery.leadership: this process no longer"
    assert wait_until(lambda: stepped_down in relay.logs(), timeout=5), relay.logs()

    # The new leader dies: the stalled one, alive again, leads at its next look (the dead one
    # is gone from this host: no term to wait out).
    second = leader_in(spool_path)
    assert second is not None
    os.kill(second.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    assert wait_until(
        lambda: (now := leader_in(spool_path)) is not None and now.pid != second.pid,
        timeout=TERM + SLACK,
    ), relay.logs()
    assert time.monotonic() - killed_at < LOOK + SLACK
    press_is_answered(fake_telegram, card)
    assert fake_telegram.conflicts <= 1  # the stalled poll, cut short once by the new one


def test_a_relay_on_another_host_leads_once_the_stalled_leaders_term_lapses(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
    pg_url: str,
) -> None:
    spool = {"RELAY_SPOOL_URL": pg_url, "RELAY_SPOOL_PATH": ""}
    relays = {
        name: start_relay(
            on_host(name),
            **chores(
                fake_glitchtip,
                WEB_CONCURRENCY="1",
                RELAY_LOCAL_SPOOL_PATH=str(tmp_path / f"{name}.sqlite3"),
                **spool,
            ),
        )
        for name in ("relay-a", "relay-b")
    }
    card = card_in_the_chat(relays["relay-a"], fake_telegram, fake_glitchtip)
    assert wait_until(lambda: leader_in(pg_url) is not None, timeout=5)
    first = leader_in(pg_url)
    assert first is not None
    other = "relay-b" if first.host == "relay-a" else "relay-a"
    [leading_worker] = relays[first.host].workers()
    assert leading_worker == first.pid
    press_is_answered(fake_telegram, card)

    # The leader's host stalls: the other host cannot ask its kernel, only the term can tell.
    os.kill(first.pid, signal.SIGSTOP)
    stalled_at = time.monotonic()
    try:
        assert wait_until(
            lambda: (now := leader_in(pg_url)) is not None and now.host == other,
            timeout=TERM + LOOK + SLACK,
        ), relays[other].logs()
        took = time.monotonic() - stalled_at
        press_is_answered(fake_telegram, card)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert took > TERM - LOOK  # not before its term lapsed: it might only be slow
    assert took < TERM + LOOK + SLACK
    stepped_down = "relay_app.delivery.leadership: this process no longer leads"
    assert wait_until(lambda: stepped_down in relays[first.host].logs(), timeout=5)
    press_is_answered(fake_telegram, card)
