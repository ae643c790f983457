from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.relay_process import SECRET, RelayProcess
from tests.fake_telegram import TOKEN, FakeTelegram, running_fake_telegram

CHAT_ID = "-1001234567890"

StartRelay = Callable[..., RelayProcess]


@pytest.fixture
def fake_telegram() -> Iterator[FakeTelegram]:
    with running_fake_telegram() as fake:
        yield fake


def relay_env(fake: FakeTelegram, **overrides: str) -> dict[str, str]:
    return {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_CHAT_ID": CHAT_ID,
        "TELEGRAM_THREAD_ID": "77",
        "TELEGRAM_API_URL": fake.url,
        "RELAY_WEBHOOK_SECRET": SECRET,
        "RELAY_SEND_TIMEOUT": "1",
        "RELAY_RETRY_ATTEMPTS": "3",
        "RELAY_RETRY_WAIT": "0.3",
        **overrides,
    }


@pytest.fixture
def start_relay(fake_telegram: FakeTelegram, tmp_path: Path) -> Iterator[StartRelay]:
    """Starts gunicorn against the fake; on teardown stops it and checks that its whole log,
    access log included, never shows the bot token or the webhook secret."""
    started: list[RelayProcess] = []

    def start(**overrides: str) -> RelayProcess:
        relay = RelayProcess(
            relay_env(fake_telegram, **overrides), tmp_path / f"relay-{len(started)}.log"
        )
        started.append(relay)
        return relay.wait_ready()

    yield start
    for relay in started:
        relay.stop()
        logs = relay.logs()
        assert TOKEN not in logs
        assert SECRET not in logs
