"""Several relays, one queue: three real `gunicorn wsgi:app` masters (two workers each) on one
PostgreSQL database, behind a round-robin client, against the fake Telegram enforcing its
per-chat limits (one message a second per chat, twenty a minute per group, 429 beyond).

The fleet must keep the limits together, survive a replica's SIGKILL and the database's
restart without losing an accepted alert, and agree on leases and turns however their clocks
disagree (each replica's wall clock moved through the relay's one clock, skewed_wsgi.py). And as
with the file spool, alerts accepted during an outage outlive every relay, killed or stopped."""

from __future__ import annotations

import collections
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest
import requests

from relay_app.spool import Admin
from relay_app.spool.postgres import PgDatabase
from tests.e2e.helpers import (
    delivered_titles,
    post_paced,
    spool_settled,
    titled,
    unexplained_repeats,
    wait_until,
)
from tests.e2e.relay_process import RelayProcess, relay_env, stop_all
from tests.fake_telegram import FakeTelegram
from tests.postgres import PostgresServer

StartFleet = Callable[..., list[RelayProcess]]
# The answers an accepted alert gets: sent, queued, or queued after its attempt failed.
ACCEPTED = {200, 202, 502}


@pytest.fixture
def fleet(fake_telegram: FakeTelegram, pg_url: str, tmp_path: Path) -> Iterator[StartFleet]:
    started: list[RelayProcess] = []

    def start(count: int = 3, *, clocks_off_by: list[float] | None = None) -> list[RelayProcess]:
        """`count` replicas; with `clocks_off_by`, each one's wall clock that many seconds off
        (tests/e2e/skewed_wsgi.py), as on hosts whose clocks disagree."""
        relays = []
        for number in range(count):
            # Each replica's own file, where alerts wait if the database stalls.
            local = str(tmp_path / f"local-{len(started)}.sqlite3")
            env = relay_env(
                fake_telegram,
                RELAY_SPOOL_URL=pg_url,
                RELAY_LOCAL_SPOOL_PATH=local,
                WEB_CONCURRENCY="2",
            )
            app = "wsgi:app"
            if clocks_off_by is not None:
                env["RELAY_TEST_CLOCK_OFFSET"] = str(clocks_off_by[number])
                app = "tests.e2e.skewed_wsgi:app"
            # A log of its own, replicas started later included (the logs are read together).
            log = tmp_path / f"replica-{len(started)}.log"
            relay = RelayProcess(env, log, app=app, telegram=fake_telegram)
            started.append(relay)
            # One at a time: replicas booting together on a small host starve the database,
            # which the spool then takes for gone (issue: nothing lost when it stalls).
            relays.append(relay.wait_ready())
        return relays

    yield start
    stop_all(started)
    for relay in started:
        assert "pg-test-password" not in relay.logs()


def what_happened(
    fake: FakeTelegram, relays: list[RelayProcess]
) -> tuple[list[tuple[float, str, bool, str]], list[str]]:
    """Each send as the fake saw it, and the relays' logs: what a rare failure needs to be
    read, in a failed assertion's message."""
    sends = [(round(r.at, 3), r.outcome, r.reply_lost, r.body["text"][:60]) for r in fake.sends()]
    return sends, [r.logs() for r in relays]


def assert_each_once(fake: FakeTelegram, titles: list[str], relays: list[RelayProcess]) -> None:
    """Every alert in the chat, once, but for a copy the relay said it sent again because it
    never heard Telegram's answer to the first (helpers.unexplained_repeats). If not, the message
    names each send as the fake saw it and the relays' logs: what a rare failure needs."""
    read = what_happened(fake, relays)
    assert sorted(set(delivered_titles(fake))) == sorted(titles), ("lost or unexpected", *read)
    assert unexplained_repeats(fake, read[1]) is None, read


def accepted(answers: Sequence[tuple[requests.Response, float]], titles: list[str]) -> list[str]:
    return [
        title
        for title, (reply, _) in zip(titles, answers, strict=True)
        if reply.status_code in ACCEPTED
    ]


def test_three_relays_deliver_a_storm_once_within_telegrams_limits(
    fleet: StartFleet, fake_telegram: FakeTelegram, pg_url: str
) -> None:
    fake_telegram.limits = True
    relays = fleet()
    titles = [f"Fleet storm {n}" for n in range(200)]
    started = time.monotonic()
    answers = post_paced([r.webhook_url for r in relays], [titled(t) for t in titles], seconds=10)
    assert accepted(answers, titles) == titles
    assert max(took for _, took in answers) < 5
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 200, timeout=60)
    assert time.monotonic() - started < 60
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(pg_url), timeout=15)
    assert_each_once(fake_telegram, titles, relays)
    # The fleet kept the limits together; if not, each send as the fake saw it, and the logs.
    assert fake_telegram.too_many_requests() == [], what_happened(fake_telegram, relays)
    assert len(fake_telegram.messages) <= 20


def test_a_killed_replicas_alerts_are_delivered_by_the_others_none_twice(
    fleet: StartFleet, fake_telegram: FakeTelegram, pg_url: str
) -> None:
    relays = fleet()
    # Telegram hangs for sendMessage (and posts nothing): every replica's attempts are in
    # flight or waiting when one replica is killed.
    fake_telegram.set("hang", methods={"sendMessage"})
    titles = [f"Before the kill {n}" for n in range(30)]
    answers = post_paced([r.webhook_url for r in relays], [titled(t) for t in titles], seconds=3)
    assert accepted(answers, titles) == titles
    relays[0].crash()  # SIGKILL, master and workers: no hook runs, nothing is given back
    fake_telegram.set("ok")
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 30, timeout=60)
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(pg_url), timeout=15)
    assert_each_once(fake_telegram, titles, relays)


def test_a_postgresql_restart_mid_stream_loses_no_accepted_alert(
    fleet: StartFleet, fake_telegram: FakeTelegram, postgres_server: PostgresServer
) -> None:
    relays = fleet()
    titles = [f"Through the restart {n}" for n in range(60)]
    restart = threading.Timer(2.0, postgres_server.restart)
    restart.start()
    try:
        answers = post_paced(
            [r.webhook_url for r in relays], [titled(t) for t in titles], seconds=6
        )
    finally:
        restart.join()
    assert accepted(answers, titles) == titles
    assert max(took for _, took in answers) < 9.5  # inside GlitchTip's 10 s, restart and all
    assert wait_until(lambda: set(delivered_titles(fake_telegram)) >= set(titles), timeout=60)
    each_once_or_more = collections.Counter(delivered_titles(fake_telegram))
    assert set(each_once_or_more) == set(titles)


def last_webhook_seen_by(relay: RelayProcess) -> float:
    """When the fleet last took a webhook, by this replica's clock (/readyz)."""
    said = requests.get(f"{relay.url}/readyz", timeout=5).json()["last_webhook"]
    return datetime.fromisoformat(said).timestamp()


def test_replicas_whose_clocks_differ_by_30_s_send_once_and_keep_the_pace(
    fleet: StartFleet, fake_telegram: FakeTelegram, pg_url: str
) -> None:
    fake_telegram.limits = True
    relays = fleet(clocks_off_by=[30.0, -30.0, 0.0])
    titles = [f"Skewed {n}" for n in range(90)]
    answers = post_paced([r.webhook_url for r in relays], [titled(t) for t in titles], seconds=6)
    assert accepted(answers, titles) == titles
    # Their clocks do disagree: each reads the fleet's last webhook, kept in the database's
    # clock, in its own.
    posted = time.time()
    offsets = [round(last_webhook_seen_by(relay) - posted) for relay in relays]
    assert all(
        want - 5 <= got <= want + 1 for got, want in zip(offsets, [30, -30, 0], strict=True)
    ), offsets
    delivered = wait_until(lambda: len(delivered_titles(fake_telegram)) >= 90, timeout=60)
    assert delivered, (len(delivered_titles(fake_telegram)), *what_happened(fake_telegram, relays))
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(pg_url), timeout=15)
    assert_each_once(fake_telegram, titles, relays)
    assert fake_telegram.too_many_requests() == [], what_happened(fake_telegram, relays)


def pending_in(url: str) -> int:
    admin = Admin(PgDatabase(url, for_service=False))
    try:
        return admin.counts()["pending"]
    finally:
        admin.close()


def free_lanes(url: str) -> bool:
    database = PgDatabase(url, for_service=False)
    try:
        rows = database.read(lambda tx: tx.all("SELECT token FROM lanes"))
    finally:
        database.close()
    return all(row["token"] is None for row in rows)


def test_alerts_accepted_during_an_outage_survive_sigkill_of_every_relay(
    fleet: StartFleet, fake_telegram: FakeTelegram, pg_url: str
) -> None:
    relays = fleet(2)
    fake_telegram.stop()  # connections refused
    titles = [f"Killed {n}" for n in range(40)]
    answers = post_paced([r.webhook_url for r in relays], [titled(t) for t in titles], seconds=2)
    assert {reply.json()["status"] for reply, _ in answers} == {"queued"}
    assert pending_in(pg_url) == 40
    for relay in relays:
        relay.crash()
    fake_telegram.start()
    relays += fleet(1)
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 40, timeout=30)
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(pg_url), timeout=15)
    assert_each_once(fake_telegram, titles, relays)
    assert pending_in(pg_url) == 0


def test_sigterm_during_an_outage_leaves_every_alert_free_for_the_next_relay(
    fleet: StartFleet, fake_telegram: FakeTelegram, pg_url: str
) -> None:
    [relay] = fleet(1)
    fake_telegram.stop()
    titles = [f"Deployed {n}" for n in range(20)]
    post_paced(relay.webhook_url, [titled(t) for t in titles], seconds=1)
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    assert relay.stop(signal.SIGTERM) == 0
    assert pending_in(pg_url) == 20
    assert free_lanes(pg_url)
    fake_telegram.start()
    started = time.monotonic()
    [taker] = fleet(1)
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 20, timeout=20)
    assert time.monotonic() - started < 10  # no lease to wait out
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(pg_url), timeout=15)
    assert_each_once(fake_telegram, titles, [relay, taker])
