"""Quiet when asked, answerable from the chat, in the team's language, end to end: the real
`gunicorn wsgi:app` with 2 workers, the fake Telegram and the fake GlitchTip API.

A mute press holds the next alert for its issue and lets others through, across a restart, and
Unmute ends it with one message that counts what it held; `relay-app silence` adds, lists and
expires silences that a second relay on the same spool honours; a reply from an allowed person
becomes a comment on the issue, one from anyone else does nothing; and with RELAY_LANGUAGE=ru
every word the relay writes in the chat is Russian."""

from __future__ import annotations

import re
from typing import Any

import requests

from relay_app.words import RUSSIAN
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    alert_for,
    answered,
    card_kept,
    labels,
    once_edited,
    once_offering,
    post,
    run_relay_app,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, relay_env
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted
from tests.payloads import issue, issue_alert, uptime_alert
from tests.prometheus import parse, value
from tests.telegram_rules import visible_text

RUSSIAN_FIELDS = [
    {"title": "Project", "value": "магазин", "short": True},
    {"title": "Environment", "value": "прод", "short": True},
    {"title": "Server Name", "value": "веб-1", "short": True},
    {"title": "Release", "value": "1.4.2", "short": False},
]
ADA = 4242  # the fake's person in the chat (Ada Lovelace, @ada)
WITHIN = 10.0


def with_glitchtip(fake_glitchtip: FakeGlitchTip, **more: str) -> dict[str, str]:
    """Buttons and replies in this GlitchTip; the chat's pace a quarter of a group's, since
    each press's edit and each reply waits for a turn of its own (the fake keeps no limits
    here)."""
    return {
        "GLITCHTIP_API_TOKEN": TOKEN,
        "GLITCHTIP_URL": fake_glitchtip.url,
        "RELAY_TIME_SCALE": "0.25",
        **more,
    }


def nth_message(fake: FakeTelegram, count: int) -> Posted:
    """The `count`th message in the chat, once it is there."""
    assert wait_until(lambda: len(fake.posted_to(CHAT_ID)) >= count, timeout=WITHIN)
    return fake.posted_to(CHAT_ID)[count - 1]


def in_environment(name: str) -> list[dict[str, Any]]:
    return [
        {"title": "Project", "value": "backend", "short": True},
        {"title": "Environment", "value": name, "short": True},
    ]


def metrics(url: str) -> dict[Any, float]:
    return parse(requests.get(f"{url}/metrics", timeout=5).text)


def test_a_muted_issue_is_held_across_a_restart_and_unmute_says_how_many_came(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(**with_glitchtip(fake_glitchtip))
    post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    first = nth_message(fake_telegram, 1)
    # Telegram shows it a moment before the relay has kept its buttons (it went in the
    # background); a person's press comes later than a test's.
    assert wait_until(lambda: card_kept(spool_path, first), timeout=10), relay.logs()

    answer = answered(fake_telegram, fake_telegram.press(first, "🔇 Mute 1 h"))
    assert re.fullmatch(
        r"Muted BACKEND-4A in this chat until \d\d:\d\d UTC; GlitchTip is not changed",
        answer["text"],
    )
    muted = once_edited(fake_telegram, first, r"🔇 Muted in this chat by @ada until \d\d:\d\d UTC$")
    assert labels(muted) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔊 Unmute", "📈"]
    assert fake_glitchtip.changes() == []  # GlitchTip is not changed

    held, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert held.status_code == 200
    assert held.json()["status"] == "silenced"
    other, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 5))
    assert other.status_code in (200, 202)
    second = nth_message(fake_telegram, 2)
    assert "BACKEND-5A" in second.visible()
    samples = metrics(relay.url)
    assert value(samples, "relay_silences_active") == 1
    assert value(samples, "relay_silences_held_alerts") == 1
    assert value(samples, "relay_alerts_silenced_total") == 1

    relay.stop()
    relay = start_relay(**with_glitchtip(fake_glitchtip))
    again, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert again.json()["status"] == "silenced"
    assert len(fake_telegram.posted_to(CHAT_ID)) == 2

    current = fake_telegram.message(CHAT_ID, first.message_id)
    answer = answered(fake_telegram, fake_telegram.press(current, "🔊 Unmute"))
    assert answer["text"] == "Unmuted BACKEND-4A in this chat"
    summary = nth_message(fake_telegram, 3)
    assert re.match(
        r"🔊 Silence over \(issue BACKEND-4A, .+ UTC\): 2 alerts held meanwhile\n\n",
        summary.visible(),
    )
    assert re.search(r"BACKEND-4A .* ×2$", summary.visible())
    assert labels(once_offering(fake_telegram, first, "🔇 Mute 1 h"))[-2] == "🔇 Mute 1 h"
    assert value(metrics(relay.url), "relay_silences_active") == 0

    after, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert after.json()["status"] != "silenced"
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 4, timeout=WITHIN)


def test_the_command_line_silences_what_a_second_relay_then_holds_and_expires_it(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    # The summaries wait for the chat's turns: a quarter of a group's (the fake keeps no limits).
    first, second = start_relay(RELAY_TIME_SCALE="0.25"), start_relay(RELAY_TIME_SCALE="0.25")
    environ = relay_env(fake_telegram, RELAY_SPOOL_PATH=spool_path)

    added = run_relay_app(
        environ,
        *("silence", "add", "--environment", "staging", "--for", "2h"),
        *("--comment", "load test on staging", "--by", "ops"),
    )
    assert added.returncode == 0, added.stderr
    silence_id = re.search(r"silence (\d+) added: environment=staging in chat", added.stdout)
    assert silence_id is not None, added.stdout
    listed = run_relay_app(environ, "silence", "list")
    assert listed.returncode == 0
    assert re.search(
        rf"^{silence_id.group(1)} +{CHAT_ID} +.+ +active +0 +ops +environment=staging"
        r" +load test on staging$",
        listed.stdout,
        re.MULTILINE,
    ), listed.stdout

    staging = issue_alert(issue(7, title="Staging only", fields=in_environment("staging")))
    production = issue_alert(issue(8, title="Production", fields=in_environment("production")))
    held, _ = post(second.webhook_url, staging)
    assert held.json() == {"status": "silenced", "silence": int(silence_id.group(1))}
    sent, _ = post(first.webhook_url, production)
    assert sent.status_code in (200, 202)
    assert "Production" in nth_message(fake_telegram, 1).visible()

    expired = run_relay_app(environ, "silence", "expire", silence_id.group(1), "--by", "ops")
    assert expired.returncode == 0, expired.stderr
    assert f"silence {silence_id.group(1)} expired; it held 1 alert(s)" in expired.stdout
    summary = nth_message(fake_telegram, 2)
    assert summary.visible().startswith("🔊 Silence over (environment staging, ")
    assert "Staging only" in summary.visible()

    again = run_relay_app(environ, "silence", "expire", silence_id.group(1))
    assert "had ended already" in again.stdout
    unknown = run_relay_app(environ, "silence", "expire", "999")
    assert unknown.returncode == 1
    assert "no such silence" in unknown.stderr
    everything = run_relay_app(environ, "silence", "list", "--all")
    assert "expired by ops" in everything.stdout
    after, _ = post(second.webhook_url, staging)
    assert after.json()["status"] != "silenced"
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 3, timeout=WITHIN)

    # One that runs out: whichever relay looks first ends it and queues its summary.
    brief = run_relay_app(
        environ, "silence", "add", "--title", "staging", "--for", "3s", "--comment", "brief"
    )
    assert brief.returncode == 0, brief.stderr
    assert post(first.webhook_url, staging)[0].json()["status"] == "silenced"
    summary = nth_message(fake_telegram, 4)
    assert summary.visible().startswith("🔊 Silence over (title containing “staging”, ")
    assert "1 alert held meanwhile" in summary.visible()


def test_a_reply_from_an_allowed_person_becomes_a_comment_and_a_strangers_does_nothing(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**with_glitchtip(fake_glitchtip, TELEGRAM_ACTION_USER_IDS=str(ADA)))
    post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    alert = nth_message(fake_telegram, 1)

    reply_id = fake_telegram.reply(alert, "Rolling back, give me ten minutes")
    assert wait_until(lambda: fake_glitchtip.comments(4), timeout=WITHIN)
    # It came by a poll that asked for messages as well as presses (and the bot blocked in a
    # private chat).
    assert {tuple(poll.body["allowed_updates"]) for poll in fake_telegram.polls()} == {
        ("message", "callback_query", "my_chat_member")
    }
    assert fake_glitchtip.comments(4) == [
        '"Ada Lovelace" (@ada, id 4242) in Telegram:\nRolling back, give me ten minutes'
    ]
    assert wait_until(lambda: fake_telegram.reactions, timeout=WITHIN)
    [reaction] = fake_telegram.reactions
    assert reaction["message_id"] == reply_id
    assert reaction["reaction"] == [{"type": "emoji", "emoji": "✍"}]

    fake_telegram.reply(alert, "I am not on the list", user_id=777, username="mallory")
    assert wait_until(
        lambda: value(metrics(relay.url), "relay_replies_total", outcome="refused") == 1,
        timeout=WITHIN,
    )
    assert fake_glitchtip.comments(4) == [
        '"Ada Lovelace" (@ada, id 4242) in Telegram:\nRolling back, give me ten minutes'
    ]
    assert len(fake_telegram.reactions) == 1
    assert len(fake_telegram.posted_to(CHAT_ID)) == 1  # no answer to a stranger

    del fake_glitchtip.issues["4"]  # deleted in GlitchTip meanwhile
    gone_id = fake_telegram.reply(alert, "Fixed now")
    assert wait_until(lambda: fake_telegram.replies_to(CHAT_ID, gone_id), timeout=WITHIN)
    [said] = fake_telegram.replies_to(CHAT_ID, gone_id)
    assert said.visible().startswith(
        "Your reply was not posted to GlitchTip: GlitchTip has no such issue any more"
    )


def test_a_reply_to_a_message_about_several_issues_asks_which_one_it_is_for(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**with_glitchtip(fake_glitchtip))
    post(relay.webhook_url, alert_for(fake_glitchtip, 4, 5))
    alert = nth_message(fake_telegram, 1)

    asked_id = fake_telegram.reply(alert, "Looking into it")
    assert wait_until(lambda: fake_telegram.replies_to(CHAT_ID, asked_id), timeout=WITHIN)
    [question] = fake_telegram.replies_to(CHAT_ID, asked_id)
    assert "BACKEND-4A, BACKEND-5A" in question.visible()
    assert fake_glitchtip.comments(4) == fake_glitchtip.comments(5) == []

    fake_telegram.reply(alert, "BACKEND-5A: looking into it")
    assert wait_until(lambda: fake_glitchtip.comments(5), timeout=WITHIN)
    assert fake_glitchtip.comments(5) == [
        '"Ada Lovelace" (@ada, id 4242) in Telegram:\nlooking into it'
    ]
    assert fake_glitchtip.comments(4) == []


def latin_words(text: str) -> list[str]:
    """Words in Latin letters that are not names: GlitchTip, UTC, short ids and variables."""
    allowed = re.compile(r"GlitchTip|UTC|[A-Z][A-Z0-9_]*(?:-[A-Z0-9]+)+|@ada|[A-Z_]{4,}")
    return [word for word in re.findall(r"[@A-Za-z][\w@-]*", text) if not allowed.fullmatch(word)]


# What GlitchTip's sample event says (glitchtip_samples/), which no language changes: where the
# error was raised, its source line and the exception's value.
GLITCHTIP_DATA = ("shop/cart.py:4", "cart.py:4", "total", "division by zero")


def words_of(posted: Posted) -> str:
    """A message's visible text without GlitchTip's own data: its code (the source line), the
    stack folded under it (files and functions, whose words are the app's), and the sample
    event's file, function and exception value."""
    without_code = re.sub(
        r"<code>.*?</code>|<pre>.*?</pre>|<blockquote expandable>.*?</blockquote>",
        "",
        posted.text,
        flags=re.DOTALL,
    )
    text = visible_text(without_code, parse_mode=posted.parse_mode)
    for data in GLITCHTIP_DATA:
        text = text.replace(data, "")
    return text


def test_in_russian_every_word_the_relay_writes_in_the_chat_is_russian(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**with_glitchtip(fake_glitchtip, RELAY_LANGUAGE="ru"))
    links = [fake_glitchtip.add_issue(n, f"BACKEND-{n}A") for n in (4, 5, 6)]

    def alert(n: int, link: str) -> dict[str, Any]:
        payload = issue_alert(
            issue(n, title="Деление на ноль", culprit=None, link=link, fields=RUSSIAN_FIELDS)
        )
        payload["sections"][0]["activitySubtitle"] = f"[View Issue BACKEND-{n}A]({link})"
        return payload

    # One alone, then two that wait for the chat's next turn and go as a digest.
    for n, link in zip((4, 5, 6), links, strict=True):
        post(relay.webhook_url, alert(n, link))
    single, digest = nth_message(fake_telegram, 1), nth_message(fake_telegram, 2)
    assert single.visible().startswith("🔴 Алерт GlitchTip")
    assert "Проект: магазин" in single.visible()
    assert digest.visible().startswith("🗂 2 алерта, получены с ")

    said = []
    for label in ("🔇 Без звука 1 ч", "🔊 Включить звук", "✅ Закрыть", "↩️ Открыть снова"):
        current = once_offering(fake_telegram, single, label)  # the last press's edit sent
        said.append(answered(fake_telegram, fake_telegram.press(current, label))["text"])
    assert said[0].startswith("BACKEND-4A: без звука в этом чате до ")
    assert said[2] == "BACKEND-4A закрыта в GlitchTip"
    summary_or_not = [
        p for p in fake_telegram.posted_to(CHAT_ID) if "Звук снова включён" in p.visible()
    ]
    assert summary_or_not == []  # it held nothing: nothing to sum up

    asked_id = fake_telegram.reply(digest, "смотрю")
    assert wait_until(lambda: fake_telegram.replies_to(CHAT_ID, asked_id), timeout=WITHIN)
    fake_telegram.reply(single, "откатываю")
    assert wait_until(lambda: fake_glitchtip.comments(4), timeout=WITHIN)
    assert fake_glitchtip.comments(4) == ['"Ada Lovelace" (@ada, id 4242) в Telegram:\nоткатываю']

    post(relay.webhook_url, uptime_alert(down=True, name="Витрина"))
    outage = nth_message(fake_telegram, 4)
    assert "НЕ РАБОТАЕТ · Витрина" in outage.visible()
    post(relay.webhook_url, uptime_alert(down=False, name="Витрина"))
    assert wait_until(
        lambda: (
            "Витрина: снова работает" in fake_telegram.message(CHAT_ID, outage.message_id).visible()
        ),
        timeout=WITHIN,
    )

    written = [words_of(posted) for posted in fake_telegram.posted_to(CHAT_ID)]
    written += [b["text"] for posted in fake_telegram.posted_to(CHAT_ID) for b in posted.buttons()]
    written += said
    assert [words for text in written if (words := latin_words(text))] == []
    assert RUSSIAN.count(RUSSIAN.alerts, 21) == "21 алерт"
