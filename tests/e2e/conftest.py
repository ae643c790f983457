from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.relay_process import CHAT_ID, SECRET, RelayProcess, relay_env, stop_all
from tests.fake_telegram import TOKEN, FakeTelegram, running_fake_telegram

StartRelay = Callable[..., RelayProcess]


@pytest.fixture
def fake_telegram() -> Iterator[FakeTelegram]:
    """The fake Telegram, with the bot in the default chat (a forum, whose topic 77 the relays
    post to), as the quick start leaves it: each relay's start-up check finds it works."""
    with running_fake_telegram() as fake:
        fake.add_chat(CHAT_ID)
        yield fake


# A failed test's report ends with this many lines of each relay's log it started: a CI log that
# shows the assertion alone (202 == 200) then also shows why (the relay's line for that webhook).
LOG_LINES_REPORTED = 30


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    for relay in getattr(item, "relays_started", []):
        tail = relay.logs().splitlines()[-LOG_LINES_REPORTED:]
        report.sections.append((f"the end of {relay.log_path.name}", "\n".join(tail)))


@pytest.fixture
def start_relay(
    fake_telegram: FakeTelegram, tmp_path: Path, spool_path: str, request: pytest.FixtureRequest
) -> Iterator[StartRelay]:
    """Starts gunicorn against the fake, with a spool in the test's directory (shared by the
    relays a test starts, as after a restart); on teardown stops it and checks that its whole
    log, access log included, never shows the bot token or the webhook secret."""
    started: list[RelayProcess] = []
    request.node.relays_started = started  # for the report, should the test fail

    def start(
        prefix: list[str] | None = None, app: str = "wsgi:app", **overrides: str
    ) -> RelayProcess:
        env = relay_env(fake_telegram, **{"RELAY_SPOOL_PATH": spool_path, **overrides})
        log = tmp_path / f"relay-{len(started)}.log"
        relay = RelayProcess(env, log, app=app, prefix=prefix, telegram=fake_telegram)
        started.append(relay)
        return relay.wait_ready()

    yield start
    stop_all(started)
    for relay in started:
        logs = relay.logs()
        assert TOKEN not in logs
        assert SECRET not in logs
