"""The real `gunicorn wsgi:app` against a fake Telegram on 127.0.0.1, with GlitchTip's payloads."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from relay_app.glitchtip.webhook import read_kept
from relay_app.message.formatting import format_alert
from relay_app.words import ENGLISH
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    ANSWER_BOUND,
    QUEUED,
    delivered_titles,
    post,
    spool_settled,
    titled,
    wait_until,
)
from tests.e2e.relay_process import (
    CHAT_ID,
    SECRET,
    RelayProcess,
    free_port,
    gunicorn_command,
    relay_env,
    run_here,
)
from tests.fake_telegram import TOKEN, FakeTelegram
from tests.payloads import issue, issue_alert, uptime_alert


def test_an_alert_arrives_as_formatted(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    payload = issue_alert(issue(1), issue(2), issue(3), total=12)
    reply, _ = post(relay.webhook_url, payload)
    assert (reply.status_code, reply.json()) == (200, {"status": "sent"})
    [message] = fake_telegram.messages
    assert message["chat_id"] == int(CHAT_ID)
    assert message["message_thread_id"] == 77
    assert message["parse_mode"] == "HTML"
    assert message["link_preview_options"] == {"is_disabled": True}
    assert message["text"] == format_alert(read_kept(payload), ENGLISH).html

    uptime, _ = post(relay.webhook_url, uptime_alert(down=False))
    assert (uptime.status_code, uptime.json()) == (202, {"status": "queued", "alert": "#2"})
    assert wait_until(lambda: len(fake_telegram.messages) == 2, timeout=5)  # on its turn
    assert fake_telegram.texts()[-1].startswith("✅ UP · My API")

    garbage = requests.post(relay.webhook_url, data=b"{oops", timeout=5)
    assert garbage.status_code == 400
    assert (
        requests.get(f"{relay.url}/webhook/wrong-secret-0123456789", timeout=5).status_code == 405
    )
    assert requests.post(f"{relay.url}/webhook/wrong-secret", json={}, timeout=5).status_code == 404
    assert requests.get(f"{relay.url}/healthz", timeout=5).json() == {"status": "ok"}
    assert len(fake_telegram.messages) == 2


def test_at_the_largest_send_timeout_a_healthy_telegram_still_gets_the_webhooks_attempt(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(RELAY_SEND_TIMEOUT="9")  # docs/configuration.md: "at most 9"
    reply, took = post(relay.webhook_url, titled("At the largest timeout"))
    assert (reply.status_code, reply.json()) == (200, {"status": "sent"})
    assert took < ANSWER_BOUND
    assert delivered_titles(fake_telegram) == ["At the largest timeout"]


def test_an_outage_then_recovery_delivers_every_alert_once(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay(RELAY_RETRY_ATTEMPTS="6")
    fake_telegram.set("error", status=500, description="Internal Server Error")
    titles = [f"Outage alert {n}" for n in range(5)]
    for title in titles:
        reply, took = post(relay.webhook_url, titled(title))
        assert reply.status_code in QUEUED
        assert reply.json()["status"] == "queued"
        assert took < ANSWER_BOUND
    # The outage lasts while the relay asks whether Telegram is back.
    assert wait_until(lambda: len(fake_telegram.questions()) >= 2, timeout=10)
    assert len(fake_telegram.sends()) == 1  # the first alert's webhook; the rest wait
    fake_telegram.set("ok")
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= len(titles), timeout=10)
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    assert sorted(delivered_titles(fake_telegram)) == titles


@pytest.mark.parametrize("misbehaviour", ["hang", "drip"])
def test_a_hanging_telegram_cannot_hold_the_answer(
    start_relay: StartRelay, fake_telegram: FakeTelegram, misbehaviour: Any
) -> None:
    relay = start_relay(RELAY_RETRY_WAIT="1.5")
    fake_telegram.set(misbehaviour)
    with ThreadPoolExecutor(8) as pool:  # several at once, so threads are what keeps answering
        answers = list(pool.map(lambda n: post(relay.webhook_url, titled(f"Hang {n}")), range(8)))
    for reply, took in answers:
        assert reply.status_code in QUEUED
        assert reply.json()["status"] == "queued"
        assert took < ANSWER_BOUND
    fake_telegram.set("ok")
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 8, timeout=15)
    assert sorted(delivered_titles(fake_telegram)) == sorted(f"Hang {n}" for n in range(8))


def test_429_waits_at_least_retry_after(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    fake_telegram.set(
        "error",
        status=429,
        description="Too Many Requests: retry after 2",
        parameters={"retry_after": 2},
    )
    reply, _ = post(relay.webhook_url, titled("Rate limited"))
    assert reply.status_code == 502
    assert reply.json()["status"] == "queued"
    fake_telegram.set("ok")
    assert wait_until(lambda: fake_telegram.messages, timeout=10)
    first, retried = fake_telegram.sends()[0], fake_telegram.sends()[-1]
    assert retried.outcome == "accepted"
    assert retried.at - first.at >= 2.0  # RELAY_RETRY_WAIT is 0.3: Telegram's pause won


def test_a_permanent_403_is_not_retried_and_the_text_is_logged(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay()
    fake_telegram.set(
        "error", status=403, description="Forbidden: bot was kicked from the supergroup chat"
    )
    reply, _ = post(relay.webhook_url, titled("Kicked <alert> & co"))
    assert reply.status_code == 502
    assert reply.json()["status"] == "failed"
    # A dead letter, nothing pending: no retry can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    assert len(fake_telegram.received) == 1  # a refusal is an answer: nothing more is asked
    logs = relay.logs()
    assert "[ERROR] relay_app.delivery.job: ALERT NOT DELIVERED" in logs
    assert "Kicked <alert> & co" in logs


def test_a_lossy_network_loses_no_alert(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    # Every attempt has a 1 in 4 chance to be lost; 10 retries make losing an alert a
    # 1-in-4-million event, so a missing alert here is a relay bug, not bad luck.
    relay = start_relay(RELAY_RETRY_ATTEMPTS="10", RELAY_RETRY_WAIT="0.2")
    fake_telegram.set("ok", drop_rate=0.25)
    titles = [f"Lossy alert {n}" for n in range(40)]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda t: post(relay.webhook_url, titled(t))[0], titles))
    assert {a.status_code for a in answers} <= {200} | QUEUED
    assert all(a.json()["status"] in ("sent", "queued") for a in answers)
    assert wait_until(lambda: set(delivered_titles(fake_telegram)) == set(titles), timeout=30)
    dropped = [r for r in fake_telegram.received if r.outcome == "dropped"]
    assert dropped  # the network really was lossy


def test_logs_never_show_the_token_or_the_secret(
    start_relay: StartRelay,
) -> None:
    # Telegram unreachable: requests' errors, which carry the URL and so the token, get logged.
    nobody_listens = free_port()
    relay = start_relay(
        TELEGRAM_API_URL=f"http://127.0.0.1:{nobody_listens}", RELAY_RETRY_MAX_AGE="2"
    )
    reply, _ = post(relay.webhook_url, titled("Unreachable"))
    # Attempted and failed (502), or, when a worker's start-up check found Telegram down
    # first, left to wait for the prober's news (202): either way queued.
    assert reply.status_code in QUEUED
    assert reply.json()["status"] == "queued"
    assert TOKEN not in reply.text
    assert wait_until(lambda: "ALERT NOT DELIVERED" in relay.logs(), timeout=10)
    logs = relay.logs()
    assert "connection to Telegram failed" in logs
    answered = f'"POST /webhook/[REDACTED] HTTP/1.1" {reply.status_code}'
    assert answered in logs  # the access log, redacted
    assert TOKEN not in logs
    assert SECRET not in logs


def queue_retries_in_memory_during_an_outage(
    start_relay: StartRelay, fake_telegram: FakeTelegram, titles: list[str]
) -> RelayProcess:
    """A relay without a spool whose retries for `titles` are all waiting out a 600 s pause.
    (With the spool, SIGTERM leaves them there for the next start: see test_durability.py.)"""
    relay = start_relay(RELAY_RETRY_WAIT="600", RELAY_SPOOL_PATH="off")
    fake_telegram.set("error", status=502, description="Bad Gateway")
    for title in titles:
        assert post(relay.webhook_url, titled(title))[0].status_code in QUEUED
    return relay


def test_without_a_spool_sigterm_gives_pending_retries_a_last_attempt(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    titles = [f"Pending {n}" for n in range(3)]
    relay = queue_retries_in_memory_during_an_outage(start_relay, fake_telegram, titles)
    fake_telegram.set("ok")
    started = time.monotonic()
    assert relay.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 10  # not the 600 s wait
    assert sorted(delivered_titles(fake_telegram)) == titles


def test_without_a_spool_sigterm_logs_the_text_of_retries_it_could_not_deliver(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    titles = [f"Doomed {n}" for n in range(3)]
    relay = queue_retries_in_memory_during_an_outage(start_relay, fake_telegram, titles)
    assert relay.stop(signal.SIGTERM) == 0
    logs = relay.logs()
    assert logs.count("ALERT NOT DELIVERED: alert mem-") == 3
    assert logs.count("the relay is shutting down") == 3
    for title in titles:
        assert title in logs


@pytest.mark.parametrize(
    ("variable", "value"),
    [("TELEGRAM_CHAT_ID", ""), ("RELAY_SEND_TIMEOUT", "soon"), ("TELEGRAM_BOT_TOKEN", "nope")],
)
def test_a_bad_variable_stops_gunicorn_at_start(
    fake_telegram: FakeTelegram, variable: str, value: str
) -> None:
    env = {**relay_env(fake_telegram), variable: value, "RELAY_BIND": "127.0.0.1:0"}
    finished = run_here(gunicorn_command(), env, inherit=False)
    assert finished.returncode != 0
    output = finished.stdout + finished.stderr
    assert f"relay_app cannot start: {variable}:" in output
    assert "Booting worker" not in output
