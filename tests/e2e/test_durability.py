"""No accepted alert is lost to a restart, a deploy or a crash: the real `gunicorn wsgi:app`, its
spool on disk, and a fake Telegram that can refuse connections, hang, drop or refuse messages."""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import re
import signal
import sqlite3
import stat
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from relay_app.core.pacing import GROUP_INTERVAL
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    ANSWER_BOUND,
    QUEUED,
    delivered_titles,
    post,
    run_relay_app,
    spool_settled,
    titled,
    titles_in,
    wait_until,
)
from tests.e2e.relay_process import without_file_permission_override
from tests.fake_telegram import FakeTelegram
from tests.telegram_rules import visible_text


def post_all(url: str, titles: list[str], *, concurrency: int = 4) -> list[requests.Response]:
    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(lambda title: post(url, titled(title)), titles))
    assert all(took < ANSWER_BOUND for _, took in answers)
    return [reply for reply, _ in answers]


def spool_rows(spool_path: str, table: str = "jobs") -> list[sqlite3.Row]:
    with sqlite3.connect(spool_path) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    db.close()
    return rows


def requests_by_title(fake: FakeTelegram) -> dict[str, list[float]]:
    """When each request for each alert reached the fake, whatever its outcome."""
    seen: dict[str, list[float]] = collections.defaultdict(list)
    for received in fake.sends():
        text = visible_text(received.body["text"], parse_mode=received.body.get("parse_mode"))
        for title in titles_in(text):
            seen[title].append(received.at)
    return seen


def test_alerts_accepted_during_an_outage_survive_sigkill(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay()
    fake_telegram.stop()  # connections refused
    titles = [f"Killed {n}" for n in range(50)]
    answers = post_all(relay.webhook_url, titles)
    assert {a.status_code for a in answers} <= QUEUED
    assert {a.json()["status"] for a in answers} == {"queued"}
    assert len(spool_rows(spool_path)) == 50
    relay.crash()

    fake_telegram.start()
    start_relay()
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 50, timeout=30)
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    assert sorted(delivered_titles(fake_telegram)) == sorted(titles)
    assert spool_rows(spool_path) == []


def test_sigterm_during_an_outage_leaves_every_alert_free_for_the_next_start(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    # Long pauses: a restart that waited for them, or for leases, would take minutes.
    relay = start_relay(RELAY_RETRY_WAIT="600")
    fake_telegram.stop()
    titles = [f"Deployed {n}" for n in range(20)]
    post_all(relay.webhook_url, titles)
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    started = time.monotonic()
    assert relay.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 10
    assert len(spool_rows(spool_path)) == 20
    assert all(lane["token"] is None for lane in spool_rows(spool_path, "lanes"))
    # Each worker says what it leaves in the spool.
    left = re.findall(r"stopping: (\d+) alert\(s\) wait in the spool", relay.logs())
    assert left
    assert all(int(count) == 20 for count in left)

    fake_telegram.start()
    started = time.monotonic()
    start_relay(RELAY_RETRY_WAIT="600")
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 20, timeout=20)
    # Due at once when Telegram answers: no RELAY_RETRY_WAIT, no lease running out.
    assert time.monotonic() - started < 10
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    assert sorted(delivered_titles(fake_telegram)) == sorted(titles)


def test_two_workers_and_a_lossy_telegram_deliver_every_alert_once(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    # 1 in 4 requests is lost after Telegram read it, without an answer: the relay cannot
    # know it was not posted. Ten retries make losing an alert a one-in-millions event.
    relay = start_relay(WEB_CONCURRENCY="2", RELAY_RETRY_ATTEMPTS="10", RELAY_RETRY_WAIT="0.3")
    fake_telegram.set("ok", drop_rate=0.25)
    titles = [f"Lossy {n}" for n in range(100)]
    post_all(relay.webhook_url, titles, concurrency=8)
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 100, timeout=40)
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    # The fake posts a dropped request nowhere, so each alert was posted exactly once...
    assert sorted(delivered_titles(fake_telegram)) == sorted(titles)
    assert any(r.outcome == "dropped" for r in fake_telegram.received)
    # ...and no alert was worked by two workers at once: its attempts came one after another,
    # each RELAY_RETRY_WAIT (or its chat's next turn) after the last.
    for title, times in requests_by_title(fake_telegram).items():
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert all(gap >= 0.25 for gap in gaps), (title, gaps)
    pids = {line.split("]")[1] for line in relay.logs().splitlines() if "Booting worker" in line}
    assert len(pids) == 2
    assert spool_rows(spool_path) == []


def test_a_worker_killed_during_the_synchronous_attempt_delivers_after_restart(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay(RELAY_SEND_TIMEOUT="3")
    fake_telegram.set("hang")

    def send_and_lose_the_answer() -> None:
        with contextlib.suppress(requests.ConnectionError):  # the relay dies under it
            requests.post(relay.webhook_url, json=titled("Mid-flight"), timeout=10)

    sender = threading.Thread(target=send_and_lose_the_answer)
    sender.start()
    try:
        assert wait_until(fake_telegram.sends, timeout=5)  # the attempt is hanging
        relay.crash()
    finally:
        sender.join(timeout=10)
    [row] = spool_rows(spool_path)
    assert (row["attempts"], row["unsure_attempts"]) == (1, 1)

    fake_telegram.set("ok")
    started = time.monotonic()
    start_relay(RELAY_SEND_TIMEOUT="3")
    # Taken up at once: its lease names a process that no longer exists.
    assert wait_until(lambda: fake_telegram.messages, timeout=20)
    assert time.monotonic() - started < 10
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    assert delivered_titles(fake_telegram) == ["Mid-flight"]


def test_a_read_only_spool_directory_costs_durability_not_delivery(
    start_relay: StartRelay, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    directory = tmp_path / "read-only"
    directory.mkdir()
    corrupt = directory / "spool.sqlite3"
    corrupt.write_bytes(b"not a database\n" * 100)
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        relay = start_relay(
            prefix=without_file_permission_override(), RELAY_SPOOL_PATH=str(corrupt)
        )
        ready = requests.get(f"{relay.url}/readyz", timeout=5)
        assert ready.status_code == 503
        assert ready.json()["reason"] == (
            f"spool unusable: cannot create files in {directory}: Permission denied"
        )
        assert requests.get(f"{relay.url}/healthz", timeout=5).status_code == 200

        assert post(relay.webhook_url, titled("Straight through"))[0].status_code == 200
        time.sleep(GROUP_INTERVAL)  # the chat's next turn
        fake_telegram.set("error", status=502, description="Bad Gateway")
        reply, _ = post(relay.webhook_url, titled("From memory"))
        assert (reply.status_code, reply.json()["status"]) == (502, "queued")
        fake_telegram.set("ok")
        assert wait_until(lambda: len(fake_telegram.messages) >= 2, timeout=10)
        assert sorted(delivered_titles(fake_telegram)) == ["From memory", "Straight through"]
        logs = relay.logs()
        assert "[ERROR] relay_app.spool: DURABILITY LOST" in logs
        assert "is kept in memory only" in logs
        assert corrupt.read_bytes() == b"not a database\n" * 100  # untouched
        assert sorted(p.name for p in directory.iterdir()) == ["spool.sqlite3"]
    finally:
        directory.chmod(stat.S_IRWXU)


def test_a_corrupt_spool_is_moved_aside_and_a_fresh_one_started(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    garbage = b"SQLite format 3\x00" + os.urandom(8192)
    Path(spool_path).write_bytes(garbage)
    relay = start_relay(WEB_CONCURRENCY="2")
    assert requests.get(f"{relay.url}/readyz", timeout=5).status_code == 200
    [aside] = Path(spool_path).parent.glob("spool.sqlite3.corrupt-*")
    assert aside.read_bytes() == garbage  # never deleted, and moved by one worker only
    assert "[ERROR] relay_app.spool: the spool file" in relay.logs()
    assert "was corrupt" in relay.logs()

    fake_telegram.stop()
    post(relay.webhook_url, titled("Into the fresh spool"))
    assert len(spool_rows(spool_path)) == 1  # durable again
    fake_telegram.start()
    assert wait_until(lambda: fake_telegram.messages, timeout=10)


def relay_app_cli(spool_path: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_relay_app({"RELAY_SPOOL_PATH": spool_path}, *args)


def test_dead_letters_are_listed_resent_and_purged_by_hand(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay()
    fake_telegram.set("error", status=403, description="Forbidden: bot is not a member")
    for title in ("Kicked once", "Kicked twice"):
        assert post(relay.webhook_url, titled(title))[0].status_code in QUEUED
    # The second waited for the chat's turn, and was refused then.
    assert wait_until(lambda: all(row["state"] == "dead" for row in spool_rows(spool_path)), 10)

    listed = relay_app_cli(spool_path, "spool", "list", "--dead")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["1", "2"]
    assert "Kicked once" in lines[1]
    assert "Kicked twice" in lines[2]
    assert "Forbidden: bot is not a member" in lines[1]
    assert lines[-1] == f"0 pending, 2 dead in {spool_path}"

    fake_telegram.set("ok")  # the bot was added back to the group
    resent = relay_app_cli(spool_path, "spool", "retry", "1")
    assert resent.returncode == 0, resent.stderr
    assert wait_until(lambda: fake_telegram.messages, timeout=10)
    assert delivered_titles(fake_telegram) == ["Kicked once"]

    assert relay_app_cli(spool_path, "spool", "retry", "7").returncode == 1
    purged = relay_app_cli(spool_path, "spool", "purge", "--dead", "--older-than", "0s")
    assert purged.returncode == 0
    assert purged.stdout.startswith("Deleted 1 dead alert(s)")
    assert relay_app_cli(spool_path, "spool", "list", "--dead").stdout.splitlines()[-1] == (
        f"0 pending, 0 dead in {spool_path}"
    )
    assert relay_app_cli(spool_path, "spool", "purge", "--older-than", "0s").returncode == 2
