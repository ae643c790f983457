"""The operator's first week, end to end: the usual setup mistakes, made and fixed as a new
user would, under the real `gunicorn wsgi:app` against the fake Telegram. None of them may
lose an alert quietly."""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from relay_app.operating.summary import version
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    alert_for,
    answered,
    card_kept,
    delivered_titles,
    post,
    run_relay_app,
    titled,
    wait_until,
)
from tests.e2e.relay_process import (
    CHAT_ID,
    ROOT,
    SECRET,
    free_port,
    gunicorn_command,
    gunicorn_that_stops,
    relay_env,
    run_here,
)
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram
from tests.prometheus import parse, value
from tests.socks_proxy import running_socks_proxy

WRONG_CHAT = "-1009999999999"
# Webhooks each of the backup test's posters sends at most (it stops them once it is done).
STORM_MOST = 500


OTHER_CHAT = "-1005555555555"


def test_a_dead_letter_for_a_wrong_chat_follows_the_fixed_chat_or_goes_where_retry_says(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    fake_telegram.missing_chats.add(WRONG_CHAT)
    relay = start_relay(TELEGRAM_CHAT_ID=WRONG_CHAT)
    first, _ = post(relay.webhook_url, titled("Wrong chat one"))
    second, _ = post(relay.webhook_url, titled("Wrong chat two"))
    ids = [reply.json()["alert"].lstrip("#") for reply in (first, second)]
    assert wait_until(lambda: relay.logs().count("ALERT NOT DELIVERED") == 2, timeout=10)
    assert "--chat ID [--thread N] sends them to another" in relay.logs()
    relay.stop()

    # The operator fixes TELEGRAM_CHAT_ID and restarts, then retries as the ERROR line says.
    fixed = relay_env(fake_telegram, RELAY_SPOOL_PATH=spool_path)
    start_relay()
    retried = run_relay_app(fixed, "spool", "retry", ids[0])
    assert retried.returncode == 0, retried.stderr
    assert f"#{ids[0]}: pending again, for chat {CHAT_ID} topic 77" in retried.stdout
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 1, timeout=10)
    assert "Wrong chat one" in fake_telegram.posted_to(CHAT_ID)[0].visible()

    elsewhere = run_relay_app(fixed, "spool", "retry", ids[1], "--chat", OTHER_CHAT)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert f"#{ids[1]}: pending again, for chat {OTHER_CHAT}\n" in elsewhere.stdout
    assert wait_until(lambda: len(fake_telegram.posted_to(OTHER_CHAT)) == 1, timeout=10)
    assert "Wrong chat two" in fake_telegram.posted_to(OTHER_CHAT)[0].visible()
    assert fake_telegram.posted_to(WRONG_CHAT) == []
    assert re.search(r"0 pending, 0 dead", run_relay_app(fixed, "spool", "list").stdout)


def test_a_chat_telegram_refuses_is_an_error_a_zero_metric_and_a_readyz_line_at_start(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(TELEGRAM_CHAT_ID=WRONG_CHAT)
    assert wait_until(lambda: "TELEGRAM REFUSES THE SETUP" in relay.logs(), timeout=10)
    # The fleet's leader asked, once, and said it; every worker answers with what it found.
    logs = relay.logs()
    assert fake_telegram.start_up_rounds == 1
    assert logs.count("TELEGRAM REFUSES THE SETUP") == 1
    assert (
        f"[ERROR] relay_app.operating.setup_watch: TELEGRAM REFUSES THE SETUP: TELEGRAM_CHAT_ID: "
        f"chat {WRONG_CHAT}: Telegram refused getChat (400): Bad Request: chat not found; fix: "
    ) in logs
    assert "relay-app chats" in logs  # the fix names the tool that finds the right id
    assert wait_until(
        lambda: (
            value(
                parse(requests.get(f"{relay.url}/metrics", timeout=5).text),
                "relay_telegram_setup_ok",
            )
            == 0
        ),
        timeout=10,
    )
    for _ in range(6):  # each a connection of its own: both workers answer
        ready = requests.get(f"{relay.url}/readyz", timeout=5, headers={"Connection": "close"})
        assert ready.status_code == 200  # alerts are still taken and kept
        assert ready.json()["status"] == "ready"
        [line] = ready.json()["telegram_refuses"]
        assert line.startswith(f"TELEGRAM_CHAT_ID: chat {WRONG_CHAT}: ")


def test_a_telegram_that_cannot_be_reached_is_loud_at_start_and_not_ready_until_it_answers(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    fake_telegram.stop()  # blocked: every connection refused
    relay = start_relay(RELAY_TIME_SCALE="0.25")
    assert wait_until(lambda: "TELEGRAM UNREACHABLE" in relay.logs(), timeout=10), relay.logs()
    logs = relay.logs()
    assert logs.count("TELEGRAM UNREACHABLE") == 1  # the leader says it, for the fleet
    assert (
        "[ERROR] relay_app.operating.setup_watch: TELEGRAM UNREACHABLE: connection to Telegram "
        "failed: Connection refused; "
    ) in logs
    assert f"Telegram is unreachable at {fake_telegram.url} from this host" in logs
    # Either worker may answer /readyz: each says what the leader found.
    for _ in range(6):
        ready = requests.get(f"{relay.url}/readyz", timeout=5, headers={"Connection": "close"})
        assert ready.status_code == 503
        assert ready.json()["reason"].startswith("Telegram cannot be reached: ")
        assert fake_telegram.url in ready.json()["reason"]
    said = run_relay_app(
        relay_env(fake_telegram, RELAY_BIND=relay.url.removeprefix("http://")), "ready"
    )
    assert said.returncode == 1
    assert "Telegram cannot be reached" in said.stdout + said.stderr
    checked = run_relay_app(relay_env(fake_telegram), "check")
    assert checked.returncode == 1
    assert f"Telegram is unreachable at {fake_telegram.url} from this host" in checked.stdout
    samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
    assert value(samples, "relay_telegram_reachable") == 0
    fake_telegram.start()  # the network is back
    assert wait_until(
        lambda: requests.get(f"{relay.url}/readyz", timeout=5).status_code == 200, timeout=10
    ), relay.logs()
    assert "Telegram answers the start-up check now: the relay is ready" in relay.logs()


def test_while_telegram_fails_the_relay_asks_one_question_per_interval_whatever_its_workers(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    # Before, each worker's start-up check asked again every few seconds on its own, beside
    # the relay's prober: two workers asked getMe 25 times in a 30 s outage, not 15.
    fake_telegram.set("error", status=502, description="Bad Gateway")
    relay = start_relay(RELAY_TIME_SCALE="0.25")  # intervals a quarter: 0.25 s while alerts wait
    assert wait_until(lambda: "TELEGRAM UNREACHABLE" in relay.logs(), timeout=10), relay.logs()
    started = time.monotonic()
    for number in range(10):  # alerts keep coming meanwhile, one every 0.6 s
        post(relay.webhook_url, titled(f"During the outage {number}"))
        next_at = started + 0.6 * (number + 1)
        assert wait_until(lambda at=next_at: time.monotonic() >= at, 5)
    # The leader's start-up check asked once, and not again on its own.
    checks = [r for r in fake_telegram.start_up_requests if r.method == "getMe"]
    assert len(checks) == 1, [round(r.at - started, 2) for r in checks]
    # The relay's one prober asked for them all: every 0.25 s at most while alerts waited.
    every = [*fake_telegram.received, *checks]
    asked = sorted((r for r in every if r.method == "getMe"), key=lambda r: r.at)
    window = asked[-1].at - asked[0].at
    assert len(asked) <= 1 + window / 0.25 + 1, [round(r.at - asked[0].at, 2) for r in asked]
    fake_telegram.set("ok")
    titles = [f"During the outage {number}" for number in range(10)]
    assert wait_until(lambda: set(delivered_titles(fake_telegram)) >= set(titles), 20)


def test_a_refused_token_is_named_at_start(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(TELEGRAM_BOT_TOKEN="123456:wrong-token-for-this-bot-abcdefghijk")
    # The leader writes the ERROR.
    named = re.compile(r"\[ERROR\].*TELEGRAM_BOT_TOKEN: token: ")
    assert wait_until(lambda: named.search(relay.logs()) is not None, timeout=10)
    samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
    assert value(samples, "relay_telegram_setup_ok") == 0


def test_a_trailing_slash_delivers_and_near_misses_are_counted_and_said_once(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    slashed, _ = post(relay.webhook_url + "/", titled("With a trailing slash"))
    assert slashed.status_code == 200
    assert "With a trailing slash" in fake_telegram.posted_to(CHAT_ID)[0].visible()

    near_misses = [
        f"{relay.url}/webhooks/{SECRET}",
        f"{relay.url}/webhook/",
        f"{relay.url}/webhook/{SECRET}/extra",
    ] * 3
    for url in near_misses:
        assert post(url, titled("Lost"))[0].status_code == 404
    assert (
        requests.post(f"{relay.url}/telegram/an-old-secret", json={}, timeout=5).status_code == 404
    )
    assert requests.get(f"{relay.url}/favicon.ico", timeout=5).status_code == 404

    def missed(reason: str) -> float:
        samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
        return value(samples, "relay_requests_missed_total", reason=reason)

    assert missed("webhook_path") == len(near_misses)
    assert (missed("telegram_secret"), missed("unknown_path")) == (1, 1)
    logs = relay.logs()
    warnings = [line for line in logs.splitlines() if "relay_app.web.misses" in line]
    assert [line.split(" answered 404: ")[0].split(": ", 1)[1] for line in warnings] == [
        "POST /webhooks/[REDACTED]",
        "POST /telegram/[REDACTED]",
        "GET /favicon.ico",
    ]  # one line per kind of miss, from whichever worker saw it first
    assert SECRET not in logs
    assert "an-old-secret" not in logs


def test_the_recovery_line_counts_every_alert_the_digest_then_holds(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    fake_telegram.set("error", status=502, description="Bad Gateway")
    for n in range(4):
        post(relay.webhook_url, titled(f"During the outage {n}"))
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    fake_telegram.set("ok")
    assert wait_until(lambda: fake_telegram.posted_to(CHAT_ID), timeout=10)
    [digest] = fake_telegram.posted_to(CHAT_ID)
    assert "🗂 4 alerts, received " in digest.visible()  # after a "sent again" line: a 502
    assert "Telegram answers again: the 4 alert(s) waiting go now, oldest first" in relay.logs()


def test_a_port_in_use_names_relay_bind(fake_telegram: FakeTelegram, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = relay_env(fake_telegram, RELAY_SPOOL_PATH=str(tmp_path / "spool.sqlite3"))
        started = gunicorn_that_stops(env | {"RELAY_BIND": f"127.0.0.1:{port}"})
    assert started.returncode != 0
    assert (
        f"relay_app cannot start: RELAY_BIND=127.0.0.1:{port}: the address is already in use; "
        "another program (or another relay) listens there. Stop it, or set RELAY_BIND to a "
        "free port"
    ) in started.stderr
    assert "Connection in use" not in started.stderr


def test_gunicorns_own_bind_is_checked_not_relay_binds_default(
    fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    """`gunicorn wsgi:app -b ADDR` starts when RELAY_BIND's address is taken (it is not the
    one gunicorn binds), and a taken -b address is named as gunicorn's, not RELAY_BIND's."""
    env = relay_env(fake_telegram, RELAY_SPOOL_PATH=str(tmp_path / "spool.sqlite3"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = f"127.0.0.1:{taken.getsockname()[1]}"
        free = f"127.0.0.1:{free_port()}"
        started = subprocess.Popen(
            [*gunicorn_command(), "-b", free],
            cwd=ROOT,
            env={**os.environ, **env, "RELAY_BIND": busy},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert wait_until(lambda: _answers(f"http://{free}/healthz"), timeout=20)
        finally:
            started.terminate()
            _, stderr = started.communicate(timeout=40)
        assert "cannot start" not in stderr
        assert f"relay_app starting: relay_app {version()}: listening on {free};" in stderr
        refused = run_here([*gunicorn_command(), "-b", busy], {**env, "RELAY_BIND": free})
    assert refused.returncode == 2
    assert (
        f"relay_app cannot start: gunicorn's bind {busy} (-b or gunicorn.conf.py): the address "
        "is already in use; another program (or another relay) listens there. Stop it, or give "
        "gunicorn -b a free port"
    ) in refused.stderr


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:  # not listening yet, or a worker still starting
        return False


def test_spool_list_says_when_telegram_is_down(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay()
    fake_telegram.set("error", status=502, description="Bad Gateway")
    post(relay.webhook_url, titled("Waiting for Telegram"))
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    listed = run_relay_app(relay_env(fake_telegram, RELAY_SPOOL_PATH=spool_path), "spool", "list")
    assert listed.returncode == 0
    assert "1 pending, 0 dead" in listed.stdout
    assert "Telegram is not answering the relay (since " in listed.stdout


def test_the_relay_delivers_through_a_socks_proxy(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    with running_socks_proxy() as proxy:
        relay = start_relay(ALL_PROXY=proxy.url, NO_PROXY="", no_proxy="")
        reply, _ = post(relay.webhook_url, titled("Through the tunnel"))
        assert reply.status_code == 200
        assert "Through the tunnel" in fake_telegram.posted_to(CHAT_ID)[0].visible()
        assert proxy.carried  # it went through the proxy, not around it


def test_a_backup_taken_during_a_storm_is_whole_and_consistent(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str, tmp_path: Path
) -> None:
    relay = start_relay()
    fake_telegram.set("error", status=502, description="Bad Gateway")  # they all wait
    backup = tmp_path / "backup.sqlite3"
    environ = relay_env(fake_telegram, RELAY_SPOOL_PATH=spool_path)
    over = threading.Event()
    statuses: list[int] = []

    def storm(worker: int) -> None:
        # Until the backup is done, and after: it is taken in the middle of the storm.
        for n in range(STORM_MOST):
            if over.is_set():
                return
            statuses.append(post(relay.webhook_url, titled(f"Storm {worker}.{n}"))[0].status_code)

    with ThreadPoolExecutor(8) as pool:
        for worker in range(8):
            pool.submit(storm, worker)
        assert wait_until(lambda: len(statuses) >= 50, timeout=10)
        taken = run_relay_app(environ, "spool", "backup", str(backup))
        admitted_by_then = len(statuses)
        over.set()
    assert taken.returncode == 0, taken.stderr
    assert "it passed SQLite's integrity check" in taken.stdout
    assert set(statuses) <= {202, 502}
    with sqlite3.connect(backup) as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        ids = [row[0] for row in copy.execute("SELECT id FROM jobs ORDER BY id")]
        [(counted,)] = copy.execute("SELECT alerts FROM pending_count").fetchall()
    # One snapshot, taken mid-storm: every alert admitted before it and none after, all
    # pending, the count kept by the trigger agreeing.
    assert 50 <= len(ids) <= admitted_by_then + 8 < len(statuses) + 8
    assert ids == list(range(1, len(ids) + 1))
    assert counted == len(ids)
    assert f"{len(ids)} pending, 0 dead" in taken.stdout
    assert oct(backup.stat().st_mode & 0o777) == "0o600"
    again = run_relay_app(environ, "spool", "backup", str(backup))
    assert again.returncode == 1
    assert "exists already" in again.stderr


def test_a_press_glitchtip_cannot_answer_tells_the_presser_to_wait_and_the_log_glitchtip_url(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=fake_glitchtip.url)
    post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert wait_until(lambda: fake_telegram.posted_to(CHAT_ID), timeout=10)
    # Telegram shows it a moment before the relay has kept its buttons (it went in the
    # background); a person's press comes later than a test's.
    card = fake_telegram.posted_to(CHAT_ID)[0]
    assert wait_until(lambda: card_kept(spool_path, card), timeout=10), relay.logs()
    fake_glitchtip.stop()  # down: its port refuses connections
    answer = answered(fake_telegram, fake_telegram.press(card, "✅"))
    assert answer["text"].startswith("GlitchTip could not be reached (it refused the connection)")
    assert "GLITCHTIP_URL" not in answer["text"]  # the operator's word, in the log
    assert answer["text"].endswith("if it goes on, tell the relay's operator.")
    assert f"check GLITCHTIP_URL ({fake_glitchtip.url})" in relay.logs()


def test_a_glitchtip_token_of_the_wrong_shape_stops_the_relay_at_start(
    fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    env = relay_env(fake_telegram, RELAY_SPOOL_PATH=str(tmp_path / "spool.sqlite3"))
    env |= {"GLITCHTIP_API_TOKEN": "abc", "GLITCHTIP_URL": "http://127.0.0.1:9"}
    started = gunicorn_that_stops(env)
    assert started.returncode != 0
    assert "GLITCHTIP_API_TOKEN: is not a GlitchTip API token: GlitchTip's are 64 hex" in (
        started.stderr
    )
