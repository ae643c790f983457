"""Alerts first, attacked from inside a served chat, end to end under the real `gunicorn
wsgi:app` (two workers), the fake Telegram and the fake GlitchTip: nothing typed in a chat
delays, displaces or widens an alert, and a chat sees only its own issues.

- A thousand commands in seconds from a member (not one allowed to act), at a group's pace:
  the next alert is the chat's next message, and the flood costs a counter and a line.
- Answers never count against RELAY_SPOOL_MAX_PENDING: after 250 commands with the cap at 5,
  five alerts still wait in the spool, none in memory, and no command raises.
- A link to another organization's issue, or one the routes send elsewhere, gets one short
  word and no card; a path that climbs out of its organization names nothing.
- Twenty Mute presses at once, by webhook as Telegram delivers them, make one silence, and
  Unmute ends it.
- A NaN and a count of 10^30 in GlitchTip's answers spoil their issues alone: the escalating
  issue is posted again, and a snoozed one past its events comes back.
- A press is answered at once while GlitchTip hangs on a link's look-ups."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    alert_for,
    answered,
    delivered_titles,
    labels,
    once_offering,
    post,
    register_webhook,
    run_relay_app,
    titled,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted
from tests.payloads import issue, issue_alert
from tests.prometheus import Samples, parse, value

# Time runs four times faster, the relay's pace and the fake Telegram's limits alike: a group's
# turn every 0.76 s.
SCALE = 0.25
GROUP_TURN = 61.0 / 20 * SCALE
MALLORY = 666  # a member of the served group, not allowed to act
FRONTEND_CHAT = "-1005555555555"
NOT_FOLLOWED = "🔒 Not an issue this chat follows."


def acting(glitchtip: FakeGlitchTip, **more: str) -> dict[str, str]:
    return {
        "GLITCHTIP_API_TOKEN": TOKEN,
        "GLITCHTIP_URL": glitchtip.url,
        "RELAY_TIME_SCALE": str(SCALE),
        "WEB_CONCURRENCY": "2",
        **more,
    }


def by_webhook(
    start_relay: StartRelay, fake: FakeTelegram, variables: dict[str, str]
) -> RelayProcess:
    """A relay Telegram posts the updates to, as Telegram delivers them: in parallel."""
    variables = {**variables, "TELEGRAM_UPDATES": "webhook"}
    relay = start_relay(**variables)
    register_webhook(fake, relay.url, variables)
    return relay


def in_parallel(count: int, each: Callable[[int], object]) -> None:
    """`each` of 0 to `count`, eight at a time."""
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(each, range(count)))


def metrics(url: str) -> Samples:
    return parse(requests.get(f"{url}/metrics", timeout=5).text)


def test_a_thousand_commands_leave_the_next_alert_the_chats_next_message(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    fake_telegram.limits, fake_telegram.time_scale = True, SCALE
    relay = by_webhook(
        start_relay, fake_telegram, acting(fake_glitchtip, TELEGRAM_ACTION_USER_IDS="4242")
    )
    started = time.monotonic()
    in_parallel(
        1000,
        lambda _: fake_telegram.say(CHAT_ID, "/issues", user_id=MALLORY, username="mallory"),
    )
    flooded_for = time.monotonic() - started
    sent_before = len(fake_telegram.messages_to(CHAT_ID))
    reply, _ = post(relay.webhook_url, titled("After the flood"))
    arrived = time.monotonic()
    assert reply.status_code in (200, 202), reply.text
    assert wait_until(lambda: "After the flood" in delivered_titles(fake_telegram), 5 * GROUP_TURN)
    took = (
        next(m.at for m in fake_telegram.messages_to(CHAT_ID) if "After the flood" in str(m.body))
        - arrived
    )
    assert took < 3 * GROUP_TURN + 2.0  # its chat's next turn, or the one after
    chat = [str(m.body.get("text")) for m in fake_telegram.messages_to(CHAT_ID)]
    alert_at = next(n for n, text in enumerate(chat) if "After the flood" in text)
    assert alert_at <= sent_before + 1  # behind at most the one answer under way
    # Three answers in a row per person, each turn free again 15 s after it, and once told to
    # wait: a handful, not 996.
    answers = [text for text in chat if "After the flood" not in text]
    assert 1 <= len(answers) <= 4 * (int(flooded_for // 15) + 1), answers
    refused = value(metrics(relay.url), "relay_answers_refused_total", reason="person")
    assert refused >= 1000 - 3 * (int(flooded_for // 15) + 1)  # the turns taken, at most
    assert fake_telegram.too_many_requests() == []
    logs = relay.logs()
    assert "Traceback" not in logs
    lines = [line for line in logs.splitlines() if "not answered since" in line]
    assert 1 <= len(lines) <= 2, lines  # a line a minute for the fleet, not one a command


def test_answers_never_push_an_alert_out_of_the_spool(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = by_webhook(
        start_relay, fake_telegram, acting(fake_glitchtip, RELAY_SPOOL_MAX_PENDING="5")
    )
    fake_telegram.set("error", methods={"sendMessage"})  # Telegram fails: everything waits
    in_parallel(250, lambda n: fake_telegram.say(CHAT_ID, "/status", user_id=10_000 + n))
    # The answers' failed sends hold every write until Telegram answers again, so no alert is
    # tried before then: one tried and failed would wait for its retry and, as
    # docs/delivery.md says, hold nothing back meanwhile.
    assert wait_until(lambda: value(metrics(relay.url), "relay_telegram_up") == 0, timeout=10)
    labels_ = []
    for number in range(5):
        reply, _ = post(relay.webhook_url, titled(f"Kept {number}"))
        assert reply.status_code in (202, 502), reply.text
        labels_.append(reply.json()["alert"])
    assert all(label.startswith("#") for label in labels_), labels_  # in the spool, not memory
    fake_telegram.set("ok")

    def kinds() -> list[str]:
        return ["alert" if "Kept" in str(body) else "answer" for body in fake_telegram.messages]

    # Three answers waited for the chat (the rest were refused), behind every alert.
    assert wait_until(lambda: kinds().count("answer") == 3, timeout=20), kinds()
    assert len(delivered_titles(fake_telegram)) == 5
    assert kinds()[-3:] == ["answer"] * 3
    logs = relay.logs()
    assert "QueueFull" not in logs
    assert "Traceback" not in logs
    assert "kept in memory only" not in logs
    lines = [line for line in logs.splitlines() if "not answered since" in line]
    assert 1 <= len(lines) <= 2, lines  # a line a minute for the fleet, not one a command


def test_a_chat_sees_only_the_issues_it_follows_whatever_its_links_name(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(f'[[route]]\nproject = "frontend"\nchat = "{FRONTEND_CHAT}"\n')
    fake_telegram.add_chat(FRONTEND_CHAT, forum=False)
    relay = start_relay(
        **acting(fake_glitchtip, RELAY_ROUTES=str(routes), RELAY_WATCH_INTERVAL="2")
    )
    # GlitchTip sends the relay acme's alerts: one of frontend's, to its chat.
    frontend = [{"title": "Project", "value": "frontend", "short": True}]
    first = fake_glitchtip.add_issue(11, "FRONTEND-11", org="acme", project="frontend")
    reply, _ = post(relay.webhook_url, issue_alert(issue(11, link=first, fields=frontend)))
    assert reply.status_code == 200, reply.text

    # The relay's organizations are those GlitchTip's answers to the watcher show: a round
    # after the alert asks acme (a round before it, with nothing to watch, asks nobody).
    def asked_acme() -> bool:
        return any("/organizations/acme/issues/" in r.path for r in fake_glitchtip.requests)

    assert wait_until(asked_acme, timeout=10)
    other = fake_glitchtip.add_issue(12, "FRONTEND-12", org="acme", project="frontend")
    backend = fake_glitchtip.add_issue(13, "BACKEND-13", org="acme", project="backend")
    secret = fake_glitchtip.add_issue(
        1002, "PAYROLL-7", org="secret", project="frontend", title="Payroll export: ACME CFO"
    )
    climbing = f"{fake_glitchtip.url}/acme/issues/../../secret/issues/1002"
    renamed = f"{fake_glitchtip.url}/acme/issues/1002"

    def answer_to(text: str, person: int) -> list[Posted]:
        """What the frontend chat answers a person's message (one at a time: at most three
        answers wait for a chat)."""
        said = fake_telegram.say(FRONTEND_CHAT, text, user_id=person)
        assert wait_until(lambda: fake_telegram.replies_to(FRONTEND_CHAT, said), timeout=15)
        return fake_telegram.replies_to(FRONTEND_CHAT, said)

    # Another organization's: no title, no buttons.
    assert [p.visible() for p in answer_to(f"what is {secret}", 1)] == [NOT_FOLLOWED]
    # The same id under acme's path: acme does not hold it.
    assert [p.visible() for p in answer_to(renamed, 2)] == [NOT_FOLLOWED]
    # Backend's: the routes send it to the default chat.
    assert [p.visible() for p in answer_to(f"and {backend}", 3)] == [NOT_FOLLOWED]
    [card] = answer_to(f"and {other}", 4)
    assert card.visible().startswith("🔗 FRONTEND-12 · unresolved")
    assert "✅ Resolve" in labels(card)
    # A path that climbs out of its organization names nothing: no answer, no look-up.
    looked_up = len(fake_glitchtip.reads())
    fake_telegram.say(FRONTEND_CHAT, f"and {climbing}", user_id=5)

    def unreadable() -> float:
        return value(metrics(relay.url), "relay_link_cards_total", outcome="unreadable")

    assert wait_until(lambda: unreadable() == 1, timeout=10)
    assert len(fake_glitchtip.reads()) == looked_up
    assert "Payroll" not in " ".join(p.visible() for p in fake_telegram.posted_to(FRONTEND_CHAT))
    assert fake_glitchtip.changes() == []
    # In the chat where backend's alerts go, its link gets its card.
    here = fake_telegram.say(CHAT_ID, f"{backend}", user_id=6)
    assert wait_until(lambda: fake_telegram.replies_to(CHAT_ID, here), timeout=15)
    assert fake_telegram.replies_to(CHAT_ID, here)[0].visible().startswith("🔗 BACKEND-13")


def test_twenty_mute_presses_at_once_by_webhook_make_one_silence(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = by_webhook(start_relay, fake_telegram, acting(fake_glitchtip))
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert reply.status_code == 200
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 1, timeout=10)
    [card] = fake_telegram.posted_to(CHAT_ID)
    card = Posted(**vars(card))  # as it stood when twenty people pressed
    in_parallel(20, lambda n: fake_telegram.press(card, "🔇 Mute 1 h", user_id=100 + n))
    environ = relay_env(fake_telegram, RELAY_SPOOL_PATH=spool_path)
    listed = run_relay_app(environ, "silence", "list")
    assert listed.returncode == 0, listed.stderr
    active = re.findall(rf"^\d+ +{CHAT_ID} .* active ", listed.stdout, re.MULTILINE)
    assert len(active) == 1, listed.stdout
    muted = once_offering(fake_telegram, card, "🔊 Unmute")
    assert answered(fake_telegram, fake_telegram.press(muted, "🔊 Unmute"))["text"] == (
        "Unmuted BACKEND-4A in this chat"
    )
    after = run_relay_app(environ, "silence", "list")
    assert not re.findall(rf"^\d+ +{CHAT_ID} .* active ", after.stdout, re.MULTILINE), after.stdout
    again, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert again.json()["status"] != "silenced"
    assert value(metrics(relay.url), "relay_silences_active") == 0


def test_nan_and_ten_to_the_thirty_from_glitchtip_spoil_their_issues_alone(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**acting(fake_glitchtip, RELAY_WATCH_INTERVAL="1", WEB_CONCURRENCY="1"))
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 1, 2, 3, 4))
    assert reply.status_code == 200
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 1, timeout=10)
    [card] = fake_telegram.posted_to(CHAT_ID)
    # BACKEND-4A ignored until 100 more events, from the card.
    answered(fake_telegram, fake_telegram.press(card, "🔕 Ignore… BACKEND-4A"))
    choosing = once_offering(fake_telegram, card, "🔕 Until 100 more events BACKEND-4A")
    answered(fake_telegram, fake_telegram.press(choosing, "🔕 Until 100 more events BACKEND-4A"))
    assert wait_until(lambda: fake_glitchtip.status(4) == "ignored", timeout=10)
    hour = int(time.time() // 3600) * 3600
    with_answers = {
        "1": [[hour, float("nan")]],  # NaN in its hourly counts
        "3": [[hour - 3600 * back, 1] for back in range(23, 1, -1)] + [[hour, 3000]],
    }
    fake_glitchtip.hourly.update(with_answers)  # type: ignore[arg-type]
    fake_glitchtip.issues["2"]["count"] = str(10**30)
    fake_glitchtip.issues["4"]["count"] = "203"  # 200 more since it was ignored
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) >= 3, timeout=15), relay.logs()
    texts = [p.visible() for p in fake_telegram.posted_to(CHAT_ID)]
    assert any(t.startswith("📈 Escalating: 3000 events") for t in texts), texts
    assert any(t.startswith("🔔 BACKEND-4A is back") for t in texts), texts
    assert wait_until(lambda: fake_glitchtip.status(4) == "unresolved", timeout=5)
    logs = relay.logs()
    for spoiled in ("1", "2"):
        said = re.findall(rf"GlitchTip's answer about issue {spoiled} of acme cannot be read", logs)
        assert len(said) == 1, logs  # said once, while it lasts
    assert "a round of the watcher failed" not in logs
    assert "Traceback" not in logs


def test_a_press_is_answered_at_once_while_glitchtip_hangs_on_links(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**acting(fake_glitchtip, WEB_CONCURRENCY="1"))  # updates polled
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 4))
    assert reply.status_code == 200
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 1, timeout=10)
    [card] = fake_telegram.posted_to(CHAT_ID)
    fake_glitchtip.delay = 8.0  # every GET hangs past the relay's deadline for it
    links = " ".join(fake_glitchtip.add_issue(n, f"BACKEND-{n}A") for n in (5, 6, 7))
    fake_telegram.say(CHAT_ID, f"all of these? {links}")
    pressed = time.monotonic()
    answer = answered(fake_telegram, fake_telegram.press(card, "👀 On it"))
    assert time.monotonic() - pressed < 2.0
    assert answer["text"].startswith("You are on BACKEND-4A")
