from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import responses
from flask import Flask
from flask.testing import FlaskClient

from relay_app import Relay, assemble, create_app, relay_of
from relay_app.capabilities import REGISTRY
from relay_app.core.alerts import ALERT_KEY, alert_as_json
from relay_app.core.errors import SpoolError
from relay_app.core.logs import configure_logging
from relay_app.core.outcomes import Dead
from relay_app.core.routing import Destination
from relay_app.delivery.dispatcher import POLL_INTERVAL, Dispatcher
from relay_app.glitchtip.settings import GLITCHTIP_SETTINGS, GlitchTipConfig
from relay_app.message.formatting import Message
from relay_app.message.lines import to_json as lines_to_json
from relay_app.operating.config import Settings
from relay_app.operating.settings_of import SettingsOf, sources_named
from relay_app.sentry.settings import SENTRY_SETTINGS, SentryConfig
from relay_app.spool import Job, Precedence, Queue, on_store
from relay_app.spool.database import Database
from relay_app.spool.job_rows import bury
from relay_app.spool.model import NewJob
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.store import Store
from relay_app.telegram.courier import Telegram
from relay_app.words import ENGLISH
from tests import postgres
from tests.fake_glitchtip import FakeGlitchTip, running_fake_glitchtip
from tests.fake_sentry import FakeSentry, running_fake_sentry
from tests.payloads import message_for, read
from tests.postgres import PostgresServer
from tests.prometheus import Samples, parse

# Every source the relay reads alerts of (core/sources.py), as the registry declares them.
SOURCES = REGISTRY.sources
# What the capabilities read of the environment themselves, as the relay reads it.
THEIRS = REGISTRY.settings
# What a route's `source` may name, as the relay's parse of a routes file is told.
ROUTE_SOURCES = sources_named(THEIRS)


def sentry_on(config: SentryConfig | None) -> tuple[tuple[SettingsOf[Any], object], ...]:
    """Settings' `theirs` with Sentry's (None: Sentry off), for `replace(settings, ...)`."""
    return ((SENTRY_SETTINGS, config),) if config is not None else ()


def glitchtip_on(config: GlitchTipConfig | None) -> tuple[tuple[SettingsOf[Any], object], ...]:
    """Settings' `theirs` with GlitchTip's variables (None: none of them set), for
    `replace(settings, ...)`: with both sources', `theirs=(*glitchtip_on(..), *sentry_on(..))`."""
    return ((GLITCHTIP_SETTINGS, config),) if config is not None else ()


TOKEN = "123456789:unit-test-token-abcdefghijklmnop"
SECRET = "unit-test-webhook-secret-0123456789"
API_URL = "https://telegram.test"
SEND_URL = f"{API_URL}/bot{TOKEN}/sendMessage"
GET_ME_URL = f"{API_URL}/bot{TOKEN}/getMe"
WEBHOOK = f"/webhook/{SECRET}"
# The commands the relay offers Telegram for a group, in the registry's order (/start, a private
# chat's, is not among them).
OFFERED_COMMANDS = ["issues", "oncall", "cover", "silences", "chart", "status"]
OK = {"ok": True, "result": {"message_id": 1}}  # Telegram's answer to an accepted message
ME = {"ok": True, "result": {"id": 123456789, "is_bot": True, "username": "relay_bot"}}
CHAT_ID = -1001234567890
DESTINATION = Destination(CHAT_ID)
END_TO_END = Path(__file__).resolve().parent / "e2e"
pytest_plugins = ["tests.slowest_first", "tests.compiled_once"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers: what runs real processes (tests/e2e: gunicorn, PostgreSQL restarts, several
    hosts, the container recipe) is marked `e2e`; the rest runs in one process, in seconds
    (`pytest -m "not e2e"`)."""
    for item in items:
        if END_TO_END in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def refusal(status: int, description: str, **parameters: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        reply["parameters"] = parameters
    return reply


class FakeTime:
    """A wall clock a test moves by hand."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="session", autouse=True)
def _records_as_the_relay_makes_them() -> None:
    """Every log record made as in the service, whichever test runs first: redacted, and its
    values' control characters escaped (logs.py)."""
    configure_logging()


@pytest.fixture
def spool_path(tmp_path: Path) -> str:
    return str(tmp_path / "spool.sqlite3")


def required_tool(program: str, debian_package: str) -> str:
    """The path of a program some tests need. Missing, those tests are skipped on a developer's
    machine, and fail in CI (RELAY_CI=1), which installs every one (.ci/run)."""
    found = shutil.which(program)
    if found is None:
        if os.environ.get("RELAY_CI") == "1":
            pytest.fail(f"{program} is not installed; .ci/run installs Debian's {debian_package}")
        pytest.skip(f"{program} is not installed (apt-get install {debian_package}); CI runs this")
    return found


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (tests/postgres.py)."""
    if not postgres.available():
        required_tool("pg_ctl", "postgresql")
    server = PostgresServer()
    yield server
    server.close()


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """An empty database on it, as fresh as a new one, emptied after the test for the next."""
    url = postgres_server.lend_database()
    yield url
    postgres_server.give_back(url)


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two relays' connections to one spool: a SQLite file, or a PostgreSQL database."""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        pair: tuple[Store, Store] = (
            PgDatabase(url, caller_skew=0.0),
            PgDatabase(url, caller_skew=0.0),
        )
    else:
        path = str(tmp_path / "spool.sqlite3")
        pair = (Database(path), Database(path))
    yield pair
    for store in pair:
        store.close()


@pytest.fixture
def fake_glitchtip() -> Iterator[FakeGlitchTip]:
    """GlitchTip's API on 127.0.0.1 (tests/fake_glitchtip.py)."""
    with running_fake_glitchtip() as fake:
        yield fake


def sent_bodies(telegram: responses.RequestsMock) -> list[dict[str, Any]]:
    """What went to sendMessage (getMe, the relay's question after a failure, is not here)."""
    return [
        json.loads(call.request.body or b"")
        for call in telegram.calls
        if call.request.url == SEND_URL
    ]


def sent_texts(telegram: responses.RequestsMock) -> list[str]:
    return [body["text"] for body in sent_bodies(telegram)]


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
def built(settings: Settings, fake_time: FakeTime) -> Iterator[Callable[..., Relay]]:
    """Relays `assemble()`d on the test's settings (with `overrides`), on `fake_time`, against
    a stand-in Telegram (tests/in_process.py); stopped at the end."""
    relays: list[Relay] = []

    def build(telegram: Telegram, **overrides: Any) -> Relay:
        relay = assemble(replace(settings, **overrides), clock=fake_time, telegram=telegram)
        relays.append(relay)
        return relay

    yield build
    for relay in relays:
        relay.dispatcher.shutdown()
        relay.running.stop()  # the capabilities' threads: links' look-ups, presses


@pytest.fixture
def glitchtip() -> Iterator[responses.RequestsMock]:
    """GlitchTip's API over HTTP: a test registers the answers it needs."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def telegram() -> Iterator[responses.RequestsMock]:
    """Telegram's HTTP layer: a test registers the replies it needs on SEND_URL. getMe, the
    question the relay asks after a failure, answers unless a test registers otherwise."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.post(GET_ME_URL, json=ME)
        yield mock


@pytest.fixture
def app(settings: Settings, fake_time: FakeTime) -> Iterator[Flask]:
    app = create_app(settings, clock=fake_time)
    yield app
    relay = relay_of(app)
    assert relay is not None
    relay.dispatcher.shutdown()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def relay(app: Flask) -> Relay:
    found = relay_of(app)
    assert found is not None
    return found


def run_background(dispatcher: Dispatcher, clock: FakeTime, *, rounds: int = 5000) -> None:
    """What each worker's dispatcher thread does, on fake time: claim what is due and run its
    jobs, then move the clock to when something is next due, until every queue is empty (and
    Telegram has been asked, once, whether it is back, as the thread would)."""
    for _ in range(rounds):
        soonest = _pass(dispatcher)
        if _pending(dispatcher) == 0:
            health = dispatcher.health.current()
            if not health.sending:
                clock.now = max(clock.now, health.next_probe_at)
                _pass(dispatcher)
            return
        clock.now = _next_look(soonest, clock.now)
    raise AssertionError(f"alerts still waiting after {rounds} rounds")


def run_until(dispatcher: Dispatcher, clock: FakeTime, until: float, *, rounds: int = 5000) -> None:
    """The dispatcher's thread up to `until` on fake time: what falls due meanwhile is done
    when it falls due (webhooks arriving during a storm, between them)."""
    for _ in range(rounds):
        soonest = _pass(dispatcher)
        if clock.now >= until:
            return
        clock.now = min(_next_look(soonest, clock.now), until)
    raise AssertionError(f"{until - clock.now} s still to run after {rounds} rounds")


def _pass(dispatcher: Dispatcher) -> float | None:
    """One look of the dispatcher's thread, its jobs run to their end."""
    soonest = dispatcher.pass_once()
    assert dispatcher.wait_idle(timeout=10)
    return soonest


def _next_look(soonest: float | None, now: float) -> float:
    """When the thread looks again: when something is due; at once after a claim (it may have
    more to take); a poll later when nothing is planned."""
    if soonest is None:
        return now + POLL_INTERVAL
    return max(soonest, now)


def _pending(dispatcher: Dispatcher) -> int:
    pending = 0
    for queue in dispatcher.queues:
        with contextlib.suppress(SpoolError):  # an unusable spool holds nothing it can send
            pending += queue.pending()
    return pending


def put_in_spool(
    spool: str,
    payload: dict[str, Any],
    destination: Destination = DESTINATION,
    *,
    received_at: float,
    dead_because: str | None = None,
) -> int:
    """An alert in the spool as a relay leaves it: waiting (Telegram was failing), or a dead
    letter refused with `dead_because` as its last error. `spool` is the SQLite file's path or
    the PostgreSQL URL. Returns its id."""
    store = store_at(spool)
    try:
        queue = on_store(store).queue
        job = queue_alert(queue, payload, destination, now=received_at)
        if dead_because is not None:
            dead = Dead("refused", "Telegram refused it permanently")
            store.write(lambda tx: bury(tx, job, dead, error=dead_because), now=received_at)
        return job.id
    finally:
        store.close()


def store_at(where: str) -> Store:
    """The spool file (a path) or database (a URL) at `where`, with the caller's clock as its
    own, so that what a test puts there happens when the test says."""
    if where.startswith(("postgresql://", "postgres://")):
        return PgDatabase(where, caller_skew=0.0)
    return Database(where)


def stop_app(app: Flask) -> None:
    """A test's app made with create_app, its dispatcher and spool stopped deliberately."""
    relay = relay_of(app)
    assert relay is not None
    relay.dispatcher.shutdown()
    if relay.spool is not None:
        relay.spool.close()


def metric_samples(client: FlaskClient) -> Samples:
    """GET /metrics, parsed; look samples up with tests.prometheus.value."""
    reply = client.get("/metrics")
    assert reply.status_code == 200
    assert reply.content_type.startswith("text/plain; version=0.0.4")
    return parse(reply.get_data(as_text=True))


def queue_alert(
    queue: Queue,
    payload: dict[str, Any],
    destination: Destination = DESTINATION,
    *,
    now: float,
    mentions: tuple[str, ...] = (),
) -> Job:
    """A webhook's alert queued as the webhook queues it: its alert as its page read it, and
    whom its route calls; its arrival noted with it."""
    about: dict[str, Any] = {ALERT_KEY: alert_as_json(read(payload))}
    if mentions:
        about["mentions"] = list(mentions)
    arrival = message_for(payload, ENGLISH, sources=SOURCES).text
    return queue.add(
        NewJob("alert", about, destination, Precedence.ALERT), now=now, arrival=arrival
    )


def rendered(message: Message) -> Mapping[str, Any]:
    """An alert's data that holds the very message given, as a spool from before jobs held
    data keeps it: for the tests that need a message of a size they choose."""
    entry, heading = message.short_entry, message.heading
    return {
        "rendered": {
            "html": message.html,
            "text": message.text,
            "fallback": message.fallback,
            "entry_html": entry.html if entry else None,
            "entry_text": entry.text if entry else None,
            "heading_html": heading.html if heading else None,
            "heading_text": heading.text if heading else None,
            "subjects": None,
            "lines": lines_to_json(message.lines),
        }
    }


def hold_the_lock(spool_path: str, seconds: float) -> threading.Thread:
    """Another process (a backup, `sqlite3` by hand) holding the spool's write lock for
    `seconds`, from before this returns; join the thread to know it let go."""
    held = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(spool_path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        other.execute("COMMIT")
        other.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(5)
    return thread


@pytest.fixture
def fake_sentry() -> Iterator[FakeSentry]:
    """Sentry on 127.0.0.1: its API, and its webhooks sent signed (tests/fake_sentry.py)."""
    with running_fake_sentry() as fake:
        yield fake
