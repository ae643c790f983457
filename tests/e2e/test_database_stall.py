"""The spool's database stops answering (its processes paused, as in a failover, a long lock or
a network blip) while Telegram fails, and the relay is then killed as by the OOM killer: the
real `gunicorn wsgi:app` on a real PostgreSQL, with this host's own file beside it
(RELAY_LOCAL_SPOOL_PATH). Every alert answered during the stall is delivered after the
restart, each once, under the name it was answered with."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import copies, post, spool_settled, titled, wait_until
from tests.fake_telegram import FakeTelegram
from tests.postgres import PostgresServer

# GlitchTip's timeout: a webhook answered later is one it counts as failed.
GLITCHTIP_TIMEOUT = 10.0


def waiting_in(path: Path) -> int:
    with sqlite3.connect(path) as file:
        return int(file.execute("SELECT count(*) FROM jobs WHERE state = 'pending'").fetchone()[0])


def test_alerts_taken_while_the_database_stalled_survive_a_kill_and_go_once(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    postgres_server: PostgresServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    local = tmp_path / "relay-local-spool.sqlite3"
    spool = {
        "RELAY_SPOOL_URL": pg_url,
        "RELAY_SPOOL_PATH": "",
        "RELAY_LOCAL_SPOOL_PATH": str(local),
        "WEB_CONCURRENCY": "2",
    }
    relay = start_relay(**spool)
    titles = [f"During the stall {n}" for n in range(3)]
    fake_telegram.set("error", status=500, description="Internal Server Error")
    with postgres_server.paused():
        answers = [post(relay.webhook_url, titled(title)) for title in titles]
        assert all(seconds < GLITCHTIP_TIMEOUT for _, seconds in answers), answers
        assert {reply.status_code for reply, _ in answers} <= {202, 502}, relay.logs()
        labels = [reply.json()["alert"] for reply, _ in answers]
        assert len(set(labels)) == 3, labels  # each its own
        assert all(label.startswith("local-") for label in labels), labels
        assert waiting_in(local) == 3
        relay.crash()  # SIGKILL, master and workers: nothing is given back
    assert "kept in memory only" not in relay.logs()

    # Started again with the database back and Telegram still failing: what the file holds
    # moves into the database, where every replica can send it; then Telegram answers.
    restarted = start_relay(**spool)
    assert wait_until(lambda: waiting_in(local) == 0, timeout=20), restarted.logs()
    assert "3 job(s) that waited in this host's file" in restarted.logs()
    fake_telegram.set("ok")
    assert wait_until(lambda: set(copies(fake_telegram)) >= set(titles), timeout=30), (
        restarted.logs()
    )
    assert wait_until(lambda: spool_settled(pg_url), timeout=20)
    sent = copies(fake_telegram)
    assert [sent[title] for title in titles] == [1, 1, 1], (sent, restarted.logs())
    for label in labels:  # delivered under the name each was answered with
        assert label in restarted.logs()
