from __future__ import annotations

import logging
from typing import Any

import pytest

from relay_app.core.errors import (
    ChatMigrated,
    DeliveryError,
    MarkupRejected,
    PermanentDeliveryError,
    RetryableDeliveryError,
)
from relay_app.core.routing import ChatId, Destination
from relay_app.glitchtip.webhook import parse_alert
from relay_app.message.formatting import format_alert
from relay_app.telegram.client import NO_EXTRAS, Extras, TelegramClient
from relay_app.telegram.courier import Courier
from relay_app.words import ENGLISH
from tests.conftest import API_URL, TOKEN
from tests.payloads import issue, issue_alert

MESSAGE = format_alert(parse_alert(issue_alert(issue(1, title="T" * 5000))), ENGLISH)


class ScriptedClient(TelegramClient):
    """The Bot API's client under the courier (in_process.ScriptedTelegram stands in for the
    courier itself): answers each send with the next scripted error, or success once the
    script runs out."""

    def __init__(self, *errors: DeliveryError) -> None:
        super().__init__(API_URL, TOKEN)
        self.errors = list(errors)
        self.sent: list[dict[str, Any]] = []

    def send_message(
        self,
        chat_id: ChatId,
        text: str,
        *,
        html: bool,
        thread_id: int | None,
        deadline: float,
        extras: Extras = NO_EXTRAS,
    ) -> dict[str, Any]:
        self.sent.append({"chat_id": chat_id, "text": text, "html": html, "thread": thread_id})
        if self.errors:
            raise self.errors.pop(0)
        return {"message_id": len(self.sent), "chat": {"id": chat_id}}


TOPIC_5 = Destination(-100, 5)


def courier(telegram: ScriptedClient) -> Courier:
    return Courier(telegram, attempt_timeout=2.0)


def markup_rejected(description: str) -> MarkupRejected:
    return MarkupRejected(description, error_code=400, description=description)


def migrated(new_chat_id: int) -> ChatMigrated:
    return ChatMigrated(
        "upgraded", error_code=400, description="group chat was upgraded", new_chat_id=new_chat_id
    )


def test_the_html_goes_to_the_configured_chat_and_topic() -> None:
    telegram = ScriptedClient()
    courier(telegram).deliver(MESSAGE, TOPIC_5)
    assert telegram.sent == [{"chat_id": -100, "text": MESSAGE.html, "html": True, "thread": 5}]


@pytest.mark.parametrize(
    "description", ["Bad Request: can't parse entities: x", "Bad Request: message is too long"]
)
def test_rejected_markup_is_resent_once_as_shortened_plain_text(
    description: str, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedClient(markup_rejected(description))
    courier(telegram).deliver(MESSAGE, TOPIC_5)
    assert [(s["text"], s["html"]) for s in telegram.sent] == [
        (MESSAGE.html, True),
        (MESSAGE.fallback, False),
    ]
    assert len(MESSAGE.fallback) < len(MESSAGE.text)
    assert "sending it as plain text" in caplog.text


def test_plain_text_rejected_too_is_an_error_not_a_loop() -> None:
    telegram = ScriptedClient(markup_rejected("too long"), markup_rejected("too long"))
    with pytest.raises(MarkupRejected):
        courier(telegram).deliver(MESSAGE, TOPIC_5)
    assert len(telegram.sent) == 2


def test_an_upgraded_group_gets_the_message_at_its_new_id_and_the_operator_is_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram = ScriptedClient(migrated(-100999))
    relay = courier(telegram)
    with caplog.at_level(logging.WARNING):
        relay.deliver(MESSAGE, TOPIC_5)
        relay.deliver(MESSAGE, TOPIC_5)
        relay.deliver(MESSAGE, Destination(-200))  # another chat is not redirected
    assert [s["chat_id"] for s in telegram.sent] == [-100, -100999, -100999, -200]
    warnings = [r for r in caplog.records if "to -100999 to stop relying" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


def test_migration_and_markup_recoveries_combine() -> None:
    telegram = ScriptedClient(migrated(-100999), markup_rejected("can't parse entities"))
    courier(telegram).deliver(MESSAGE, TOPIC_5)
    assert [(s["chat_id"], s["html"]) for s in telegram.sent] == [
        (-100, True),
        (-100999, True),
        (-100999, False),
    ]


def test_a_migration_loop_stops() -> None:
    telegram = ScriptedClient(migrated(-2), migrated(-100))
    with pytest.raises(ChatMigrated):
        courier(telegram).deliver(MESSAGE, TOPIC_5)
    assert len(telegram.sent) == 2


@pytest.mark.parametrize(
    "error",
    [
        RetryableDeliveryError("down"),
        PermanentDeliveryError("kicked", error_code=403, description="Forbidden"),
    ],
)
def test_other_errors_reach_the_caller_after_one_request(error: DeliveryError) -> None:
    telegram = ScriptedClient(error)
    with pytest.raises(type(error)):
        courier(telegram).deliver(MESSAGE, TOPIC_5)
    assert len(telegram.sent) == 1
