"""The relay tried as an attacker would, end to end under the real `gunicorn wsgi:app` (2
workers): one who knows GlitchTip's webhook URL, and one who can merely reach the port.
docs/security.md holds the threat model these tests hold the relay to."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from relay_app.telegram.updates_webhook import SECRET_HEADER
from relay_app.web.http_worker import REQUEST_READ_TIMEOUT
from relay_app.words import ENGLISH
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    card_kept,
    labels,
    once_edited,
    post,
    register_webhook,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, SECRET, RelayProcess
from tests.fake_glitchtip import TOKEN as GLITCHTIP_TOKEN
from tests.fake_glitchtip import FakeGlitchTip, running_fake_glitchtip
from tests.fake_telegram import FakeTelegram, Posted
from tests.payloads import issue, issue_alert

# GlitchTip waits this long for an answer, and never sends the alert again.
GLITCHTIP_PATIENCE = 10.0
ANSWER_WITHIN = 10.0

# What a message says of the issues an alert counts and does not attach, without a token.
UNNAMED = " GlitchTip did not attach: set GLITCHTIP_API_TOKEN for the relay to name them"


def acting(glitchtip: FakeGlitchTip, **overrides: str) -> dict[str, str]:
    """The variables for buttons that act in this GlitchTip."""
    return {
        "GLITCHTIP_API_TOKEN": GLITCHTIP_TOKEN,
        "GLITCHTIP_URL": glitchtip.url,
        "RELAY_TIME_SCALE": "0.25",  # each press's edit waits for a chat's turn: a quarter
        **overrides,
    }


def alert_on(glitchtip: FakeGlitchTip, number: int) -> dict[str, Any]:
    return issue_alert(issue(number, link=glitchtip.add_issue(number, f"BACKEND-{number}A")))


def only_message(fake: FakeTelegram) -> Posted:
    """The one message in the chat, as first posted (the fake's own copy changes with edits,
    as the chat does)."""
    assert wait_until(lambda: len(fake.posted_to(CHAT_ID)) == 1, timeout=10)
    [posted] = fake.posted_to(CHAT_ID)
    return dataclasses.replace(posted)


def alert_pressed_by_webhook(
    start_relay: StartRelay, fake: FakeTelegram, glitchtip: FakeGlitchTip, **overrides: str
) -> tuple[RelayProcess, Posted]:
    """A relay that takes presses by webhook, registered with Telegram as the operator does,
    and an alert about issue 4 in the chat, with its buttons."""
    relay = start_relay(**acting(glitchtip, TELEGRAM_UPDATES="webhook", **overrides))
    register_webhook(fake, relay.url, acting(glitchtip))
    post(relay.webhook_url, alert_on(glitchtip, 4))
    return relay, only_message(fake)


def test_the_token_goes_only_to_glitchtip_url_whatever_an_alert_links_to(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**acting(fake_glitchtip))
    with running_fake_glitchtip() as elsewhere:
        port = elsewhere.url.rsplit(":", 1)[1]
        payload = issue_alert(
            issue(4, link=fake_glitchtip.add_issue(4, "BACKEND-4A")),
            issue(5, link=elsewhere.add_issue(5, "BACKEND-5A")),  # another host, as a webhook says
            issue(6, link=f"http://ada:hunter2@127.0.0.1:{port}/acme/issues/6"),
        )
        reply, _ = post(relay.webhook_url, payload)
        assert reply.status_code == 200
        posted = only_message(fake_telegram)
        # Buttons for GlitchTip's own issue only (named without a label: it is the only one).
        assert labels(posted) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]
        press = fake_telegram.press(posted, "✅ Resolve")
        assert fake_telegram.wait_for_answer(press, timeout=ANSWER_WITHIN) is not None
        assert fake_glitchtip.status(4) == "resolved"
        assert elsewhere.requests == []  # no token, no request: not even a look
    relay.stop()
    logs = relay.logs()
    assert logs.count("whose link is not at its source's address") == 1
    assert "GLITCHTIP_PUBLIC_URL" in logs
    assert "hunter2" not in logs


def forged_press(posted: Posted, verb: str, *, update_id: int, user_id: int) -> dict[str, Any]:
    [data] = [b["callback_data"] for b in posted.buttons() if b["text"].startswith(verb)]
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"forged-{update_id}",
            "from": {"id": user_id, "is_bot": False, "first_name": "Ada", "username": "ada"},
            "message": {"message_id": posted.message_id, "chat": {"id": int(CHAT_ID)}},
            "data": data,
        },
    }


def test_only_telegram_can_press_a_header_derived_from_the_webhook_secret_is_refused(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay, posted = alert_pressed_by_webhook(
        start_relay, fake_telegram, fake_glitchtip, TELEGRAM_ACTION_USER_IDS="1111"
    )

    # Everything an attacker with GlitchTip's webhook URL can compute: the path, and the header
    # as older relays derived it from RELAY_WEBHOOK_SECRET; and an allowed user's id.
    derived = hmac.new(SECRET.encode(), b"telegram-updates", hashlib.sha256).hexdigest()
    assert fake_telegram.webhook_secret_token not in (derived, "")
    update = forged_press(posted, "✅ Resolve", update_id=5000, user_id=1111)
    for header in ({SECRET_HEADER: derived}, {SECRET_HEADER: SECRET}, {}):
        forged = requests.post(
            f"{relay.url}/telegram/{SECRET}", json=update, headers=header, timeout=10
        )
        assert forged.status_code == 403
    assert fake_glitchtip.changes() == []  # the alert's details were read; nothing changed
    assert fake_telegram.edits == []

    # Telegram's own press, with its header, by the allowed user, does act.
    press = fake_telegram.press(posted, "✅ Resolve", user_id=1111)
    assert fake_telegram.wait_for_answer(press, timeout=ANSWER_WITHIN) is not None
    assert fake_glitchtip.status(4) == "resolved"


def test_an_update_delivered_again_or_replayed_acts_once(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    _, posted = alert_pressed_by_webhook(start_relay, fake_telegram, fake_glitchtip)
    press = fake_telegram.press(posted, "✅ Resolve")
    assert fake_telegram.wait_for_answer(press, timeout=ANSWER_WITHIN) is not None
    edited = once_edited(fake_telegram, posted, "Resolved by @ada")

    # Telegram delivers it again (its answer was slow or lost), to one worker or the other.
    for _ in range(4):
        assert fake_telegram.deliver_again(press) == 200
    # Reopen and Resolve again in GlitchTip meanwhile: a replay must not resolve it a 2nd time.
    fake_glitchtip.issues["4"]["status"] = "unresolved"
    replayed = forged_press(posted, "✅ Resolve", update_id=9999, user_id=4242)
    replayed["callback_query"]["id"] = press  # the same press under a new update id
    headers = {SECRET_HEADER: fake_telegram.webhook_secret_token}
    reply = requests.post(fake_telegram.webhook_url, json=replayed, headers=headers, timeout=10)
    assert reply.status_code == 200
    assert len(fake_glitchtip.changes()) == 1
    assert fake_glitchtip.status(4) == "unresolved"
    assert fake_telegram.message(CHAT_ID, posted.message_id).text == edited.text


def test_presses_at_the_same_moment_make_one_change(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    # Each press checked the button's state, then called GlitchTip, then recorded: 12 Reopen
    # presses at once made 9 changes, and Resolve with Ignore left whichever landed last.
    _, posted = alert_pressed_by_webhook(start_relay, fake_telegram, fake_glitchtip)
    fake_glitchtip.write_delay = 0.5  # every press is read before any change is made
    presses: list[str] = []
    lock = threading.Lock()

    def press(label: str, user_id: int) -> None:
        pressed = fake_telegram.press(posted, label, user_id=user_id, username=f"user{user_id}")
        with lock:
            presses.append(pressed)

    people = [
        threading.Thread(target=press, args=(label, 1000 + n))
        for n, label in enumerate(["✅ Resolve"] * 6)
    ]
    for person in people:
        person.start()
    for person in people:
        person.join(ANSWER_WITHIN)
    answers = [fake_telegram.wait_for_answer(p, timeout=ANSWER_WITHIN) for p in presses]
    assert len(fake_glitchtip.changes()) == 1
    out_of_date = [a for a in answers if a is not None and a["text"] == ENGLISH.press_out_of_date]
    assert len(out_of_date) == 5
    edited = once_edited(fake_telegram, posted, "Resolved by @user")
    assert labels(edited) == ["↩️ Reopen", "🔇 Mute 1 h", "📈"]
    assert fake_glitchtip.status(4) == "resolved"


def test_a_button_the_message_no_longer_shows_changes_nothing(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(**acting(fake_glitchtip))  # presses by polling
    post(relay.webhook_url, alert_on(fake_glitchtip, 4))
    posted = only_message(fake_telegram)
    # Telegram shows it a moment before the relay has kept its buttons (it went in the
    # background); a person's press comes later than a test's.
    assert wait_until(lambda: card_kept(spool_path, posted), timeout=10), relay.logs()
    resolved = fake_telegram.press(posted, "✅ Resolve")
    assert fake_telegram.wait_for_answer(resolved, timeout=ANSWER_WITHIN) is not None
    assert labels(once_edited(fake_telegram, posted, "Resolved by @ada")) == [
        "↩️ Reopen",
        "🔇 Mute 1 h",
        "📈",
    ]

    # A client that still shows the first keyboard (or a forged press) sends Ignore.
    stale = fake_telegram.press(posted, "🔕 Ignore…")
    answer = fake_telegram.wait_for_answer(stale, timeout=ANSWER_WITHIN)
    assert answer is not None
    assert (answer["text"], answer["show_alert"]) == (ENGLISH.press_out_of_date, True)
    assert fake_glitchtip.status(4) == "resolved"
    assert len(fake_glitchtip.changes()) == 1


@dataclasses.dataclass
class Drips:
    """What the slow clients saw so far, updated as it goes."""

    sending: int = 0  # connections that sent their request line
    closed: int = 0  # closings the relay made


@contextmanager
def dripping(port: int, connections: int, *, seconds: float) -> Iterator[Drips]:
    """`connections` clients that each send a request line and then one byte a second, and
    connect again when the relay closes them, for at most `seconds`."""
    stop = threading.Event()
    drips = Drips()
    counting = threading.Lock()
    give_up_at = time.monotonic() + seconds

    def drip() -> None:
        while not stop.is_set() and time.monotonic() < give_up_at:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                    sock.sendall(b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\n")
                    with counting:
                        drips.sending += 1
                    while not stop.wait(1.0) and time.monotonic() < give_up_at:
                        sock.sendall(b"X")
            except OSError:  # closed by the relay: connect again
                with counting:
                    drips.closed += 1

    threads = [threading.Thread(target=drip, daemon=True) for _ in range(connections)]
    for thread in threads:
        thread.start()
    try:
        yield drips
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)


def test_slow_clients_cannot_hold_the_webhook_from_glitchtip(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(WEB_CONCURRENCY="2")  # 2 x 32 threads: fewer than the slow clients
    with dripping(relay.port, 80, seconds=25) as drips:
        assert wait_until(lambda: drips.sending >= 80, timeout=10)  # every slow client at it
        for number in (1, 2, 3):
            reply, seconds = post(relay.webhook_url, issue_alert(issue(number)))
            assert reply.status_code in (200, 202)
            assert seconds < GLITCHTIP_PATIENCE
            time.sleep(REQUEST_READ_TIMEOUT)  # the slow ones are closed and come back meanwhile
        # Closed after REQUEST_READ_TIMEOUT, not left to drip for as long as they like.
        assert wait_until(lambda: drips.closed >= 80, timeout=REQUEST_READ_TIMEOUT + 3)
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 3, timeout=10)
    relay.stop()
    assert "did not arrive whole within 5 s" in relay.logs()


def test_a_2000_issue_webhook_is_answered_at_once_and_says_how_many_it_does_not_show(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    issues = [issue(n, culprit=None, fields=[]) for n in range(1, 2001)]
    reply, seconds = post(relay.webhook_url, issue_alert(*issues))
    assert reply.status_code == 200
    # Fitting a message is linear in the webhook's size and stops at 100 issues: milliseconds.
    # Before, this took 7 to 8 s of a pinned core, close to GlitchTip's 10.
    assert seconds < 2.0
    [text] = fake_telegram.texts()
    shown = len(re.findall(r"ZeroDivisionError: division by zero #\d+", text))
    hidden = re.search(
        r"…and (\d+) more issues" + UNNAMED,
        text,
    )
    assert hidden is not None
    assert shown + int(hidden.group(1)) == 2000


def test_a_body_over_a_mib_is_refused_and_a_chunked_one_is_not_taken(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    # A real alert, padded past 1 MiB with white space: its first MiB parses, and was once
    # sent as if it were the whole body.
    payload = issue_alert(issue(1))
    body = json.dumps(payload).encode() + b" " * (2 * 1024 * 1024)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    # GlitchTip and Telegram send a Content-Length: a chunked body is refused from its head.
    chunked = requests.post(relay.webhook_url, data=chunks(), timeout=10)
    assert chunked.status_code == 411
    with_length = requests.post(relay.webhook_url, data=body, timeout=10)
    assert with_length.status_code == 413
    small, _ = post(relay.webhook_url, payload)  # the relay is none the worse for it
    assert small.status_code == 200
    assert len(fake_telegram.posted_to(CHAT_ID)) == 1


def test_the_spool_is_private_to_the_relays_user(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str, tmp_path: Path
) -> None:
    relay = start_relay()
    post(relay.webhook_url, issue_alert(issue(1)))
    relay.stop()
    for name in (spool_path, f"{spool_path}-wal", f"{spool_path}-shm", f"{spool_path}.lock"):
        if os.path.exists(name):
            assert stat.S_IMODE(os.stat(name).st_mode) == 0o600, name
    assert "can be read by other users" not in relay.logs()

    # A spool an older relay made under umask 022: one WARNING at start, with the fix.
    older = tmp_path / "older.sqlite3"
    os.rename(spool_path, older)
    os.chmod(older, 0o644)
    again = start_relay(RELAY_SPOOL_PATH=str(older), WEB_CONCURRENCY="2")
    post(again.webhook_url, issue_alert(issue(2)))
    again.stop()
    warnings = [line for line in again.logs().splitlines() if "can be read by other" in line]
    assert len(warnings) == 1
    assert "[WARNING]" in warnings[0]
    assert f"chmod 600 {older}" in warnings[0]


def test_clients_that_hang_up_mid_request_leave_the_worker_as_it_was(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(WEB_CONCURRENCY="1")  # one worker: every connection meets the same loop
    for _ in range(300):
        with socket.create_connection(("127.0.0.1", relay.port), timeout=2) as sock:
            sock.sendall(b"POST /webhook/guess HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
    for number in range(1, 21):
        reply, _ = post(relay.webhook_url, issue_alert(issue(number)))
        assert reply.status_code in (200, 202)
    relay.stop()
    assert "Traceback" not in relay.logs()
    assert relay.logs().count("Booting worker") == 1  # never restarted
