"""Sentry's issues acted on from the chat (sentry/api.py, core/trackers.py): a press changes
the issue through Sentry's API, at SENTRY_URL or the region its answer names under it, a reply
is a comment in Sentry's form, Sentry's issue webhooks bring the cards in step, and an issue of
GlitchTip's with the same number stays GlitchTip's. Sentry's API mocked by `responses` as its
documentation says it answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from relay_app import Relay
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.cards.notices import operator_fix
from relay_app.chat.links import LINKS
from relay_app.core.alerts import ALERT_KEY, alert_as_json
from relay_app.core.errors import ScopeMissing
from relay_app.sentry.api import SentryApi
from relay_app.sentry.settings import SentryConfig
from relay_app.sentry.signature import signature_of
from relay_app.snoozes.store import SnoozeStore
from tests.conftest import FakeTime, run_background, sentry_on
from tests.in_process import GLITCHTIP, Chat, ScriptedTelegram, sentry_page_of, watcher_of
from tests.test_presses import press
from tests.test_replies import reply

CHAT = "-1001234567890"
SENTRY = "https://sentry.example.org"
SENTRY_TOKEN = "9f" * 32
CLIENT_SECRET = "5f0c" * 16
ORGANIZATIONS = f"{SENTRY}/api/0/organizations/"
# One card of each source's issue numbered 4: the two must never be taken for each other.
SENTRYS = SentMessage(
    CHAT,
    41,
    "<b>🔴 Very Important Alert Rule!</b>",
    1_800_000_000.0,
    buttons=(IssueButton("s-key", "sentry:4", SENTRY, "FRONT-END-4"),),
)
GLITCHTIPS = SentMessage(
    CHAT,
    42,
    "<b>🔴 GlitchTip Alert</b>",
    1_800_000_000.0,
    buttons=(IssueButton("g-key", "4", GLITCHTIP, "BACKEND-4A"),),
)


@pytest.fixture
def sentry() -> Iterator[responses.RequestsMock]:
    """GlitchTip's and Sentry's APIs over HTTP: a test registers the answers it needs."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = 1_800_000_240.0
    config = SentryConfig(CLIENT_SECRET, SENTRY_TOKEN, SENTRY)
    return Chat.of(built, fake_time, SENTRYS, GLITCHTIPS, theirs=sentry_on(config))


def organizations(region: str | None) -> list[dict[str, Any]]:
    """`GET /api/0/organizations/` as Sentry answers it (its `links` since the regions)."""
    links = {"organizationUrl": "https://acme.sentry.example.org"}
    if region is not None:
        links["regionUrl"] = region
    return [{"id": "1", "slug": "acme", "name": "Acme", "links": links}]


def test_a_press_on_a_sentry_issue_changes_it_in_sentry_with_sentrys_token(
    chat: Chat, sentry: responses.RequestsMock
) -> None:
    sentry.get(ORGANIZATIONS, json=organizations(None))
    sentry.put(f"{SENTRY}/api/0/issues/4/", json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "s-key")))
    put = [call for call in sentry.calls if call.request.method == "PUT"]
    assert [call.request.url for call in put] == [f"{SENTRY}/api/0/issues/4/"]
    assert put[0].request.headers["Authorization"] == f"Bearer {SENTRY_TOKEN}"
    assert put[0].request.body == b'{"status": "resolved"}'
    assert chat.answered() == [("Resolved FRONT-END-4 in Sentry", False)]
    chat.settle()
    [(_, message_id, html_text, _)] = chat.telegram.edits
    assert message_id == 41
    assert "✅ Resolved by @ada at 08:04 UTC" in html_text


def test_glitchtips_issue_of_the_same_number_stays_glitchtips(
    chat: Chat, sentry: responses.RequestsMock
) -> None:
    sentry.put(f"{GLITCHTIP}/api/0/issues/4/", json={"id": "4", "status": "ignored"})
    chat.update(press(callback_data("ignore", "g-key"), message_id=42))
    assert [call.request.url for call in sentry.calls] == [f"{GLITCHTIP}/api/0/issues/4/"]
    assert chat.answered() == [("Ignored BACKEND-4A in GlitchTip", False)]


@pytest.mark.parametrize(
    ("region", "asked"),
    [
        ("https://us.sentry.example.org", "https://us.sentry.example.org"),
        # Not under SENTRY_URL's host: the token does not go there, whatever the answer says.
        ("https://sentry.attacker.example", SENTRY),
        ("http://us.sentry.example.org", SENTRY),  # another scheme
        # SENTRY_URL's host at another port received the token before (13 requests, one PUT).
        ("https://sentry.example.org:8443", SENTRY),
        ("https://us.sentry.example.org:8443", SENTRY),
        # Forms that read as one host and sent the token to '/' at another before.
        ("https://us.sentry.example.org#@sentry.attacker.example", SENTRY),
        ("https://sentry.attacker.example#@us.sentry.example.org", SENTRY),
        ("https://us.sentry.example.org@sentry.attacker.example", SENTRY),
        ("https://user:pw@us.sentry.example.org", SENTRY),
        ("https://us.sentry.example.org/api/", SENTRY),
        ("https://us.sentry.example.org?x=1", SENTRY),
        ("https://sentry.example.org:443/", SENTRY),  # SENTRY_URL's own origin
        ("https://de.example.org", "https://de.example.org"),  # under its parent domain
        ("https://US.Sentry.Example.org/", "https://us.sentry.example.org"),
    ],
)
def test_the_tokens_region_is_asked_once_and_followed_only_under_sentry_url(
    sentry: responses.RequestsMock, region: str, asked: str
) -> None:
    sentry.get(ORGANIZATIONS, json=organizations(region))
    sentry.put(f"{asked}/api/0/issues/4/", json={"id": "4", "status": "resolved"})
    api = SentryApi(SENTRY_TOKEN, SENTRY, timeout=2.0)
    api.set_status("4", "resolved")
    api.set_status("4", "resolved")
    urls = [call.request.url for call in sentry.calls]
    assert urls == [ORGANIZATIONS, f"{asked}/api/0/issues/4/", f"{asked}/api/0/issues/4/"]


def test_a_region_that_cannot_be_asked_leaves_the_calls_at_sentry_url_for_a_while(
    sentry: responses.RequestsMock,
) -> None:
    sentry.get(ORGANIZATIONS, status=503, json={"detail": "down"})
    sentry.put(f"{SENTRY}/api/0/issues/4/", json={"id": "4", "status": "resolved"})
    clock = FakeTime()
    api = SentryApi(SENTRY_TOKEN, SENTRY, timeout=2.0, monotonic=lambda: clock.now)
    api.set_status("4", "resolved")
    api.set_status("4", "resolved")  # not asked again within the minute
    clock.now += 61
    api.set_status("4", "resolved")
    asked = [call.request.url for call in sentry.calls if call.request.method == "GET"]
    assert asked == [ORGANIZATIONS, ORGANIZATIONS]


def test_a_reply_is_a_comment_in_sentrys_form(
    built: Callable[..., Relay], fake_time: FakeTime, sentry: responses.RequestsMock
) -> None:
    sentry.get(ORGANIZATIONS, json=organizations(None))
    sentry.post(f"{SENTRY}/api/0/issues/4/comments/", status=201, json={"id": "1"})
    telegram = ScriptedTelegram(reactions=False)
    config = SentryConfig(CLIENT_SECRET, SENTRY_TOKEN, SENTRY)
    chat = Chat.of(built, fake_time, SENTRYS, telegram=telegram, theirs=sentry_on(config))
    chat.update(reply("Rolling back", message_id=902, topic=77))
    chat.settle()
    [comment] = [call for call in sentry.calls if call.request.method == "POST"]
    body = json.loads(comment.request.body or b"{}")
    assert set(body) == {"text"}  # Sentry's NoteSerializer; GlitchTip's is {"data": {...}}
    assert body["text"].endswith("Rolling back")
    assert telegram.replies == [(CHAT, 77, 902, "💬 Posted as a comment on FRONT-END-4 in Sentry.")]


def test_a_refusal_of_sentrys_names_sentrys_variable_for_the_operator(
    chat: Chat, sentry: responses.RequestsMock
) -> None:
    sentry.get(ORGANIZATIONS, json=organizations(None))
    sentry.put(f"{SENTRY}/api/0/issues/4/", status=403, json={"detail": "no permission"})
    chat.update(press(callback_data("resolve", "s-key")))
    [(text, alert)] = chat.answered()
    assert alert
    assert "Sentry" in text
    error = ScopeMissing("x")
    error.setup = SentryApi.SETUP
    fix = operator_fix(error)
    assert fix is not None
    assert "SENTRY_API_TOKEN" in fix


def test_sentrys_issue_webhook_brings_the_card_in_step(
    chat: Chat, sentry: responses.RequestsMock
) -> None:
    page = sentry_page_of(chat.relay)
    assert page is not None
    body = json.dumps(
        {"action": "resolved", "data": {"issue": {"id": "4", "shortId": "FRONT-END-4"}}}
    ).encode()
    headers = {
        "Sentry-Hook-Resource": "issue",
        "Sentry-Hook-Signature": signature_of(body, CLIENT_SECRET),
    }
    answer = page.answer(body, headers.get, 0.0)
    assert not isinstance(answer, list)
    assert answer.body == {"status": "in_step", "changed": 1}
    chat.settle()
    [(_, message_id, html_text, keyboard)] = chat.telegram.edits
    assert message_id == 41
    assert "✅ Resolved in Sentry at 08:04 UTC" in html_text
    assert keyboard["inline_keyboard"][0][0]["callback_data"] == "o:s-key"  # Reopen
    assert len(sentry.calls) == 0  # nothing asked of either API


def test_check_proves_the_token_its_region_and_that_the_relay_takes_signed_requests(
    sentry: responses.RequestsMock,
) -> None:
    from dataclasses import replace

    from relay_app.operating.binds import DEFAULT_BIND, local_url
    from relay_app.operating.config import Settings
    from relay_app.sentry.check import sentry_verdicts
    from relay_app.sentry.signature import signed

    sentry.get(ORGANIZATIONS, json=organizations("https://us.sentry.example.org"))
    relay_url = local_url(DEFAULT_BIND, "/sentry/webhook")

    def relay_here(request: Any) -> tuple[int, dict[str, str], str]:
        body = request.body if isinstance(request.body, bytes) else request.body.encode()
        ok = signed(body, request.headers.get("Sentry-Hook-Signature"), CLIENT_SECRET)
        return (200, {}, '{"status": "noted"}') if ok else (401, {}, "{}")

    sentry.add_callback(responses.POST, relay_url, callback=relay_here)
    settings = Settings(
        telegram_bot_token="1:x",
        telegram_chat_id=-1,
        webhook_secret="s" * 32,
        theirs=sentry_on(SentryConfig(CLIENT_SECRET, SENTRY_TOKEN, SENTRY)),
    )
    token, webhook = sentry_verdicts(settings)
    assert token.passed
    assert "organization acme" in token.found
    assert "https://us.sentry.example.org" in token.found
    assert webhook.passed
    assert relay_url in webhook.found
    # The organizations asked once: their answer names the region too.
    assert [call.request.url for call in sentry.calls].count(ORGANIZATIONS) == 1
    other = replace(settings, theirs=sentry_on(SentryConfig("another" * 8, None, SENTRY)))
    token, webhook = sentry_verdicts(other)
    assert token.passed  # none set: said, not failed
    assert "SENTRY_API_TOKEN unset" in token.found
    assert not webhook.passed
    assert webhook.hint is not None
    assert "another secret" in webhook.hint


@pytest.mark.parametrize(
    ("verb", "details", "said"),
    [
        ("snooze_hour", {"ignoreDuration": 60}, "Ignored FRONT-END-4 in Sentry until 09:04 UTC"),
        ("snooze_day", {"ignoreDuration": 1440}, "Ignored FRONT-END-4 in Sentry until 08:04 UTC"),
        (
            "snooze_events",
            {"ignoreCount": 100},
            "Ignored FRONT-END-4 in Sentry until 100 more events",
        ),
    ],
)
def test_ignores_choices_on_a_sentry_issue_are_kept_by_sentry_itself(
    chat: Chat, sentry: responses.RequestsMock, verb: str, details: dict[str, int], said: str
) -> None:
    sentry.get(ORGANIZATIONS, json=organizations(None))
    sentry.put(f"{SENTRY}/api/0/issues/4/", json={"id": "4", "status": "ignored"})
    chat.update(press(callback_data("snooze", "s-key")))  # Ignore… opens the choices
    chat.update(press(callback_data(verb, "s-key")))  # type: ignore[arg-type]
    [put] = [call for call in sentry.calls if call.request.method == "PUT"]
    assert json.loads(put.request.body or b"{}") == {"status": "ignored", "statusDetails": details}
    assert chat.answered()[-1] == (said, False)
    assert chat.relay.spool is not None
    # Nothing kept for the watcher: Sentry brings it back, and its webhook says so.
    assert chat.relay.spool.of(SnoozeStore).open(now=chat.clock.now) == []


def test_the_watcher_asks_sentry_of_its_issues_and_posts_an_escalating_one_again(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    from relay_app.sentry.hooks import Alerting, read_hook
    from tests.fake_sentry import ORG, running_fake_sentry
    from tests.fake_sentry import TOKEN as FAKE_TOKEN
    from tests.test_watcher import NOW, quiet_day

    telegram = ScriptedTelegram()
    fake_time.now = NOW
    with running_fake_sentry() as fake:
        fake.add_issue(1117540176)
        fake.hourly["1117540176"] = quiet_day(last_hour=3000)
        config = SentryConfig(CLIENT_SECRET, FAKE_TOKEN, fake.url)
        relay = built(telegram, theirs=sentry_on(config), details_budget=None)
        body = json.loads(
            (Path(__file__).parent / "sentry_samples" / "issue_alert.json").read_text()
        )
        event = body["data"]["event"]
        event["web_url"] = f"{fake.url}/organizations/{ORG}/issues/1117540176/"
        hook = read_hook("event_alert", body, sentry_url=fake.url)
        assert isinstance(hook, Alerting)
        watcher_of(relay).alerted([{ALERT_KEY: alert_as_json(hook.alert)}], CHAT, None)
        done = watcher_of(relay).round()
        assert (done.asked, done.escalating) == (2, 1)
        run_background(relay.dispatcher, fake_time)
        asked = [call.path for call in fake.calls if call.method == "GET"]
    assert all("group=1117540176" in path and "project=-1" in path for path in asked[1:])
    [sent] = telegram.delivered
    first, _, heading = sent.text.split("\n")[:3]
    assert first.startswith("📈 Escalating: 3000 events in the last hour")
    assert heading == "🔴 Sentry Alert"  # posted again as Sentry's
    # With its buttons, acting on Sentry's issue.
    assert [issue.id for issue in sent.subjects.issues] == ["sentry:1117540176"]


def test_a_pasted_sentry_link_gets_the_issues_card_read_from_sentry(
    chat: Chat, sentry: responses.RequestsMock
) -> None:
    from relay_app.cards.sent import SentStore
    from tests.test_links import message

    sentry.get(ORGANIZATIONS, json=organizations(None))
    issue = {
        "id": "4",
        "shortId": "FRONT-END-4",
        "title": "ReferenceError: heck is not defined",
        "culprit": "?(<anonymous>)",
        "status": "unresolved",
        "level": "error",
        "count": "7",
        "project": {"slug": "front-end", "name": "front-end"},
    }
    sentry.get(f"{SENTRY}/api/0/organizations/acme/issues/4/", json=issue)
    sentry.get(f"{SENTRY}/api/0/organizations/acme/issues/4/events/latest/", status=404, json={})
    # The chat follows it: the relay's card of Sentry's issue 4 is there (SENTRYS).
    chat.update(message(f"again? {SENTRY}/organizations/acme/issues/4/", 1))
    links = chat.relay.services.find(LINKS)
    assert links is not None
    assert links.look_ups.wait_idle(timeout=10)
    chat.settle()
    [card] = [sent for sent in chat.telegram.delivered if sent.reply_to is not None]
    lines = card.text.split("\n")
    assert lines[0] == "🔗 FRONT-END-4 · unresolved · seen 7 times"
    assert "ReferenceError: heck is not defined" in lines
    assert chat.relay.spool is not None
    kept = chat.relay.spool.of(SentStore).message(CHAT, 1)  # the first the relay sent here
    assert kept is not None
    assert [(b.issue_id, b.origin) for b in kept.buttons] == [("sentry:4", SENTRY)]
    asked = [call.request.url for call in sentry.calls]
    assert f"{GLITCHTIP}/api/0/issues/4/" not in asked  # GlitchTip's issue 4 is another


def test_with_sentry_alone_ignores_choices_work_without_the_watchers_snoozes(
    built: Callable[..., Relay], fake_time: FakeTime, sentry: responses.RequestsMock
) -> None:
    fake_time.now = 1_800_000_240.0
    config = SentryConfig(CLIENT_SECRET, SENTRY_TOKEN, SENTRY)
    chat = Chat.of(
        built,
        fake_time,
        SENTRYS,
        theirs=sentry_on(config),
        glitchtip=None,
    )
    sentry.get(ORGANIZATIONS, json=organizations(None))
    sentry.put(f"{SENTRY}/api/0/issues/4/", json={"id": "4", "status": "ignored"})
    chat.update(press(callback_data("snooze", "s-key")))
    chat.update(press(callback_data("snooze_hour", "s-key")))
    assert chat.answered()[-1] == ("Ignored FRONT-END-4 in Sentry until 09:04 UTC", False)
    [put] = [call for call in sentry.calls if call.request.method == "PUT"]
    assert json.loads(put.request.body or b"{}")["statusDetails"] == {"ignoreDuration": 60}


def test_an_assignment_in_sentry_shows_on_the_issues_cards_and_goes_when_unassigned(
    chat: Chat,
) -> None:
    page = sentry_page_of(chat.relay)
    assert page is not None

    def assigned(to: dict[str, str] | None, *, note: str = "") -> int | str:
        issue = {"id": "4", "shortId": "FRONT-END-4", "assignedTo": to, "note": note}
        body = json.dumps({"action": "assigned", "data": {"issue": issue}}).encode()
        headers = {
            "Sentry-Hook-Resource": "issue",
            "Sentry-Hook-Signature": signature_of(body, CLIENT_SECRET),
        }
        answer = page.answer(body, headers.get, 0.0)
        assert not isinstance(answer, list)
        changed: int | str = answer.body.get("changed", answer.body["status"])
        return changed

    assert assigned({"type": "user", "id": "1", "name": "Ada Lovelace"}) == 1
    # The same delivery again (Sentry's retry, a new Request-ID): taken in once.
    assert assigned({"type": "user", "id": "1", "name": "Ada Lovelace"}) == "repeated"
    assert assigned({"type": "user", "id": "1", "name": "Ada Lovelace"}, note="again") == 0
    chat.settle()
    [(_, message_id, html_text, keyboard)] = chat.telegram.edits
    assert message_id == 41
    assert html_text.endswith("👤 Assigned to Ada Lovelace in Sentry at 08:04 UTC")
    assert keyboard["inline_keyboard"][0][0]["text"] == "👀 On it"  # not On it: Sentry's person
    assert assigned(None) == 1
    chat.settle()
    assert "Assigned" not in chat.telegram.edits[-1][2]


def test_an_issues_old_state_delivered_again_leaves_its_card_as_it_now_stands(chat: Chat) -> None:
    """Before: an old `issue.unresolved` delivered again after `issue.resolved` reopened the
    card. Now the same delivery again is taken once (its body), and a state stamped before the
    card's last change is older than it."""
    page = sentry_page_of(chat.relay)
    assert page is not None
    now = chat.clock.now

    def changed(action: str, stamp: float, request_id: str, count: int = 1) -> object:
        issue = {"id": "4", "shortId": "FRONT-END-4", "status": action, "count": str(count)}
        body = json.dumps({"action": action, "data": {"issue": issue}}).encode()
        headers = {
            "Sentry-Hook-Resource": "issue",
            "Sentry-Hook-Signature": signature_of(body, CLIENT_SECRET),
            "Sentry-Hook-Timestamp": str(int(stamp)),
            "Request-ID": request_id,
        }
        answer = page.answer(body, headers.get, 0.0)
        assert not isinstance(answer, list)
        return answer.body.get("changed", answer.body["status"])

    def status() -> str | None:
        found = chat.store.pressed("s-key")
        assert found is not None
        return found[1].status

    assert changed("unresolved", now - 120, "r1") == 0  # as it stands
    assert changed("resolved", now - 60, "r2") == 1
    assert status() == "resolved"
    assert changed("unresolved", now - 120, "r3") == "repeated"  # Sentry's retry: its body
    assert status() == "resolved"
    assert changed("resolved", now - 60, "r4") == "repeated"
    # Another body of an older state (Sentry wrote it again): older than the card's.
    older = {"id": "4", "shortId": "FRONT-END-4", "status": "unresolved", "count": "7"}
    body = json.dumps({"action": "unresolved", "data": {"issue": older}}).encode()
    headers = {
        "Sentry-Hook-Resource": "issue",
        "Sentry-Hook-Signature": signature_of(body, CLIENT_SECRET),
        "Sentry-Hook-Timestamp": str(int(now - 90)),
    }
    answer = page.answer(body, headers.get, 0.0)
    assert not isinstance(answer, list)
    assert answer.body == {"status": "in_step", "changed": 0}
    assert status() == "resolved"
    assert changed("unresolved", now - 10, "r5", count=2) == 1  # reopened since: newer
    assert status() == "unresolved"
    # Stamped before the week deliveries are kept, or ahead of the relay's clock: a replay.
    assert changed("resolved", now - 8 * 86400, "r6") == "stale"
    assert changed("resolved", now + 3600, "r7") == "stale"
    assert status() == "unresolved"


def test_a_change_sentry_stamps_in_the_second_of_a_press_is_not_older_than_it(
    chat: Chat,
) -> None:
    """Sentry stamps whole seconds. Before: Resolve pressed at S + 0.7 hid a reopening in
    Sentry's UI stamped S (S < S + 0.7), and the card said resolved while Sentry said not."""
    page = sentry_page_of(chat.relay)
    assert page is not None
    chat.clock.now = float(int(chat.clock.now)) + 0.7
    second = int(chat.clock.now)
    assert chat.store.claim("s-key", None, "resolved", by="@ada", at=chat.clock.now) is not None

    def changed(action: str, stamp: int, request_id: str, count: int) -> object:
        issue = {"id": "4", "shortId": "FRONT-END-4", "status": action, "count": str(count)}
        body = json.dumps({"action": action, "data": {"issue": issue}}).encode()
        headers = {
            "Sentry-Hook-Resource": "issue",
            "Sentry-Hook-Signature": signature_of(body, CLIENT_SECRET),
            "Sentry-Hook-Timestamp": str(stamp),
            "Request-ID": request_id,
        }
        answer = page.answer(body, headers.get, 0.0)
        assert not isinstance(answer, list)
        return answer.body.get("changed", answer.body["status"])

    assert changed("unresolved", second - 1, "t1", 3) == 0  # the second before: older
    chat.clock.now += 0.2  # the webhook comes a moment later
    assert changed("unresolved", second, "t2", 4) == 1  # its own second: Sentry's word
    found = chat.store.pressed("s-key")
    assert found is not None
    assert found[1].status == "unresolved"
