"""Acting on an alert from the chat, end to end: the real `gunicorn wsgi:app` with 2 workers,
the fake Telegram (buttons, presses, long polls, edits, webhooks) and the fake GlitchTip API.
A press resolves or reopens the issue in GlitchTip and edits the message; a press by someone
not on the list, or one GlitchTip fails, changes nothing and says why; one process polls for
the whole relay, and another takes over when it dies; a monitor's recovery is threaded under
its outage."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import requests

from relay_app.spool.holders import Holder
from relay_app.words import ENGLISH
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    ANSWER_WITHIN,
    CHAT_SCALE,
    alert_for,
    answered,
    card_kept,
    labels,
    once_edited,
    once_offering,
    only_card,
    only_message,
    post,
    run_relay_app,
    spool_settled,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, SECRET, relay_env
from tests.fake_glitchtip import READ_ONLY_TOKEN, TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted
from tests.payloads import uptime_alert
from tests.prometheus import parse, value

# The poller's intervals a quarter of production's (RELAY_TIME_SCALE): a long poll of 2 s
# (10 s), a lease of about 7 s (19 s). Polling for twice the lease, with a press each 2.5 s.
POLL_SCALE = 0.25
POLLING_FOR = 15.0
PRESS_EVERY = 2.5
LONG_POLL = 2
# What a finished action says at the end of the message.
DONE_LINE = r"{} by @ada at \d\d:\d\d UTC$"


def test_resolve_then_reopen_changes_the_issue_in_glitchtip_and_says_so_in_the_message(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=fake_glitchtip.url, RELAY_TIME_SCALE=CHAT_SCALE
    )
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert reply.status_code == 200
    posted = only_message(fake_telegram)
    assert labels(posted) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]

    answer = answered(fake_telegram, fake_telegram.press(posted, "✅ Resolve"))
    assert answer["text"] == "Resolved BACKEND-4A in GlitchTip"
    assert not answer["show_alert"]
    assert fake_glitchtip.status(4) == "resolved"
    assert [change.body for change in fake_glitchtip.changes()] == [{"status": "resolved"}]
    edited = once_edited(fake_telegram, posted, DONE_LINE.format("✅ Resolved"))
    assert edited.visible().startswith(posted.visible())
    assert labels(edited) == ["↩️ Reopen", "🔇 Mute 1 h", "📈"]

    answer = answered(fake_telegram, fake_telegram.press(edited, "↩️ Reopen"))
    assert answer["text"] == "Reopened BACKEND-4A in GlitchTip"
    assert fake_glitchtip.status(4) == "unresolved"
    reopened = once_edited(fake_telegram, posted, DONE_LINE.format("↩️ Reopened"))
    assert "Resolved by" not in reopened.visible()  # one line per issue: what it is now
    assert labels(reopened) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]


def test_a_cards_edit_that_met_telegrams_500s_catches_up_within_seconds_of_its_return(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    """An edit cannot post twice: one that failed is tried again 1, 2, 4 s later, not after
    the 30 s (RELAY_RETRY_WAIT, production's here) meant for a send that may have been
    posted."""
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        RELAY_TIME_SCALE=CHAT_SCALE,
        RELAY_RETRY_WAIT="30",
        RELAY_RETRY_ATTEMPTS="5",
    )
    post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    posted = only_card(fake_telegram, spool_path)
    fake_telegram.set("error", methods={"editMessageText"}, status=500)

    answer = answered(fake_telegram, fake_telegram.press(posted, "✅ Resolve"))
    assert answer["text"] == "Resolved BACKEND-4A in GlitchTip"

    def failed_edits() -> int:
        return sum(1 for r in fake_telegram.received if r.method == "editMessageText")

    assert wait_until(lambda: failed_edits() >= 2, timeout=10)
    fake_telegram.set("ok")
    back = time.monotonic()
    edited = once_edited(fake_telegram, posted, DONE_LINE.format("✅ Resolved"), timeout=10)
    assert time.monotonic() - back < 3.0
    assert labels(edited) == ["↩️ Reopen", "🔇 Mute 1 h", "📈"]


def test_a_digest_has_buttons_for_each_issue_and_a_press_changes_only_its_own(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=fake_glitchtip.url, RELAY_TIME_SCALE=CHAT_SCALE
    )
    # The first goes at once; the next two wait for the chat's next turn, and go together.
    for number in (1, 2, 3):
        post(relay.webhook_url, alert_for(fake_glitchtip, number))
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=15)
    digest = fake_telegram.posted_to(CHAT_ID)[1]
    assert labels(digest) == [
        "👀 On it BACKEND-2A",
        "✅ Resolve BACKEND-2A",
        "🔕 Ignore… BACKEND-2A",
        "🔇 Mute 1 h BACKEND-2A",
        "📈 BACKEND-2A",
        "👀 On it BACKEND-3A",
        "✅ Resolve BACKEND-3A",
        "🔕 Ignore… BACKEND-3A",
        "🔇 Mute 1 h BACKEND-3A",
        "📈 BACKEND-3A",
    ]
    rows = digest.keyboard["inline_keyboard"] if digest.keyboard else []
    assert [len(row) for row in rows] == [5, 5]
    # Telegram shows the digest a moment before the relay has kept its buttons; a person's
    # press comes seconds later, the test's at once.
    assert wait_until(lambda: spool_settled(spool_path), timeout=10)

    answer = answered(fake_telegram, fake_telegram.press(digest, "🔕 Ignore… BACKEND-2A"))
    assert answer["text"] == "BACKEND-2A: choose under the message for how long to ignore it"
    choosing = once_offering(fake_telegram, digest, "🔕 Forever BACKEND-2A")
    assert fake_glitchtip.status(2) == "unresolved"  # nothing changed yet
    assert labels(choosing)[:5] == [
        "🔕 1 h BACKEND-2A",
        "🔕 24 h BACKEND-2A",
        "🔕 Until 100 more events BACKEND-2A",
        "🔕 Forever BACKEND-2A",
        "◀️ Back BACKEND-2A",
    ]
    answer = answered(fake_telegram, fake_telegram.press(choosing, "🔕 Forever BACKEND-2A"))
    assert answer["text"] == "Ignored BACKEND-2A in GlitchTip"
    assert (fake_glitchtip.status(2), fake_glitchtip.status(3)) == ("ignored", "unresolved")
    edited = once_edited(fake_telegram, digest, DONE_LINE.format("🔕 BACKEND-2A ignored"))
    edited_rows = edited.keyboard["inline_keyboard"] if edited.keyboard else []
    assert [[b["text"] for b in row] for row in edited_rows] == [
        ["↩️ Reopen BACKEND-2A", "🔇 Mute 1 h BACKEND-2A", "📈 BACKEND-2A"],
        [
            "👀 On it BACKEND-3A",
            "✅ Resolve BACKEND-3A",
            "🔕 Ignore… BACKEND-3A",
            "🔇 Mute 1 h BACKEND-3A",
            "📈 BACKEND-3A",
        ],
    ]


def test_a_press_by_someone_not_on_the_list_is_refused_and_glitchtip_is_not_called(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        TELEGRAM_ACTION_USER_IDS="1111,2222",
    )
    post(relay.webhook_url, alert_for(fake_glitchtip, 7))
    posted = only_card(fake_telegram, spool_path)

    answer = answered(fake_telegram, fake_telegram.press(posted, "✅ Resolve", user_id=4242))
    assert (answer["text"], answer["show_alert"]) == (ENGLISH.press_not_allowed, True)
    assert fake_glitchtip.changes() == []  # the alert's details were read; nothing changed
    unchanged = fake_telegram.message(CHAT_ID, posted.message_id)
    assert (unchanged.text, unchanged.keyboard) == (posted.text, posted.keyboard)

    answer = answered(fake_telegram, fake_telegram.press(posted, "✅ Resolve", user_id=2222))
    assert answer["text"] == "Resolved BACKEND-7A in GlitchTip"
    assert fake_glitchtip.status(7) == "resolved"


@pytest.mark.parametrize(
    ("failure", "notice"),
    [
        ("down", "GlitchTip could not be reached"),
        ("bad token", "GlitchTip refused the change; the relay's operator has the details."),
        ("missing scope", "GlitchTip refused the change; the relay's operator has the details."),
    ],
)
def test_when_glitchtip_fails_the_press_says_what_to_do_and_the_message_stays(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    failure: str,
    notice: str,
    spool_path: str,
) -> None:
    token = {"bad token": "9" * 64, "missing scope": READ_ONLY_TOKEN}.get(failure, TOKEN)
    relay = start_relay(GLITCHTIP_API_TOKEN=token, GLITCHTIP_URL=fake_glitchtip.url)
    post(relay.webhook_url, alert_for(fake_glitchtip, 9))
    posted = only_card(fake_telegram, spool_path)
    if failure == "down":
        fake_glitchtip.stop()

    answer = answered(fake_telegram, fake_telegram.press(posted, "✅ Resolve"))
    assert notice in answer["text"]
    assert answer["show_alert"]
    if failure != "down":
        assert fake_glitchtip.status(9) == "unresolved"
    unchanged = fake_telegram.message(CHAT_ID, posted.message_id)
    assert (unchanged.text, unchanged.keyboard) == (posted.text, posted.keyboard)
    assert fake_telegram.edits == []
    relay.stop()
    logs = relay.logs()
    level = "WARNING" if failure == "down" else "ERROR"
    assert re.search(
        rf"\[{level}\] relay_app.cards.presses: a press by @ada to resolve BACKEND-9A failed", logs
    )
    if failure != "down":  # the operator's fix, and where to make a new token
        assert "FIX: GLITCHTIP_API_TOKEN " in logs
        assert "Profile → Auth Tokens" in logs
    assert token not in logs


def holder_pid(spool_path: str) -> int | None:
    """The process that leads the fleet, and so polls, as the spool names it."""
    with sqlite3.connect(spool_path) as db:
        row = db.execute("SELECT holder FROM leader").fetchone()
    holder = Holder.parse(row[0]) if row and row[0] else None
    return holder.pid if holder is not None else None


def test_one_process_polls_for_the_whole_relay_and_another_takes_over_when_it_dies(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        WEB_CONCURRENCY="2",
        RELAY_TIME_SCALE=str(POLL_SCALE),
    )
    post(relay.webhook_url, alert_for(fake_glitchtip, 5))
    posted = only_message(fake_telegram)
    # Several long polls by two workers, with a press every few seconds: Telegram never sees
    # two pollers at once (it would cut the earlier one short with 409 Conflict), however
    # often the leader renews its term.
    started = time.monotonic()
    presses = 0
    while time.monotonic() - started < POLLING_FOR:
        verb = "✅ Resolve" if presses % 2 == 0 else "↩️ Reopen"
        current = fake_telegram.message(CHAT_ID, posted.message_id)
        answered(fake_telegram, fake_telegram.press(current, verb))
        presses += 1
        time.sleep(PRESS_EVERY)  # the press's pace, as people make them: not a wait for a result
    assert fake_telegram.conflicts == 0
    assert len(fake_glitchtip.changes()) == presses
    assert len(fake_telegram.polls()) >= POLLING_FOR / LONG_POLL  # long polls, one after another

    pid = holder_pid(spool_path)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    current = fake_telegram.message(CHAT_ID, posted.message_id)
    answered(fake_telegram, fake_telegram.press(current, labels(current)[0]))
    assert time.monotonic() - killed < 5.0  # the other worker took over within seconds
    assert wait_until(lambda: holder_pid(spool_path) not in (None, pid), timeout=5)
    assert fake_telegram.conflicts == 0


def relay_app_command(
    fake: FakeTelegram, glitchtip: FakeGlitchTip, *args: str
) -> subprocess.CompletedProcess[str]:
    environ = relay_env(fake, GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=glitchtip.url)
    return run_relay_app(environ, *args)


def test_webhook_mode_takes_presses_with_telegrams_secret_header_and_refuses_them_without(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=fake_glitchtip.url, TELEGRAM_UPDATES="webhook"
    )
    registered = relay_app_command(
        fake_telegram, fake_glitchtip, "telegram-webhook", "set", relay.url
    )
    assert registered.returncode == 0, registered.stderr
    assert "/telegram/[secret " in registered.stdout
    assert SECRET not in registered.stdout + registered.stderr
    assert fake_telegram.webhook_url == f"{relay.url}/telegram/{SECRET}"
    post(relay.webhook_url, alert_for(fake_glitchtip, 6))
    posted = only_message(fake_telegram)

    answer = answered(fake_telegram, fake_telegram.press(posted, "✅ Resolve"))
    assert answer["text"] == "Resolved BACKEND-6A in GlitchTip"
    assert fake_telegram.webhook_statuses == [200]
    assert fake_glitchtip.status(6) == "resolved"
    assert fake_telegram.polls() == []  # nothing polls in this mode
    # Replies come the same way: Telegram was asked for messages as well as presses.
    assert fake_telegram.webhook_allowed_updates == ["message", "callback_query", "my_chat_member"]
    fake_telegram.reply(posted, "Deployed the fix")
    assert wait_until(lambda: fake_glitchtip.comments(6), timeout=ANSWER_WITHIN)
    assert fake_glitchtip.comments(6) == [
        '"Ada Lovelace" (@ada, id 4242) in Telegram:\nDeployed the fix'
    ]
    assert fake_telegram.webhook_statuses == [200, 200]

    # Whoever has GlitchTip's URL knows the path; without Telegram's header nothing happens.
    update = {"update_id": 99, "callback_query": {"id": "forged", "data": "o:abc"}}
    forged = requests.post(f"{relay.url}/telegram/{SECRET}", json=update, timeout=10)
    assert forged.status_code == 403
    wrong_path = requests.post(f"{relay.url}/telegram/not-the-secret", json=update, timeout=10)
    assert wrong_path.status_code == 404
    assert len(fake_glitchtip.changes()) == 1

    removed = relay_app_command(fake_telegram, fake_glitchtip, "telegram-webhook", "delete")
    assert removed.returncode == 0, removed.stderr
    assert fake_telegram.webhook_url == ""


def test_a_monitor_back_up_is_a_reply_to_its_outage_which_says_how_long_it_lasted(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(RELAY_TIME_SCALE=CHAT_SCALE)  # no GlitchTip token needed for this
    post(relay.webhook_url, uptime_alert(down=True, name="Checkout API"))
    down = only_message(fake_telegram)
    post(relay.webhook_url, uptime_alert(down=False, name="Checkout API"))
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=10)
    up = fake_telegram.posted_to(CHAT_ID)[1]
    assert up.visible().startswith("✅ UP · Checkout API")
    assert up.reply_to == down.message_id

    def marked_over() -> bool:
        return (
            "✅ Checkout API back up after"
            in fake_telegram.message(CHAT_ID, down.message_id).visible()
        )

    assert wait_until(marked_over, timeout=10)
    assert re.search(
        r"back up after \d+ s$", fake_telegram.message(CHAT_ID, down.message_id).visible()
    )
    # A second recovery without a new outage is sent plainly.
    post(relay.webhook_url, uptime_alert(down=False, name="Checkout API"))
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 3, timeout=10)
    assert fake_telegram.posted_to(CHAT_ID)[2].reply_to is None


def test_nobody_on_it_calls_the_routes_people_under_the_alert_and_on_it_stops_the_call(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
    spool_path: str,
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(
        "[[route]]\nissue = 'BACKEND-1A'\nescalate = [{ after = '2s', mention = ['@lead'] }]\n"
        "[[route]]\nissue = 'BACKEND-2A'\nescalate = [{ after = '4s', mention = ['@lead'] }]\n"
    )
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        RELAY_ROUTES=str(routes),
        RELAY_TIME_SCALE=CHAT_SCALE,
    )
    post(relay.webhook_url, alert_for(fake_glitchtip, 1))
    nobody = only_message(fake_telegram)
    post(relay.webhook_url, alert_for(fake_glitchtip, 2))
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=10)
    taken = fake_telegram.posted_to(CHAT_ID)[1]
    assert wait_until(lambda: card_kept(spool_path, taken), timeout=10)
    answer = answered(fake_telegram, fake_telegram.press(taken, "👀 On it"))
    assert answer["text"].startswith("You are on BACKEND-2A")
    once_edited(fake_telegram, taken, r"👀 @ada is on it since \d\d:\d\d UTC$")

    def replies_to(posted: Posted) -> list[Posted]:
        return [p for p in fake_telegram.posted_to(CHAT_ID) if p.reply_to == posted.message_id]

    assert wait_until(lambda: len(replies_to(nobody)) == 1, timeout=15)
    [call] = replies_to(nobody)
    assert call.visible() == "⏰ Nobody has taken this alert in 1 min: @lead"

    def counted() -> dict[str, float]:
        samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
        name = "relay_escalation_steps_total"
        return {o: value(samples, name, outcome=o) for o in ("fired", "stopped")}

    # The taken alert's step was stopped at the press: past its time, nobody is called for it.
    assert wait_until(lambda: counted() == {"fired": 1.0, "stopped": 1.0}, timeout=10)
    assert replies_to(taken) == []
