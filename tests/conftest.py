from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses
from flask import Flask
from flask.testing import FlaskClient

from relay_app import create_app, retrier
from relay_app.config import Settings
from relay_app.retrier import Retrier
from relay_app.routing import Destination

TOKEN = "123456789:unit-test-token-abcdefghijklmnop"
SECRET = "unit-test-webhook-secret-0123456789"
API_URL = "https://telegram.test"
SEND_URL = f"{API_URL}/bot{TOKEN}/sendMessage"
WEBHOOK = f"/webhook/{SECRET}"
OK = {"ok": True, "result": {"message_id": 1}}  # Telegram's answer to an accepted message
CHAT_ID = -1001234567890
DESTINATION = Destination(CHAT_ID)


def refusal(status: int, description: str, **parameters: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        reply["parameters"] = parameters
    return reply


class FakeTime:
    """A clock and a sleep in one: sleeping advances the clock at once, so hours of backoff
    run instantly and the retry horizon can be reached."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def spool_path(tmp_path: Path) -> str:
    return str(tmp_path / "spool.sqlite3")


@pytest.fixture
def settings(spool_path: str) -> Settings:
    return Settings(
        telegram_bot_token=TOKEN,
        telegram_chat_id=CHAT_ID,
        webhook_secret=SECRET,
        telegram_api_url=API_URL,
        send_timeout=2.0,
        retry_attempts=3,
        retry_wait=30.0,
        spool_path=spool_path,
    )


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def telegram() -> Iterator[responses.RequestsMock]:
    """Telegram's HTTP layer; a test registers the replies it needs on SEND_URL."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def app(settings: Settings, fake_time: FakeTime) -> Iterator[Flask]:
    app = create_app(settings, retry_sleep=fake_time.sleep, clock=fake_time)
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


def run_background(background: Retrier, clock: FakeTime, *, rounds: int = 100) -> None:
    """What each worker's dispatcher does, on fake time: start drain jobs for the alerts that
    are waiting, let them finish, move the clock to the next alert due, until none is left."""
    assert background.spool is not None
    for _ in range(rounds):
        background.dispatch_once()
        assert background.wait_idle(timeout=10)
        waiting, soonest = background.spool.waiting(now=clock.now)
        if not waiting and soonest is None:
            return
        if not waiting and soonest is not None:
            clock.now = max(clock.now, soonest)
    raise AssertionError(f"alerts still waiting after {rounds} rounds")
