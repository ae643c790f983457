"""A press on an alert's button (presses.py) and GlitchTip's API behind it (glitchtip_api.py),
with GlitchTip's HTTP layer mocked by `responses` as the reference says it answers: the relay
as a whole (its buttons, its spool, its dispatcher) against the scripted Telegram, on the test's
clock. The press is answered at once; the card's edit is a job, sent in the chat's turn."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
import responses

from relay_app import Relay
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.cards.notices import operator_fix, tracker_notice
from relay_app.cards.presses.presses import PressActions, Presses
from relay_app.cards.team import Team
from relay_app.core.errors import (
    IssueGone,
    RetryableDeliveryError,
    ScopeMissing,
    SpoolError,
    TokenRefused,
    TrackerError,
    TrackerUnreachable,
)
from relay_app.core.logs import configure_logging
from relay_app.core.off_thread import OffThread
from relay_app.delivery.outbox import Outbox
from relay_app.glitchtip.api import GlitchTipApi
from relay_app.issue_api.client import MAX_ANSWER_BYTES
from relay_app.routes import parse_routes
from relay_app.silences.buttons import MUTE
from relay_app.words import ENGLISH
from tests.conftest import ROUTE_SOURCES, SOURCES, FakeTime
from tests.e2e.helpers import wait_until
from tests.in_process import GLITCHTIP, GT_TOKEN, Chat, LimitedTelegram, ScriptedTelegram
from tests.prometheus import parse, value

ISSUE_URL = f"{GLITCHTIP}/api/0/issues/4/"
CHAT = "-1001234567890"
# The link's origin as the webhook named it: where the token must not go, whatever it says.
ATTACKER = "http://attacker.example:8081"
SENT = SentMessage(
    CHAT,
    41,
    "<b>🔴 GlitchTip Alert</b>",
    1_800_000_000.0,
    buttons=(IssueButton("the-key", "4", ATTACKER, "BACKEND-4A"),),
)
_update_ids = itertools.count(1000)


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    """The relay with its buttons against a scripted Telegram, the card it sent kept, at
    08:04 UTC on the day it was sent."""
    fake_time.now = 1_800_000_240.0
    return Chat.of(built, fake_time, SENT)


def api() -> GlitchTipApi:
    return GlitchTipApi(GT_TOKEN, GLITCHTIP, timeout=2.0)


def samples(chat: Chat) -> Any:
    return parse(chat.relay.metrics.exposition().decode())


def press(
    data: str,
    *,
    chat: str = CHAT,
    message_id: int = 41,
    user_id: int = 7,
    press_id: str | None = None,
    update_id: int | None = None,
) -> dict[str, Any]:
    """A press as Telegram sends it: an update holding a callback query. Each has ids of its
    own unless given."""
    update = next(_update_ids) if update_id is None else update_id
    return {
        "update_id": update,
        "callback_query": {
            "id": press_id or f"press-{update}",
            "from": {"id": user_id, "is_bot": False, "first_name": "Ada", "username": "ada"},
            "message": {"message_id": message_id, "chat": {"id": int(chat)}},
            "data": data,
        },
    }


def test_a_press_changes_the_issue_is_answered_at_once_and_its_card_edited_in_turn(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "the-key")))
    [call] = glitchtip.calls
    assert call.request.url == ISSUE_URL  # GLITCHTIP_URL's, never the link's (ATTACKER)
    assert call.request.headers["Authorization"] == f"Bearer {GT_TOKEN}"
    assert call.request.body == b'{"status": "resolved"}'
    assert chat.answered() == [("Resolved BACKEND-4A in GlitchTip", False)]
    assert chat.telegram.edits == []  # queued, as every write to the chat
    chat.settle()
    [(edited_chat, message_id, html_text, keyboard)] = chat.telegram.edits
    assert (edited_chat, message_id) == (CHAT, 41)
    assert html_text == "<b>🔴 GlitchTip Alert</b>\n\n✅ Resolved by @ada at 08:04 UTC"
    assert keyboard == {
        "inline_keyboard": [
            [
                {"text": "↩️ Reopen", "callback_data": "o:the-key"},
                {"text": "🔇 Mute 1 h", "callback_data": "m:the-key"},
                {"text": "📈", "callback_data": "c:the-key"},
            ]
        ]
    }


def test_an_update_acts_once_however_often_it_arrives(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    first = press(callback_data("resolve", "the-key"))
    chat.update(first)
    # Telegram again (its webhook's answer was lost), and a replay under a new update id, to
    # another process of the relay.
    answers = ScriptedTelegram()
    assert chat.relay.spool is not None
    team = Team(
        store=chat.store,
        trackers=api(),
        allowed_users=frozenset(),
        words=ENGLISH,
        metrics=chat.relay.metrics,
        clock=lambda: chat.clock.now,
    )
    another_process = Presses(team, answers, Outbox(chat.relay.spool.queue), PressActions(SOURCES))
    another_process.handle_update(first)
    replayed = press(callback_data("resolve", "the-key"), press_id=first["callback_query"]["id"])
    another_process.handle_update(replayed)
    chat.settle()
    assert len(glitchtip.calls) == 1
    assert len(chat.telegram.edits) == 1
    assert len(chat.telegram.answered) + len(answers.answered) == 1  # the first answered it
    assert value(samples(chat), "relay_button_presses_total", outcome="repeated") == 2


def test_a_button_no_longer_shown_does_nothing(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "the-key")))
    # The keyboard shows only Reopen now; Resolve and Ignore from the old one are stale.
    chat.update(press(callback_data("ignore", "the-key")))
    chat.update(press(callback_data("resolve", "the-key")))
    assert len(glitchtip.calls) == 1
    assert chat.answered()[1:] == [
        (ENGLISH.press_out_of_date, True),
        (ENGLISH.press_out_of_date, True),
    ]
    found = chat.store.pressed("the-key")
    assert found is not None
    assert found[1].status == "resolved"
    assert value(samples(chat), "relay_button_presses_total", outcome="stale") == 2


@pytest.mark.parametrize(
    "forged",
    [
        press(callback_data("resolve", "another-key")),  # not a key the relay keeps
        press(callback_data("resolve", "the-key"), message_id=42),  # the key, under another message
        press(callback_data("resolve", "the-key"), chat="-100999"),  # ... or in another chat
        press("resolve:4"),  # an issue id from the client
    ],
)
def test_only_a_press_on_the_message_a_record_belongs_to_counts(
    chat: Chat, glitchtip: responses.RequestsMock, forged: dict[str, Any]
) -> None:
    chat.update(forged)
    chat.settle()
    assert len(glitchtip.calls) == 0
    assert chat.telegram.edits == []
    assert chat.answered() == [(ENGLISH.press_unknown, True)]


def test_someone_not_on_the_list_is_refused(
    built: Callable[..., Relay],
    fake_time: FakeTime,
    glitchtip: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    chat = Chat.of(built, fake_time, SENT, action_user_ids=frozenset({1, 2}))
    with caplog.at_level(logging.WARNING):
        chat.update(press(callback_data("resolve", "the-key"), user_id=7))
    assert len(glitchtip.calls) == 0
    assert chat.answered() == [(ENGLISH.press_not_allowed, True)]
    assert "not in TELEGRAM_ACTION_USER_IDS" in caplog.text


OPERATOR_HAS_IT = "GlitchTip refused the change; the relay's operator has the details."


@pytest.mark.parametrize(
    ("status", "body", "error", "notice", "fix"),
    [
        (
            403,
            {"detail": "CSRF check Failed"},
            TokenRefused,
            OPERATOR_HAS_IT,
            "GLITCHTIP_API_TOKEN is wrong or revoked: make a new token in GlitchTip (Profile → "
            "Auth Tokens) with the event:write scope and set GLITCHTIP_API_TOKEN to it",
        ),
        (
            403,
            {"detail": "Permission denied"},
            ScopeMissing,
            OPERATOR_HAS_IT,
            "GLITCHTIP_API_TOKEN may not change issues (it lacks the event:write scope)",
        ),
        (404, {"detail": "Not Found"}, IssueGone, "no such issue any more", None),
        (502, "<html>Bad Gateway</html>", TrackerUnreachable, "GlitchTip is failing", None),
        (
            None,
            requests.ConnectionError("Connection refused"),
            TrackerUnreachable,
            "could not be reached",
            None,
        ),
    ],
)
def test_each_glitchtip_failure_is_named_for_the_presser_and_fixed_for_the_operator(
    chat: Chat,
    glitchtip: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
    status: int | None,
    body: object,
    error: type[Exception],
    notice: str,
    fix: str | None,
) -> None:
    """The person who pressed gets a short plain answer; the operator's variable, scope and fix
    are in one log line (an ERROR: only the operator can fix it)."""
    configure_logging(GT_TOKEN)
    if isinstance(body, Exception):
        glitchtip.put(ISSUE_URL, body=body)
    elif isinstance(body, dict):
        glitchtip.put(ISSUE_URL, status=status, json=body)
    else:
        glitchtip.put(ISSUE_URL, status=status, body=str(body))
    with pytest.raises(error) as raised:
        api().set_status("4", "resolved")
    assert isinstance(raised.value, TrackerError)
    assert notice in tracker_notice(raised.value).text(ENGLISH)
    with caplog.at_level(logging.WARNING):
        chat.update(press(callback_data("resolve", "the-key")))
    chat.settle()
    assert chat.telegram.edits == []
    [(said, alert)] = chat.answered()
    assert notice in said
    assert "GLITCHTIP_" not in said  # the operator's words stay in the log
    assert alert
    [line] = [
        r
        for r in caplog.records
        if "a press by @ada to resolve BACKEND-4A failed" in r.getMessage()
    ]
    if fix is None:
        assert line.levelno == logging.WARNING
        assert "FIX:" not in line.getMessage()
    else:
        assert line.levelno == logging.ERROR
        assert f". FIX: {fix}" in line.getMessage()
    assert GT_TOKEN not in caplog.text
    found = chat.store.pressed("the-key")
    assert found is not None
    assert found[1].status is None  # nothing recorded: nothing changed


def test_a_card_and_a_notice_say_their_times_in_the_chats_zone(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    """The chat's route names Europe/Moscow: its cards and notices say 11:04 MSK, as its
    handoffs and summary do, not 08:04 UTC."""
    fake_time.now = 1_800_000_240.0
    routes = parse_routes(
        f"[[route]]\nchat = '{CHAT}'\ntimezone = 'Europe/Moscow'\n", "r.toml", ROUTE_SOURCES
    )
    chat = Chat.of(built, fake_time, SENT, routes=routes)
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "the-key")))
    chat.update(press(callback_data(MUTE, "the-key"), user_id=8))
    chat.settle()
    html_text = chat.telegram.edits[-1][2]
    assert html_text.endswith(
        "✅ Resolved by @ada at 11:04 MSK\n🔇 Muted in this chat by @ada until 12:04 MSK"
    )
    assert chat.answered()[-1][0] == (
        "Muted BACKEND-4A in this chat until 12:04 MSK; GlitchTip is not changed"
    )


def test_an_edit_that_meets_a_5xx_is_applied_later_not_dropped(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    # Before, the card of a press whose edit met one 500 never changed: the person who pressed
    # saw nothing happen, and pressed again.
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    failing = RetryableDeliveryError("Telegram refused editMessageText (500)", error_code=500)
    telegram = ScriptedTelegram(failing, clock=fake_time)
    chat = Chat.of(built, fake_time, SENT, telegram=telegram)
    chat.update(press(callback_data("resolve", "the-key")))
    chat.settle()
    assert telegram.writes == ["editMessageText", "editMessageText"]  # failed, then again
    [(_, _, html_text, _)] = telegram.edits
    assert "✅ Resolved by @ada" in html_text
    assert chat.answered() == [("Resolved BACKEND-4A in GlitchTip", False)]


def test_a_change_whose_edit_cannot_be_queued_is_still_answered_as_made(
    chat: Chat, glitchtip: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    assert chat.relay.outbox is not None

    def no_room(*_: object, **__: object) -> None:
        raise SpoolError("database is locked")

    monkeypatch.setattr(chat.relay.outbox, "card", no_room)
    chat.update(press(callback_data("resolve", "the-key")))
    assert chat.answered() == [
        ("Resolved BACKEND-4A in GlitchTip (the message could not be updated)", False)
    ]


def test_the_token_check_tells_a_bad_token_from_a_good_one(
    glitchtip: responses.RequestsMock,
) -> None:
    me = f"{GLITCHTIP}/api/0/users/me/"
    glitchtip.get(me, json={"id": "1", "username": "ada"})
    assert api().whoami()["username"] == "ada"
    glitchtip.replace(responses.GET, me, status=401, json={"detail": "Unauthorized"})
    with pytest.raises(TokenRefused):
        api().whoami()


def test_a_redirect_is_not_followed_and_its_location_is_named(
    glitchtip: responses.RequestsMock,
) -> None:
    elsewhere = "http://attacker.example/api/0/issues/4/"
    glitchtip.put(ISSUE_URL, status=302, headers={"Location": elsewhere})
    glitchtip.put(elsewhere, json={"id": "4", "status": "resolved"})
    with pytest.raises(TrackerError) as raised:
        api().set_status("4", "resolved")
    assert [call.request.url for call in glitchtip.calls] == [ISSUE_URL]
    assert elsewhere in str(raised.value)
    assert tracker_notice(raised.value).text(ENGLISH) == OPERATOR_HAS_IT
    fix = operator_fix(raised.value)
    assert fix is not None
    assert fix.startswith(f"GLITCHTIP_URL answers with a redirect (to {elsewhere})")


def test_an_answer_larger_than_glitchtip_gives_is_not_read_to_its_end(
    glitchtip: responses.RequestsMock,
) -> None:
    huge = b'{"id": "4", "status": "resolved", "padding": "' + b"x" * MAX_ANSWER_BYTES + b'"}'
    glitchtip.put(ISSUE_URL, body=huge, content_type="application/json")
    with pytest.raises(TrackerUnreachable) as raised:
        api().set_status("4", "resolved")
    assert "GlitchTip is failing" in tracker_notice(raised.value).text(ENGLISH)


def test_an_issue_id_is_digits_only(glitchtip: responses.RequestsMock) -> None:
    with pytest.raises(ValueError, match="not an issue's id"):
        api().set_status("4/../../users/me", "resolved")
    assert len(glitchtip.calls) == 0


def test_each_press_is_counted_by_what_became_of_it(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "the-key")))
    chat.update(press(callback_data("reopen", "the-key")))
    chat.update(press(callback_data("resolve", "no-such-key")))
    glitchtip.replace(responses.PUT, ISSUE_URL, status=404, json={"detail": "Not Found"})
    chat.update(press(callback_data("ignore", "the-key")))
    for outcome, count in (("resolved", 1), ("unresolved", 1), ("unknown", 1), ("failed", 1)):
        assert value(samples(chat), "relay_button_presses_total", outcome=outcome) == count


def test_six_presses_at_once_in_a_rate_limited_chat_each_show_on_their_card(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    # Telegram allows a group one write every 3 s, sends and edits alike. Before, 1 of 6 cards
    # showed its mute: the other 5 edits met a 429, and were dropped.
    cards = [
        SentMessage(
            CHAT,
            50 + n,
            f"<b>🔴 alert {n}</b>",
            fake_time.now,
            buttons=(IssueButton(f"key-{n}", str(n), GLITCHTIP, f"BACKEND-{n}A"),),
        )
        for n in range(6)
    ]
    telegram = LimitedTelegram(fake_time)
    telegram.limits.group_interval = 3.0
    chat = Chat.of(built, fake_time, *cards, telegram=telegram)
    for n in range(6):
        chat.update(press(callback_data(MUTE, f"key-{n}"), message_id=50 + n))
    assert len(chat.answered()) == 6  # each press answered at once
    chat.settle()
    shown = {message_id: html for _, message_id, html, _ in telegram.edits}
    assert sorted(shown) == [50, 51, 52, 53, 54, 55]  # every card, once
    assert all("🔇 Muted in this chat by @ada until" in html for html in shown.values())
    assert telegram.refused == []  # paced with the chat's sends: no 429 at all
    gaps = [b - a for a, b in itertools.pairwise(telegram.times)]
    assert min(gaps) >= 3.0


def test_a_press_acts_only_among_the_issues_of_the_organization_its_alert_named(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    """GlitchTip's webhook signs nothing: a link `/acme/issues/1002` may name another
    organization's issue. The press asks for it among acme's issues, so GlitchTip refuses any
    other's (404), whatever the token may reach."""
    card = SentMessage(
        CHAT,
        43,
        "<b>🔴 GlitchTip Alert</b>",
        fake_time.now,
        buttons=(IssueButton("org-key", "1002", GLITCHTIP, "SECRET-1", org="acme"),),
    )
    chat = Chat.of(built, fake_time, card)
    scoped = f"{GLITCHTIP}/api/0/organizations/acme/issues/1002/"
    glitchtip.put(scoped, status=404, json={"detail": "Not Found"})
    chat.update(press(callback_data("resolve", "org-key"), message_id=43))
    assert [call.request.url for call in glitchtip.calls] == [scoped]
    [(said, alert)] = chat.answered()
    assert alert is True
    assert said == (
        "GlitchTip has no such issue any more (deleted, or in an organization the token's user"
        " is not in); nothing was changed."
    )


class HangingTracker:
    """A tracker that holds every call until the test lets it go, then refuses or accepts."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.fails = True
        self.calls: list[str] = []

    def set_status(
        self,
        issue_id: str,
        status: Any,
        details: Any = None,
        *,
        org: str | None = None,
    ) -> dict[str, Any]:
        self.calls.append(issue_id)
        assert self.release.wait(10)
        if self.fails:
            raise TrackerUnreachable("PUT: no answer in time", cause="timeout")
        return {"id": issue_id, "status": status}

    def comment(self, issue_id: str, text: str, *, org: str | None = None) -> dict[str, Any]:
        raise AssertionError("no comment here")


def test_presses_never_wait_behind_a_tracker_that_hangs(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    """Before, with Sentry's API hanging, three presses at once in poll mode were answered at 5,
    10 and 15 s. Now each is handled off the thread that reads the updates and answered within
    `answer_within`; how the call ended is said under its card."""
    cards = [
        SentMessage(
            CHAT,
            60 + n,
            f"<b>🔴 alert {n}</b>",
            fake_time.now,
            buttons=(IssueButton(f"hang-{n}", str(n), GLITCHTIP, f"BACKEND-{n}A"),),
        )
        for n in range(3)
    ]
    chat = Chat.of(built, fake_time, *cards)
    tracker = HangingTracker()
    answers = ScriptedTelegram()
    assert chat.relay.spool is not None
    team = Team(
        store=chat.store,
        trackers=tracker,
        allowed_users=frozenset(),
        words=ENGLISH,
        clock=lambda: chat.clock.now,
    )
    acting = OffThread("test-presses", threads=4, most_waiting=8)
    presses = Presses(
        team,
        answers,
        Outbox(chat.relay.spool.queue, clock=chat.clock),
        PressActions(SOURCES),
        acting=acting,
        answer_within=0.2,
    )
    started = time.monotonic()
    for n in range(3):
        presses.handle_update(press(callback_data("resolve", f"hang-{n}"), message_id=60 + n))
    # The thread that read them went on: the tracker holds every call until the test lets it
    # go, so a press waited for would hold it here for good (bounded by the promise's 1.5 s,
    # not a tighter figure, since the whole suite may be running beside it).
    assert time.monotonic() - started < 1.5
    wait_until(lambda: len(answers.answered) >= 3, timeout=5)
    answered_in = time.monotonic() - started
    assert sorted(text for _, text, _ in answers.answered) == [
        f"⏳ Asked GlitchTip about BACKEND-{n}A: the message will show when it is done"
        for n in range(3)
    ]
    assert answered_in < 1.5
    tracker.release.set()
    assert acting.wait_idle(timeout=10)
    acting.shutdown()
    chat.settle()
    said = sorted(text for _, _, _, text in chat.telegram.replies)
    assert said == [
        f"⚠️ @ada's press on BACKEND-{n}A did not change it: GlitchTip could not be reached (it"
        " did not answer in time); nothing was changed. Try again in a while; if it goes on,"
        " tell the relay's operator."
        for n in range(3)
    ]
    for n in range(3):  # each claim taken back: the buttons offer Resolve again
        found = chat.store.pressed(f"hang-{n}")
        assert found is not None
        assert found[1].status is None
