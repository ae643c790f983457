"""Following GlitchTip and answering the chat, end to end under the real `gunicorn wsgi:app`
against the fake Telegram and the fake GlitchTip: the watcher posts an escalating issue again
once for the fleet, brings a card in step with what is done in GlitchTip's UI, and brings back
an issue ignored until more events; the chat's commands are registered and answered only where
the relay posts; a pasted link gets the issue's card, whose buttons act."""

from __future__ import annotations

import re
import sqlite3
import time
from contextlib import closing

from tests.conftest import OFFERED_COMMANDS
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    CHAT_SCALE,
    alert_for,
    answered,
    labels,
    once_edited,
    once_offering,
    only_message,
    post,
    spool_settled,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted


def watching(glitchtip: FakeGlitchTip, **more: str) -> dict[str, str]:
    """A relay of one worker with buttons in this GlitchTip, its watcher asking every second,
    each write to the chat waiting a quarter of a group's turn (the fake keeps no limits)."""
    return {
        "GLITCHTIP_API_TOKEN": TOKEN,
        "GLITCHTIP_URL": glitchtip.url,
        "RELAY_WATCH_INTERVAL": "1",
        "RELAY_TIME_SCALE": CHAT_SCALE,
        "WEB_CONCURRENCY": "1",
        **more,
    }


def test_an_issue_that_escalates_after_its_alert_is_posted_again_once_by_the_fleet(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**watching(fake_glitchtip, WEB_CONCURRENCY="2"))
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 7))
    assert reply.status_code == 200
    only_message(fake_telegram)
    # GlitchTip says nothing more of it; its counts do: 5,000 events this hour.
    hour = int(time.time() // 3600) * 3600
    fake_glitchtip.hourly["7"] = [[hour - 3600 * back, 2] for back in range(23, 0, -1)]
    fake_glitchtip.hourly["7"].append([hour, 5000])

    def escalating() -> list[Posted]:
        return [p for p in fake_telegram.posted_to(CHAT_ID) if "📈 Escalating" in p.visible()]

    assert wait_until(lambda: len(escalating()) == 1, timeout=15), relay.logs()
    [again] = escalating()
    assert "BACKEND-7A" in again.visible()
    # Rounds go on, one a second for the whole relay: none posts it again within the day.
    rounds = len([r for r in fake_glitchtip.requests if "issues-stats" in r.path])
    assert wait_until(
        lambda: len([r for r in fake_glitchtip.requests if "issues-stats" in r.path]) >= rounds + 3,
        timeout=15,
    )
    assert len(escalating()) == 1


def test_a_card_follows_what_is_done_to_its_issue_in_glitchtips_ui(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**watching(fake_glitchtip))  # once for the fleet: the snooze's test
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 8))
    assert reply.status_code == 200
    card = only_message(fake_telegram)
    assert "✅ Resolve" in labels(card)

    fake_glitchtip.issues["8"]["status"] = "resolved"  # someone resolves it in GlitchTip's UI
    assert wait_until(
        lambda: re.search(r"Resolved in GlitchTip at \d\d:\d\d UTC$", card.visible()), timeout=15
    ), relay.logs()
    assert "↩️ Reopen" in labels(card)
    assert "✅ Resolve" not in labels(card)

    fake_glitchtip.issues["8"]["status"] = "unresolved"  # a new event reopens it
    assert wait_until(
        lambda: re.search(r"Reopened in GlitchTip at \d\d:\d\d UTC$", card.visible()), timeout=15
    ), relay.logs()
    assert {"✅ Resolve", "🔕 Ignore…"} <= set(labels(card))
    assert len(fake_telegram.posted_to(CHAT_ID)) == 1  # edited, never posted again


def test_an_issue_ignored_until_more_events_comes_back_when_they_arrive(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**watching(fake_glitchtip, RELAY_SNOOZE_EVENTS="50", WEB_CONCURRENCY="2"))
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 9))  # 3 events so far
    assert reply.status_code == 200
    card = only_message(fake_telegram)
    answered(fake_telegram, fake_telegram.press(card, "🔕 Ignore…"))
    choosing = once_offering(fake_telegram, card, "🔕 Until 50 more events")
    answer = answered(fake_telegram, fake_telegram.press(choosing, "🔕 Until 50 more events"))
    assert answer["text"] == "Ignored BACKEND-9A in GlitchTip until 50 more events"
    assert fake_glitchtip.status(9) == "ignored"
    once_edited(fake_telegram, card, r"Ignored by @ada at \d\d:\d\d UTC until 50 more events$")

    def back() -> list[Posted]:
        return [p for p in fake_telegram.posted_to(CHAT_ID) if "is back" in p.visible()]

    # Events keep coming to the ignored issue (GlitchTip changes nothing), under 50 more first.
    fake_glitchtip.issues["9"]["count"] = "40"
    rounds = len([r for r in fake_glitchtip.requests if "issues-stats" in r.path])
    assert wait_until(
        lambda: len([r for r in fake_glitchtip.requests if "issues-stats" in r.path]) >= rounds + 2,
        timeout=15,
    )
    assert back() == []
    assert fake_glitchtip.status(9) == "ignored"
    fake_glitchtip.issues["9"]["count"] = "60"
    assert wait_until(lambda: len(back()) == 1, timeout=15), relay.logs()
    [said] = back()
    assert said.visible() == (
        "🔔 BACKEND-9A is back: 57 more events since @ada ignored it until 50 more events"
    )
    assert said.reply_to == card.message_id
    assert fake_glitchtip.status(9) == "unresolved"
    # The card follows: open again, with Resolve and Ignore… offered.
    once_offering(fake_telegram, card, "✅ Resolve")
    assert len(back()) == 1


def test_commands_are_registered_at_start_and_answered_only_where_the_relay_posts(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**watching(fake_glitchtip, RELAY_LANGUAGE="ru"))
    assert wait_until(lambda: len(fake_telegram.my_commands) == 6, timeout=15), relay.logs()
    assert [
        c["command"] for c in fake_telegram.my_commands
    ] == OFFERED_COMMANDS  # and /start, a private chat's, is not offered in the group's list
    assert fake_telegram.my_commands[0]["description"].startswith("незакрытые проблемы")
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 11))
    assert reply.status_code == 200
    only_message(fake_telegram)
    # The watcher reads the issue (its status and events) within a round or two.
    rounds = len([r for r in fake_glitchtip.requests if "issues-stats" in r.path])
    assert wait_until(
        lambda: len([r for r in fake_glitchtip.requests if "issues-stats" in r.path]) >= rounds + 2,
        timeout=15,
    )
    stranger = "-1009999999999"
    fake_telegram.say(stranger, "/issues")
    asked = fake_telegram.say(CHAT_ID, "/issues")
    assert wait_until(lambda: fake_telegram.replies_to(CHAT_ID, asked), timeout=15), relay.logs()
    [answer] = fake_telegram.replies_to(CHAT_ID, asked)
    assert answer.visible().startswith("📋 Незакрытые проблемы этого чата")
    assert "BACKEND-11A — событий: 3" in answer.visible()
    # It says how old its list is: read by the watcher's last round, seconds ago.
    assert re.search(r"🕑 Как прочитано \d+ с назад\.$", answer.visible()), answer.visible()
    assert fake_telegram.posted_to(stranger) == []


def test_a_link_pasted_in_the_chat_gets_the_issues_card_whose_buttons_act(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(**watching(fake_glitchtip))
    # An alert of the organization first: the chat follows its issues that the routes send
    # there (with no routes, every one: TELEGRAM_CHAT_ID takes what no route takes).
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 11))
    assert reply.status_code == 200

    # Followed once GlitchTip's own answer shows the organization holds the alert's issue (the
    # watcher's round asks for it among acme's), never on the webhook's word alone.
    def shown_by_glitchtip() -> bool:
        with closing(sqlite3.connect(spool_path)) as spool:
            return (
                spool.execute("SELECT 1 FROM organizations WHERE org = 'acme'").fetchone()
                is not None
            )

    assert wait_until(shown_by_glitchtip, timeout=15), relay.logs()
    link = fake_glitchtip.add_issue(12, "BACKEND-12A", title="KeyError: 'user'")
    said = fake_telegram.say(CHAT_ID, f"anyone on this? {link}")
    # The same issue, by someone else (one answer per person every few seconds): one card.
    fake_telegram.say(CHAT_ID, f"it is {link} again", user_id=4343, username="bo")
    assert wait_until(lambda: fake_telegram.replies_to(CHAT_ID, said), timeout=15), relay.logs()
    [card] = fake_telegram.replies_to(CHAT_ID, said)
    assert card.visible().split("\n")[0] == "🔗 BACKEND-12A · unresolved · seen 3 times"
    assert "KeyError: 'user'" in card.visible()
    assert "✅ Resolve" in labels(card)
    # Telegram shows the card a moment before the relay has kept its buttons; a person's press
    # comes seconds later, the test's at once.
    assert wait_until(lambda: spool_settled(spool_path), timeout=10)
    answer = answered(fake_telegram, fake_telegram.press(card, "✅ Resolve"))
    assert answer["text"] == "Resolved BACKEND-12A in GlitchTip"
    assert fake_glitchtip.status(12) == "resolved"
    assert len(fake_telegram.posted_to(CHAT_ID)) == 2  # the alert, and the card
