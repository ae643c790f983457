"""A press on an alert's button (presses.py) and GlitchTip's API behind it (glitchtip_api.py),
with GlitchTip's HTTP layer mocked by `responses` as the reference says it answers, the records
in a real SQLite spool, and a small recording stand-in for Telegram."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from relay_app.acting.keyboards import callback_data
from relay_app.acting.notices import glitchtip_notice, operator_fix
from relay_app.acting.presses import Presses
from relay_app.acting.team import Team
from relay_app.core.errors import (
    DeliveryError,
    GlitchTipError,
    GlitchTipIssueGone,
    GlitchTipScopeMissing,
    GlitchTipTokenRefused,
    GlitchTipUnreachable,
)
from relay_app.core.logs import configure_logging
from relay_app.core.metrics import Metrics
from relay_app.glitchtip.api import MAX_ANSWER_BYTES, GlitchTipApi
from relay_app.spool.database import Database
from relay_app.spool.sent import IssueButton, SentMessage, SpoolSentStore
from relay_app.words import ENGLISH
from tests.prometheus import parse, value

GLITCHTIP = "https://gt.example.org"
ISSUE_URL = f"{GLITCHTIP}/api/0/issues/4/"
GT_TOKEN = "a1" * 32
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


class RecordingChat:
    """Telegram as a press sees it: what was edited and answered."""

    def __init__(self, *, edit_fails: bool = False) -> None:
        self.edits: list[tuple[str, int, str, dict[str, Any] | None]] = []
        self.answers: list[tuple[str, str, bool]] = []
        self._edit_fails = edit_fails

    def edit(
        self, chat: str, message_id: int, html_text: str, keyboard: dict[str, Any] | None
    ) -> None:
        if self._edit_fails:
            raise DeliveryError("Telegram refused editMessageText (400): message can't be edited")
        self.edits.append((chat, message_id, html_text, keyboard))

    def answer(self, callback_query_id: str, text: str, *, alert: bool = False) -> None:
        self.answers.append((callback_query_id, text, alert))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SpoolSentStore]:
    database = Database(str(tmp_path / "spool.sqlite3"))
    kept = SpoolSentStore(database)
    kept.keep(SENT, [])
    yield kept
    database.close()


def api() -> GlitchTipApi:
    return GlitchTipApi(GT_TOKEN, GLITCHTIP, timeout=2.0)


def presses(store: SpoolSentStore, chat: RecordingChat, **overrides: Any) -> Presses:
    team = Team(
        store=store,
        glitchtip=api(),
        allowed_users=overrides.get("allowed_users", frozenset()),
        words=ENGLISH,
        metrics=overrides.get("metrics"),
        clock=lambda: 1_800_000_240.0,
    )
    return Presses(team, chat)


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


def answered(chat: RecordingChat) -> list[tuple[str, bool]]:
    return [(text, alert) for _, text, alert in chat.answers]


def test_a_press_changes_the_issue_edits_the_message_and_is_answered(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat = RecordingChat()
    presses(store, chat).handle_update(press(callback_data("resolve", "the-key")))
    [call] = glitchtip.calls
    assert call.request.url == ISSUE_URL  # GLITCHTIP_URL's, never the link's (ATTACKER)
    assert call.request.headers["Authorization"] == f"Bearer {GT_TOKEN}"
    assert call.request.body == b'{"status": "resolved"}'
    [(edited_chat, message_id, html_text, keyboard)] = chat.edits
    assert (edited_chat, message_id) == (CHAT, 41)
    assert html_text == "<b>🔴 GlitchTip Alert</b>\n\n✅ Resolved by @ada at 08:04 UTC"
    assert keyboard == {
        "inline_keyboard": [
            [
                {"text": "↩️ Reopen", "callback_data": "o:the-key"},
                {"text": "🔇 Mute 1 h", "callback_data": "m:the-key"},
            ]
        ]
    }
    assert answered(chat) == [("Resolved BACKEND-4A in GlitchTip", False)]


def test_an_update_acts_once_however_often_it_arrives(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    metrics = Metrics()
    chat = RecordingChat()
    first = press(callback_data("resolve", "the-key"))
    presses(store, chat, metrics=metrics).handle_update(first)
    # Telegram again (its webhook's answer was lost), and a replay under a new update id.
    another_process = presses(store, chat, metrics=metrics)
    another_process.handle_update(first)
    replayed = press(callback_data("resolve", "the-key"), press_id=first["callback_query"]["id"])
    another_process.handle_update(replayed)
    assert len(glitchtip.calls) == 1
    assert len(chat.edits) == 1
    assert len(chat.answers) == 1  # the first delivery answered it
    samples = parse(metrics.exposition().decode())
    assert value(samples, "relay_button_presses_total", outcome="repeated") == 2


def test_a_button_no_longer_shown_does_nothing(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    metrics = Metrics()
    chat = RecordingChat()
    handle = presses(store, chat, metrics=metrics).handle_update
    handle(press(callback_data("resolve", "the-key")))
    # The keyboard shows only Reopen now; Resolve and Ignore from the old one are stale.
    handle(press(callback_data("ignore", "the-key")))
    handle(press(callback_data("resolve", "the-key")))
    assert len(glitchtip.calls) == 1
    assert answered(chat)[1:] == [
        (ENGLISH.press_out_of_date, True),
        (ENGLISH.press_out_of_date, True),
    ]
    found = store.pressed("the-key")
    assert found is not None
    assert found[1].status == "resolved"
    samples = parse(metrics.exposition().decode())
    assert value(samples, "relay_button_presses_total", outcome="stale") == 2


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
    store: SpoolSentStore, glitchtip: responses.RequestsMock, forged: dict[str, Any]
) -> None:
    chat = RecordingChat()
    presses(store, chat).handle_update(forged)
    assert len(glitchtip.calls) == 0
    assert chat.edits == []
    assert answered(chat) == [(ENGLISH.press_unknown, True)]


def test_someone_not_on_the_list_is_refused(
    store: SpoolSentStore, glitchtip: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    chat = RecordingChat()
    with caplog.at_level(logging.WARNING):
        presses(store, chat, allowed_users=frozenset({1, 2})).handle_update(
            press(callback_data("resolve", "the-key"), user_id=7)
        )
    assert len(glitchtip.calls) == 0
    assert answered(chat) == [(ENGLISH.press_not_allowed, True)]
    assert "not in TELEGRAM_ACTION_USER_IDS" in caplog.text


OPERATOR_HAS_IT = "GlitchTip refused the change; the relay's operator has the details."


@pytest.mark.parametrize(
    ("status", "body", "error", "notice", "fix"),
    [
        (
            403,
            {"detail": "CSRF check Failed"},
            GlitchTipTokenRefused,
            OPERATOR_HAS_IT,
            "GLITCHTIP_API_TOKEN is wrong or revoked: make a new token in GlitchTip (Profile → "
            "Auth Tokens) with the event:write scope and set GLITCHTIP_API_TOKEN to it",
        ),
        (
            403,
            {"detail": "Permission denied"},
            GlitchTipScopeMissing,
            OPERATOR_HAS_IT,
            "GLITCHTIP_API_TOKEN may not change issues (it lacks the event:write scope)",
        ),
        (404, {"detail": "Not Found"}, GlitchTipIssueGone, "no such issue any more", None),
        (502, "<html>Bad Gateway</html>", GlitchTipUnreachable, "GlitchTip is failing", None),
        (
            None,
            requests.ConnectionError("Connection refused"),
            GlitchTipUnreachable,
            "could not be reached",
            None,
        ),
    ],
)
def test_each_glitchtip_failure_is_named_for_the_presser_and_fixed_for_the_operator(
    store: SpoolSentStore,
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
    assert isinstance(raised.value, GlitchTipError)
    assert notice in glitchtip_notice(raised.value, ENGLISH)
    chat = RecordingChat()
    with caplog.at_level(logging.WARNING):
        presses(store, chat).handle_update(press(callback_data("resolve", "the-key")))
    assert chat.edits == []
    [(_, said, alert)] = chat.answers
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
    found = store.pressed("the-key")
    assert found is not None
    assert found[1].status is None  # nothing recorded: nothing changed


def test_a_change_made_but_not_shown_is_still_answered_as_made(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat = RecordingChat(edit_fails=True)
    presses(store, chat).handle_update(press(callback_data("resolve", "the-key")))
    assert answered(chat) == [
        ("Resolved BACKEND-4A in GlitchTip (the message could not be updated)", False)
    ]


def test_the_token_check_tells_a_bad_token_from_a_good_one(
    glitchtip: responses.RequestsMock,
) -> None:
    me = f"{GLITCHTIP}/api/0/users/me/"
    glitchtip.get(me, json={"id": "1", "username": "ada"})
    assert api().whoami()["username"] == "ada"
    glitchtip.replace(responses.GET, me, status=401, json={"detail": "Unauthorized"})
    with pytest.raises(GlitchTipTokenRefused):
        api().whoami()


def test_a_redirect_is_not_followed_and_its_location_is_named(
    glitchtip: responses.RequestsMock,
) -> None:
    elsewhere = "http://attacker.example/api/0/issues/4/"
    glitchtip.put(ISSUE_URL, status=302, headers={"Location": elsewhere})
    glitchtip.put(elsewhere, json={"id": "4", "status": "resolved"})
    with pytest.raises(GlitchTipError) as raised:
        api().set_status("4", "resolved")
    assert [call.request.url for call in glitchtip.calls] == [ISSUE_URL]
    assert elsewhere in str(raised.value)
    assert glitchtip_notice(raised.value, ENGLISH) == OPERATOR_HAS_IT
    fix = operator_fix(raised.value)
    assert fix is not None
    assert fix.startswith(f"GLITCHTIP_URL answers with a redirect (to {elsewhere})")


def test_an_answer_larger_than_glitchtip_gives_is_not_read_to_its_end(
    glitchtip: responses.RequestsMock,
) -> None:
    huge = b'{"id": "4", "status": "resolved", "padding": "' + b"x" * MAX_ANSWER_BYTES + b'"}'
    glitchtip.put(ISSUE_URL, body=huge, content_type="application/json")
    with pytest.raises(GlitchTipUnreachable) as raised:
        api().set_status("4", "resolved")
    assert "GlitchTip is failing" in glitchtip_notice(raised.value, ENGLISH)


def test_an_issue_id_is_digits_only(glitchtip: responses.RequestsMock) -> None:
    with pytest.raises(ValueError, match="not a GlitchTip issue id"):
        api().set_status("4/../../users/me", "resolved")
    assert len(glitchtip.calls) == 0


def test_each_press_is_counted_by_what_became_of_it(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    metrics = Metrics()
    handle = presses(store, RecordingChat(), metrics=metrics).handle_update
    handle(press(callback_data("resolve", "the-key")))
    handle(press(callback_data("reopen", "the-key")))
    handle(press(callback_data("resolve", "no-such-key")))
    glitchtip.replace(responses.PUT, ISSUE_URL, status=404, json={"detail": "Not Found"})
    handle(press(callback_data("ignore", "the-key")))
    samples = parse(metrics.exposition().decode())
    for outcome, count in (("resolved", 1), ("unresolved", 1), ("unknown", 1), ("failed", 1)):
        assert value(samples, "relay_button_presses_total", outcome=outcome) == count
