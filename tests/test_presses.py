"""A press on an alert's button (presses.py) and GlitchTip's API behind it (glitchtip_api.py),
with GlitchTip's HTTP layer mocked by `responses` as the reference says it answers, the records
in a real SQLite spool, and a small recording stand-in for Telegram."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from relay_app.errors import (
    DeliveryError,
    GlitchTipIssueGone,
    GlitchTipScopeMissing,
    GlitchTipTokenRefused,
    GlitchTipUnreachable,
)
from relay_app.glitchtip_api import GlitchTipApi
from relay_app.keyboards import callback_data
from relay_app.logs import configure_logging
from relay_app.metrics import Metrics
from relay_app.presses import NOT_ALLOWED, UNKNOWN, Presses
from relay_app.spool import Database
from relay_app.spool.sent import IssueButton, SentMessage, SqliteSentStore
from tests.prometheus import parse, value

GLITCHTIP = "https://gt.example.org"
ISSUE_URL = f"{GLITCHTIP}/api/0/issues/4/"
GT_TOKEN = "a1" * 32
CHAT = "-1001234567890"
SENT = SentMessage(
    CHAT,
    41,
    "<b>🔴 GlitchTip Alert</b>",
    1_800_000_000.0,
    buttons=(IssueButton("the-key", "4", GLITCHTIP, "BACKEND-4A"),),
)


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
def store(tmp_path: Path) -> Iterator[SqliteSentStore]:
    database = Database(str(tmp_path / "spool.sqlite3"))
    kept = SqliteSentStore(database)
    kept.keep(SENT, [])
    yield kept
    database.close()


@pytest.fixture
def glitchtip() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def presses(store: SqliteSentStore, chat: RecordingChat, **overrides: Any) -> Presses:
    return Presses(
        store=store,
        glitchtip=GlitchTipApi(GT_TOKEN, timeout=2.0),
        chat=chat,
        allowed_users=overrides.get("allowed_users", frozenset()),
        glitchtip_url=overrides.get("glitchtip_url"),
        metrics=overrides.get("metrics"),
        clock=lambda: 1_800_000_240.0,
    )


def press(data: str, *, chat: str = CHAT, message_id: int = 41, user_id: int = 7) -> dict[str, Any]:
    return {
        "id": "press-1",
        "from": {"id": user_id, "is_bot": False, "first_name": "Ada", "username": "ada"},
        "message": {"message_id": message_id, "chat": {"id": int(chat)}},
        "data": data,
    }


def test_a_press_changes_the_issue_edits_the_message_and_is_answered(
    store: SqliteSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat = RecordingChat()
    presses(store, chat).handle(press(callback_data("resolve", "the-key")))
    [call] = glitchtip.calls
    assert call.request.headers["Authorization"] == f"Bearer {GT_TOKEN}"
    assert call.request.body == b'{"status": "resolved"}'
    [(edited_chat, message_id, html_text, keyboard)] = chat.edits
    assert (edited_chat, message_id) == (CHAT, 41)
    assert html_text == "<b>🔴 GlitchTip Alert</b>\n\n✅ Resolved by @ada at 08:04 UTC"
    assert keyboard == {"inline_keyboard": [[{"text": "↩️ Reopen", "callback_data": "o:the-key"}]]}
    assert chat.answers == [("press-1", "Resolved BACKEND-4A in GlitchTip", False)]


def test_glitchtip_url_overrides_the_links_origin(
    store: SqliteSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put("http://glitchtip.internal:8000/api/0/issues/4/", json={"id": "4"})
    chat = RecordingChat()
    presses(store, chat, glitchtip_url="http://glitchtip.internal:8000").handle(
        press(callback_data("ignore", "the-key"))
    )
    assert len(glitchtip.calls) == 1
    assert chat.answers[0][1] == "Ignored BACKEND-4A in GlitchTip"


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
    store: SqliteSentStore, glitchtip: responses.RequestsMock, forged: dict[str, Any]
) -> None:
    chat = RecordingChat()
    presses(store, chat).handle(forged)
    assert len(glitchtip.calls) == 0
    assert chat.edits == []
    assert chat.answers == [("press-1", UNKNOWN, True)]


def test_someone_not_on_the_list_is_refused(
    store: SqliteSentStore, glitchtip: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    chat = RecordingChat()
    with caplog.at_level(logging.WARNING):
        presses(store, chat, allowed_users=frozenset({1, 2})).handle(
            press(callback_data("resolve", "the-key"), user_id=7)
        )
    assert len(glitchtip.calls) == 0
    assert chat.answers == [("press-1", NOT_ALLOWED, True)]
    assert "not in TELEGRAM_ACTION_USER_IDS" in caplog.text


@pytest.mark.parametrize(
    ("status", "body", "error", "notice"),
    [
        (403, {"detail": "CSRF check Failed"}, GlitchTipTokenRefused, "wrong or revoked"),
        (403, {"detail": "Permission denied"}, GlitchTipScopeMissing, "event:write scope"),
        (404, {"detail": "Not Found"}, GlitchTipIssueGone, "no such issue any more"),
        (502, "<html>Bad Gateway</html>", GlitchTipUnreachable, "GlitchTip is failing"),
        (
            None,
            requests.ConnectionError("Connection refused"),
            GlitchTipUnreachable,
            "could not be reached",
        ),
    ],
)
def test_each_glitchtip_failure_is_named_and_leaves_the_message_alone(
    store: SqliteSentStore,
    glitchtip: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
    status: int | None,
    body: object,
    error: type[Exception],
    notice: str,
) -> None:
    configure_logging(GT_TOKEN)
    if isinstance(body, Exception):
        glitchtip.put(ISSUE_URL, body=body)
    elif isinstance(body, dict):
        glitchtip.put(ISSUE_URL, status=status, json=body)
    else:
        glitchtip.put(ISSUE_URL, status=status, body=str(body))
    with pytest.raises(error) as raised:
        GlitchTipApi(GT_TOKEN, timeout=2.0).set_status(GLITCHTIP, "4", "resolved")
    assert notice in raised.value.notice  # type: ignore[attr-defined]
    chat = RecordingChat()
    with caplog.at_level(logging.WARNING):
        presses(store, chat).handle(press(callback_data("resolve", "the-key")))
    assert chat.edits == []
    [(_, said, alert)] = chat.answers
    assert notice in said
    assert alert
    assert "a press by @ada to resolve BACKEND-4A failed" in caplog.text
    assert GT_TOKEN not in caplog.text
    found = store.pressed("the-key")
    assert found is not None
    assert found[1].status is None  # nothing recorded: nothing changed


def test_a_change_made_but_not_shown_is_still_answered_as_made(
    store: SqliteSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat = RecordingChat(edit_fails=True)
    presses(store, chat).handle(press(callback_data("resolve", "the-key")))
    assert chat.answers == [
        ("press-1", "Resolved BACKEND-4A in GlitchTip (the message could not be updated)", False)
    ]


def test_the_token_check_tells_a_bad_token_from_a_good_one(
    glitchtip: responses.RequestsMock,
) -> None:
    me = f"{GLITCHTIP}/api/0/users/me/"
    glitchtip.get(me, json={"id": "1", "username": "ada"})
    assert GlitchTipApi(GT_TOKEN, timeout=2.0).whoami(GLITCHTIP)["username"] == "ada"
    glitchtip.replace(responses.GET, me, status=401, json={"detail": "Unauthorized"})
    with pytest.raises(GlitchTipTokenRefused):
        GlitchTipApi(GT_TOKEN, timeout=2.0).whoami(GLITCHTIP)


def test_each_press_is_counted_by_what_became_of_it(
    store: SqliteSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    metrics = Metrics(None)
    handle = presses(store, RecordingChat(), metrics=metrics).handle
    handle(press(callback_data("resolve", "the-key")))
    handle(press(callback_data("reopen", "the-key")))
    handle(press(callback_data("resolve", "no-such-key")))
    glitchtip.replace(responses.PUT, ISSUE_URL, status=404, json={"detail": "Not Found"})
    handle(press(callback_data("ignore", "the-key")))
    samples = parse(metrics.exposition().decode())
    for outcome, count in (("resolved", 1), ("unresolved", 1), ("unknown", 1), ("failed", 1)):
        assert value(samples, "relay_button_presses_total", outcome=outcome) == count
