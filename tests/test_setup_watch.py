"""The start-up check (operating/setup_watch.py) against the fake Telegram: which variable a
refusal names, that it is said once however often it is asked again, that a fix is noticed
without a restart, and that what the leader found is what every process says."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relay_app.core.errors import RetryableDeliveryError
from relay_app.core.routing import ChatId
from relay_app.operating.config import Settings
from relay_app.operating.setup_watch import AskAgain, Fleet, Reach, SetupWatch
from relay_app.spool.database import Database
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.setup_found import NOTHING_YET, Found, SetupFound
from relay_app.telegram.client import TelegramClient
from tests.conftest import THEIRS
from tests.e2e.helpers import wait_until
from tests.e2e.relay_process import free_port
from tests.fake_telegram import TOKEN, FakeTelegram, running_fake_telegram

DEFAULT, OTHER = "-1001234567890", "-1005555555555"


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with running_fake_telegram() as fake:
        fake.add_chat(DEFAULT)
        yield fake


def settings_for(fake: FakeTelegram, **more: str) -> Settings:
    return Settings.from_env(
        {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_CHAT_ID": DEFAULT,
            "RELAY_WEBHOOK_SECRET": "s" * 32,
            "TELEGRAM_API_URL": fake.url,
            "RELAY_SEND_TIMEOUT": "2",
            **more,
        },
        THEIRS,
    )


def no_route_to_telegram(monkeypatch: pytest.MonkeyPatch) -> str:
    """No route to Telegram: the proxy it is told to use (returned) listens nowhere."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("HTTPS_PROXY", nowhere)
    monkeypatch.setenv("HTTP_PROXY", nowhere)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    return nowhere


def gauge(watch: SetupWatch, name: str = "relay_telegram_setup_ok") -> list[float]:
    [found] = [family for family in watch.collect() if family.name == name]
    return [sample.value for sample in found.samples]


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
        },
        THEIRS,
    )
    watch = SetupWatch(settings, ask_again=AskAgain(refused=0.05))
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


def test_every_process_says_what_the_leader_found_and_a_new_term_says_it_again(
    fake: FakeTelegram, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "spool.sqlite3")
    first, second = Database(path), Database(path)  # two workers on one spool file
    settings = settings_for(fake, TELEGRAM_ALLOWED_CHAT_IDS=OTHER)
    leading = {"first"}  # which of the two leads the fleet
    # A process that does not lead looks again a minute later: the handover's cue, not that
    # look, makes the new leader ask.
    ask_again = AskAgain(refused=60, spool=60)

    def watch(database: Database, name: str) -> SetupWatch:
        fleet = Fleet(SetupFound(database), lambda: name in leading)
        return SetupWatch(settings, fleet, ask_again=ask_again)

    leader, follower = watch(first, "first"), watch(second, "second")
    try:
        assert follower.problems() == []  # nothing found yet
        with caplog.at_level(logging.ERROR):
            leader.start()
            follower.start()  # it waits: it does not lead
            assert wait_until(lambda: follower.problems() != [], timeout=5)
            [problem] = follower.problems()
            assert problem.startswith(f"TELEGRAM_ALLOWED_CHAT_IDS: chat {OTHER}: ")
            assert gauge(follower) == [0]
            # The leader asked; the other did not. The fake counts a round when the leader's
            # session closes, which may come after what it found was kept.
            assert wait_until(lambda: fake.start_up_rounds >= 1, timeout=5)
            assert fake.start_up_rounds == 1
            leader.stop()
            leading.clear()
            leading.add("second")  # a handover: the new leader asks, and says it again
            follower.came_to_lead()
            assert wait_until(lambda: caplog.text.count("TELEGRAM REFUSES") == 2, timeout=5)
            fake.add_chat(OTHER)
            follower.stop()
            follower.start()
            assert wait_until(lambda: leader.problems() == [], timeout=5)
    finally:
        leader.shutdown()
        follower.shutdown()
        first.close()
        second.close()
    assert caplog.text.count("TELEGRAM REFUSES") == 2


class LeavesAChatUnanswered(TelegramClient):
    """Telegram that answers getMe and everything else, but lets the question about one chat
    time out, as a slow or overloaded Telegram does."""

    def __init__(self, fake: FakeTelegram, chat: str) -> None:
        super().__init__(fake.url, TOKEN)
        self._chat = chat

    def get_chat(self, chat_id: ChatId, *, deadline: float) -> dict[str, Any]:
        if str(chat_id) == self._chat:
            raise RetryableDeliveryError("Telegram did not answer within 2.0 s")
        return super().get_chat(chat_id, deadline=deadline)


def test_a_question_left_unanswered_after_getme_holds_no_alert_and_is_asked_again(
    fake: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    """Telegram answered getMe in the same round: the route to it works, so neither the
    relay's alerts nor its readiness wait, and no proxy is blamed."""
    fake.add_chat(OTHER)
    failing: list[bool] = []
    watch = SetupWatch(
        settings_for(fake, TELEGRAM_ALLOWED_CHAT_IDS=OTHER),
        client=lambda: LeavesAChatUnanswered(fake, OTHER),
        ask_again=AskAgain(refused=0.1),
        reach=Reach(failing=lambda: failing.append(True)),
    )
    unanswered = f"did not answer the start-up check's question about chat {OTHER}"
    with caplog.at_level(logging.INFO):
        watch.start()
        try:
            assert wait_until(lambda: caplog.text.count(unanswered) >= 2, timeout=5)  # again
            assert failing == []
            assert "TELEGRAM UNREACHABLE" not in caplog.text
            assert watch.unreachable() is None
            assert watch.problems() == []  # nothing refused either
            assert gauge(watch, "relay_telegram_reachable") == [1]
        finally:
            watch.shutdown()


def test_the_relays_health_hears_of_an_unreachable_telegram_before_the_round_ends(
    fake: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever sees a round of questions end (its connection closed: a proxy's log, the
    tests' fake) then sees the relay holding its alerts, never about to: the end-to-end tests
    wait for that round, then for the relay to hold Telegram for up."""
    no_route_to_telegram(monkeypatch)
    failing: list[bool] = []
    told_when_closed: list[list[bool]] = []

    def client() -> TelegramClient:
        made = TelegramClient(fake.url, TOKEN)
        close = made.close

        def closed() -> None:
            told_when_closed.append(list(failing))
            close()

        made.close = closed  # type: ignore[method-assign]
        return made

    watch = SetupWatch(
        settings_for(fake),
        client=client,
        ask_again=AskAgain(unreached=60),
        reach=Reach(failing=lambda: failing.append(True)),
    )
    watch.start()
    try:
        assert wait_until(lambda: told_when_closed != [], timeout=5)
        assert told_when_closed[0] == [True]
    finally:
        watch.shutdown()


def test_an_unreachable_telegram_is_loud_at_once_and_ready_again_when_it_answers(
    fake: FakeTelegram, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    nowhere = no_route_to_telegram(monkeypatch)
    # The relay's health, as the watch tells it and reads it: one prober asks for the relay.
    failing: list[bool] = []
    heard = threading.Event()
    watch = SetupWatch(
        settings_for(fake),
        ask_again=AskAgain(unreached=0.05),
        reach=Reach(failing=lambda: failing.append(True), answers=heard.is_set),
    )
    assert watch.unreachable() is None  # not asked yet
    with caplog.at_level(logging.INFO):
        watch.start()
        try:
            assert wait_until(lambda: watch.unreachable() is not None, timeout=5)
            why = watch.unreachable()
            assert why is not None
            assert f"Telegram is unreachable at {fake.url} through the proxy {nowhere}" in why
            assert gauge(watch, "relay_telegram_reachable") == [0]
            assert gauge(watch) == []  # nothing is known of the setup yet
            assert wait_until(lambda: caplog.text.count("TELEGRAM UNREACHABLE") == 1, timeout=5)
            # The relay's prober asks from now on, not each worker: told just after the line.
            assert wait_until(lambda: failing == [True], timeout=5)
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # the proxy is fixed
            fake_asked = len(fake.received)
            assert not wait_until(lambda: len(fake.received) > fake_asked, timeout=0.5)
            assert watch.unreachable() is not None  # nobody heard Telegram yet: not asked
            heard.set()  # the relay's prober heard it
            assert wait_until(lambda: watch.unreachable() is None, timeout=5)
            assert wait_until(lambda: gauge(watch) == [1], timeout=5)
            assert gauge(watch, "relay_telegram_reachable") == [1]
        finally:
            watch.shutdown()
    said = [r for r in caplog.records if "TELEGRAM UNREACHABLE" in r.getMessage()]
    assert len(said) == 1  # said once, not at each try
    assert said[0].levelno == logging.ERROR
    assert "/readyz says not ready until then" in said[0].getMessage()
    assert "Telegram answers the start-up check now" in caplog.text


def test_a_chat_only_a_route_names_is_asked_about_and_named_as_the_routes(
    fake: FakeTelegram, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(f'[[route]]\nenvironment = "production"\nchat = "{OTHER}"\n')
    watch = SetupWatch(settings_for(fake, RELAY_ROUTES=str(routes)), ask_again=AskAgain(refused=60))
    watch.start()
    try:
        assert wait_until(lambda: watch.problems(), timeout=5)
        [problem] = watch.problems()
        assert problem.startswith(f"RELAY_ROUTES: chat {OTHER}: ")
    finally:
        watch.shutdown()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_what_was_found_reads_back_as_kept_in_either_database(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = (
        Database(str(tmp_path / "spool.sqlite3"))
        if kind == "sqlite"
        else PgDatabase(request.getfixturevalue("pg_url"))
    )
    try:
        found = SetupFound(store)
        assert found.read() == NOTHING_YET
        refused = Found(("TELEGRAM_CHAT_ID: chat -100: Telegram refused getChat (400)",), None)
        found.record(refused)
        assert found.read() == refused
        found.record(Found(None, "connection to Telegram failed: Connection refused"))
        assert found.read() == Found(None, "connection to Telegram failed: Connection refused")
        found.record(Found((), None))  # it accepts everything
        assert found.read() == Found((), None)
    finally:
        store.close()
