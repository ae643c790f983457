"""The courier (telegram/courier.py) over the real client, Telegram's HTTP layer answered by
`responses`: the recoveries it makes itself (plain text for rejected markup, a migrated group's
new id) and the errors it leaves to its caller."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import requests
import responses

from relay_app.core.errors import (
    ChatMigrated,
    DeliveryError,
    MarkupRejected,
    PermanentDeliveryError,
    RetryableDeliveryError,
)
from relay_app.core.routing import Destination
from relay_app.glitchtip.webhook import read_kept
from relay_app.message.formatting import format_alert
from relay_app.telegram.client import TelegramClient
from relay_app.telegram.courier import Courier
from relay_app.words import ENGLISH
from tests.conftest import API_URL, SEND_URL, TOKEN, refusal, sent_bodies
from tests.payloads import issue, issue_alert

MESSAGE = format_alert(read_kept(issue_alert(issue(1, title="T" * 5000))), ENGLISH)

# Telegram's answers, in turn, to the courier's sendMessage (the last one repeats).
Answer = dict[str, Any] | Exception
POSTED: Answer = {"ok": True, "result": {"message_id": 1, "chat": {"id": -100}}}


def scripted(telegram: responses.RequestsMock, *answers: Answer) -> None:
    """Telegram answers each send with the next of `answers`, then posts every one after."""
    for answer in (*answers, POSTED):
        if isinstance(answer, Exception):
            telegram.post(SEND_URL, body=answer)
        else:
            status = 200 if answer.get("ok") else int(answer["error_code"])
            telegram.post(SEND_URL, json=answer, status=status)


def sent(telegram: responses.RequestsMock) -> list[dict[str, Any]]:
    """Each send as the courier made it: chat, text, whether HTML, topic."""
    return [
        {
            "chat_id": body["chat_id"],
            "text": body["text"],
            "html": body.get("parse_mode") == "HTML",
            "thread": body.get("message_thread_id"),
        }
        for body in sent_bodies(telegram)
    ]


TOPIC_5 = Destination(-100, 5)


def courier() -> Courier:
    return Courier(TelegramClient(API_URL, TOKEN), attempt_timeout=2.0)


def markup_rejected(description: str) -> Answer:
    return refusal(400, description)


def migrated(new_chat_id: int) -> Answer:
    return refusal(
        400,
        "Bad Request: group chat was upgraded to a supergroup chat",
        migrate_to_chat_id=new_chat_id,
    )


def test_the_html_goes_to_the_configured_chat_and_topic(telegram: responses.RequestsMock) -> None:
    scripted(telegram)
    courier().deliver(MESSAGE, TOPIC_5)
    assert sent(telegram) == [{"chat_id": -100, "text": MESSAGE.html, "html": True, "thread": 5}]


@pytest.mark.parametrize(
    "description", ["Bad Request: can't parse entities: x", "Bad Request: message is too long"]
)
def test_rejected_markup_is_resent_once_as_shortened_plain_text(
    description: str, telegram: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    scripted(telegram, markup_rejected(description))
    courier().deliver(MESSAGE, TOPIC_5)
    assert [(s["text"], s["html"]) for s in sent(telegram)] == [
        (MESSAGE.html, True),
        (MESSAGE.fallback, False),
    ]
    assert len(MESSAGE.fallback) < len(MESSAGE.text)
    assert "sending it as plain text" in caplog.text


def test_plain_text_rejected_too_is_an_error_not_a_loop(telegram: responses.RequestsMock) -> None:
    too_long = markup_rejected("Bad Request: message is too long")
    scripted(telegram, too_long, too_long)
    with pytest.raises(MarkupRejected):
        courier().deliver(MESSAGE, TOPIC_5)
    assert len(sent(telegram)) == 2


def test_an_upgraded_group_gets_the_message_at_its_new_id_and_the_operator_is_told(
    telegram: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    scripted(telegram, migrated(-100999))
    relay = courier()
    with caplog.at_level(logging.WARNING):
        relay.deliver(MESSAGE, TOPIC_5)
        relay.deliver(MESSAGE, TOPIC_5)
        relay.deliver(MESSAGE, Destination(-200))  # another chat is not redirected
    assert [s["chat_id"] for s in sent(telegram)] == [-100, -100999, -100999, -200]
    warnings = [r for r in caplog.records if "to -100999 to stop relying" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


def test_migration_and_markup_recoveries_combine(telegram: responses.RequestsMock) -> None:
    scripted(telegram, migrated(-100999), markup_rejected("Bad Request: can't parse entities"))
    courier().deliver(MESSAGE, TOPIC_5)
    assert [(s["chat_id"], s["html"]) for s in sent(telegram)] == [
        (-100, True),
        (-100999, True),
        (-100999, False),
    ]


def test_a_migration_loop_stops(telegram: responses.RequestsMock) -> None:
    scripted(telegram, migrated(-2), migrated(-100))
    with pytest.raises(ChatMigrated):
        courier().deliver(MESSAGE, TOPIC_5)
    assert len(sent(telegram)) == 2


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (requests.ConnectionError("refused"), RetryableDeliveryError),
        (refusal(403, "Forbidden: bot was kicked from the group chat"), PermanentDeliveryError),
    ],
)
def test_other_errors_reach_the_caller_after_one_request(
    answer: Answer, error: type[DeliveryError], telegram: responses.RequestsMock
) -> None:
    scripted(telegram, answer)
    with pytest.raises(error):
        courier().deliver(MESSAGE, TOPIC_5)
    assert len(telegram.calls) == 1
