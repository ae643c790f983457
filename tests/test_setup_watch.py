"""The start-up check (operating/setup_watch.py) against the fake Telegram: which variable a
refusal names, that it is said once however often it is asked again, and that a fix is noticed
without a restart."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from relay_app.operating.config import Settings
from relay_app.operating.setup_watch import SetupWatch
from tests.e2e.helpers import wait_until
from tests.fake_telegram import TOKEN, FakeTelegram, running_fake_telegram

DEFAULT, OTHER = "-1001234567890", "-1005555555555"


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with running_fake_telegram() as fake:
        fake.add_chat(DEFAULT)
        yield fake


def gauge(watch: SetupWatch) -> list[float]:
    return [sample.value for family in watch.collect() for sample in family.samples]


def test_a_refused_chat_names_its_variable_once_and_a_fix_is_noticed(
    fake: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings.from_env(
        {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_CHAT_ID": DEFAULT,
            "TELEGRAM_ALLOWED_CHAT_IDS": OTHER,
            "RELAY_WEBHOOK_SECRET": "s" * 32,
            "TELEGRAM_API_URL": fake.url,
            "RELAY_SEND_TIMEOUT": "2",
        }
    )
    watch = SetupWatch(settings, recheck_every=0.05)
    assert gauge(watch) == []  # not asked yet: neither ok nor refused
    with caplog.at_level(logging.ERROR):
        watch.start()
        try:
            assert wait_until(lambda: watch.problems(), timeout=5)
            [problem] = watch.problems()
            assert problem.startswith(f"TELEGRAM_ALLOWED_CHAT_IDS: chat {OTHER}: ")
            assert gauge(watch) == [0]
            assert wait_until(lambda: len(fake.start_up_requests) > 12, timeout=5)  # re-asked
            fake.add_chat(OTHER)  # the bot was added to the group
            assert wait_until(lambda: gauge(watch) == [1], timeout=5)
        finally:
            watch.shutdown()
    assert watch.problems() == []
    refusals = [r for r in caplog.records if "TELEGRAM REFUSES THE SETUP" in r.getMessage()]
    assert len(refusals) == 1  # said once, not at each look
