from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import responses
from flask import Flask
from flask.testing import FlaskClient

from relay_app import create_app, retrier
from relay_app.config import Settings
from relay_app.retrier import Retrier

TOKEN = "123456789:unit-test-token-abcdefghijklmnop"
SECRET = "unit-test-webhook-secret-0123456789"
API_URL = "https://telegram.test"
SEND_URL = f"{API_URL}/bot{TOKEN}/sendMessage"
CHAT_ID = -1001234567890


def refusal(status: int, description: str, **parameters: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        reply["parameters"] = parameters
    return reply


class RecordingSleep:
    """Stands in for the retrier's pauses: remembers them and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def settings() -> Settings:
    return Settings(
        telegram_bot_token=TOKEN,
        telegram_chat_id=CHAT_ID,
        webhook_secret=SECRET,
        telegram_api_url=API_URL,
        send_timeout=2.0,
        retry_attempts=3,
        retry_wait=30.0,
    )


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def telegram() -> Iterator[responses.RequestsMock]:
    """Telegram's HTTP layer; a test registers the replies it needs on SEND_URL."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def app(settings: Settings, sleeps: RecordingSleep) -> Iterator[Flask]:
    app = create_app(settings, retry_sleep=sleeps)
    yield app
    retrier.shutdown()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def app_retrier(app: Flask) -> Retrier:
    found = app.extensions["relay_retrier"]
    assert isinstance(found, Retrier)
    return found
