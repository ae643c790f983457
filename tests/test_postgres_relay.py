"""The relay with its spool in PostgreSQL (RELAY_SPOOL_URL), through its app: alerts kept in
the database, seen by every relay on it, reported by /metrics and /readyz, and a database that
cannot be reached costing durability, never an alert. The queue's own contract runs on
PostgreSQL in test_queue.py; several real relays in tests/e2e/test_fleet.py."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
import requests
import responses
from flask import Flask

from relay_app import create_app
from relay_app.core.errors import SpoolBusy, SpoolError
from relay_app.core.logs import redacted_url
from relay_app.operating.config import Settings
from relay_app.spool import Admin, State, on_store
from relay_app.spool.history import SCHEMA_VERSION
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.schema import upgrade
from relay_app.spool.store import Tx
from tests.blackhole import Blackhole
from tests.conftest import OK, SEND_URL, WEBHOOK, metric_samples, queue_alert, stop_app
from tests.e2e.helpers import wait_until
from tests.e2e.relay_process import free_port
from tests.old_spools import old_postgres
from tests.payloads import issue, issue_alert
from tests.postgres import PASSWORD, PostgresServer
from tests.prometheus import value


@pytest.fixture
def pg_settings(settings: Settings, pg_url: str) -> Settings:
    return replace(settings, spool_path=None, spool_url=pg_url)


@pytest.fixture
def pg_app(pg_settings: Settings) -> Iterator[Flask]:
    app = create_app(pg_settings)
    yield app
    stop_app(app)


def database_counts(url: str) -> dict[State, int]:
    admin = Admin(PgDatabase(url, for_service=False))
    try:
        return admin.counts()
    finally:
        admin.close()


def test_a_webhook_is_delivered_and_leaves_nothing_in_the_database(
    pg_app: Flask, pg_url: str, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, json=OK)
    reply = pg_app.test_client().post(WEBHOOK, json=issue_alert(issue(1)))
    assert (reply.status_code, reply.json) == (200, {"status": "sent"})
    assert database_counts(pg_url) == {"pending": 0, "dead": 0}


def test_an_alert_telegram_did_not_take_waits_in_the_database_for_every_relay(
    pg_app: Flask, pg_settings: Settings, pg_url: str, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
    reply = pg_app.test_client().post(WEBHOOK, json=issue_alert(issue(1)))
    assert reply.status_code == 502
    assert reply.json is not None
    assert (reply.json["status"], reply.json["alert"]) == ("queued", "#1")
    assert database_counts(pg_url) == {"pending": 1, "dead": 0}
    # Another relay on the same database reports it too.
    other = create_app(pg_settings)
    try:
        samples = metric_samples(other.test_client())
        assert value(samples, "relay_spool_alerts", state="pending") == 1
        assert value(samples, "relay_spool_usable") == 1
        assert other.test_client().get("/readyz").status_code == 200
    finally:
        stop_app(other)


def test_an_unreachable_database_is_not_ready_yet_each_alert_is_still_tried_at_once(
    settings: Settings, telegram: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"postgresql://relay:{PASSWORD}@127.0.0.1:{free_port()}/relay"
    app = create_app(replace(settings, spool_path=None, spool_url=url))
    try:
        client = app.test_client()
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json == {
            "status": "not ready",
            "reason": f"spool unusable: the database {redacted_url(url)} cannot be reached",
            "last_webhook": None,
        }
        telegram.post(SEND_URL, json=OK)
        started = time.monotonic()
        reply = client.post(WEBHOOK, json=issue_alert(issue(1)))
        assert (reply.status_code, reply.json) == (200, {"status": "sent"})
        assert time.monotonic() - started < 5  # well inside GlitchTip's 10 s
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert any(m.startswith("DURABILITY LOST: the spool ") for m in errors)
        assert PASSWORD not in caplog.text
        assert PASSWORD not in client.get("/metrics").get_data(as_text=True)
        assert value(metric_samples(client), "relay_spool_usable") == 0
    finally:
        stop_app(app)


def test_three_relays_starting_at_once_on_an_empty_database_all_come_up(pg_url: str) -> None:
    databases = [PgDatabase(pg_url) for _ in range(3)]
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def first_work(database: PgDatabase) -> None:
        barrier.wait()
        try:
            database.write(lambda tx: tx.execute("SELECT count(*) FROM jobs"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=first_work, args=(d,)) for d in databases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    try:
        assert errors == []
        versions = databases[0].read(lambda tx: tx.all("SELECT version FROM relay_schema"))
        assert [row["version"] for row in versions] == [SCHEMA_VERSION]
    finally:
        for database in databases:
            database.close()


def test_queuing_work_wakes_the_other_relays_at_once(pg_url: str) -> None:
    listening, queuing = on_store(PgDatabase(pg_url)), on_store(PgDatabase(pg_url))
    woken = threading.Event()
    try:
        queuing.queue.pending()  # the schema exists before anyone listens
        listening.queue.subscribe(woken.set)
        assert woken.wait(5)  # told once when it starts listening: anything queued before
        woken.clear()
        queue_alert(queuing.queue, issue_alert(issue(1)), now=time.time())
        assert woken.wait(5)
    finally:
        listening.queue.unsubscribe()
        listening.close()
        queuing.close()


def test_the_relay_goes_back_to_the_database_when_it_returns_without_a_restart(
    pg_app: Flask,
    pg_url: str,
    postgres_server: PostgresServer,
    telegram: responses.RequestsMock,
) -> None:
    client = pg_app.test_client()
    telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
    postgres_server.stop()
    try:
        assert client.get("/readyz").status_code == 503
        reply = client.post(WEBHOOK, json=issue_alert(issue(1)))
        assert reply.status_code == 502  # tried at once, kept in memory
    finally:
        postgres_server.start()
    assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout=10)
    reply = client.post(WEBHOOK, json=issue_alert(issue(2)))
    assert reply.status_code in (202, 502)
    assert reply.json is not None
    assert reply.json["alert"].startswith("#")  # a spool id: in the database again
    assert database_counts(pg_url)["pending"] == 1


def through_a_blackhole(server: PostgresServer, pg_url: str) -> tuple[Blackhole, PgDatabase]:
    """The test's database as the relay opens it, through a proxy that can stop passing bytes
    (a partition); the caller closes both."""
    proxy = Blackhole(server.port)
    database_name = pg_url.rsplit("/", 1)[1]
    url = f"postgresql://relay:{PASSWORD}@127.0.0.1:{proxy.port}/{database_name}"
    return proxy, PgDatabase(url)


def test_a_database_that_stops_answering_mid_transaction_costs_a_bounded_wait(
    postgres_server: PostgresServer, pg_url: str
) -> None:
    proxy, database = through_a_blackhole(postgres_server, pg_url)
    try:
        assert database.read(lambda tx: 1) == 1  # through the proxy, answered

        def partitioned(tx: Tx) -> object:
            proxy.freeze()  # the connection stays open; no answer ever comes
            return tx.execute("SELECT 1")

        started = time.monotonic()
        with pytest.raises(SpoolError, match="did not answer within") as raised:
            database.write(partitioned, wait_until=time.monotonic() + 2.0)
        assert time.monotonic() - started < 3.0  # its budget, and the server's grace
        assert not isinstance(raised.value, SpoolBusy)
        # A new unit of work meanwhile: the idle connections' check and a new connection are
        # bounded too.
        started = time.monotonic()
        with pytest.raises(SpoolError, match="cannot be reached"):
            database.write(lambda tx: None, wait_until=time.monotonic() + 5.0)
        assert time.monotonic() - started < 5.0
        proxy.thaw()
        assert wait_until(lambda: _answers(database), timeout=10)  # and back, no restart
    finally:
        proxy.close()
        database.close()


def test_a_unit_of_work_that_succeeds_ends_the_verdict_that_the_database_cannot_be_reached(
    postgres_server: PostgresServer, pg_url: str
) -> None:
    # A unit of work that could not reach the database makes the next ones fail at once for a
    # moment, rather than each waiting to learn it again. One that was under way meanwhile and
    # succeeded proves the database answers: the next alert must go to the spool, not to
    # memory (where it is lost with the process, and paced apart from the other relays).
    proxy, database = through_a_blackhole(postgres_server, pg_url)
    inside, go_on = threading.Event(), threading.Event()
    outcome: list[object] = []

    def under_way(tx: Tx) -> object:
        tx.execute("SELECT 1")
        inside.set()
        assert go_on.wait(10)
        return tx.one("SELECT 2 AS two")

    def run_under_way() -> None:
        outcome.append(database.write(under_way, wait_until=time.monotonic() + 15))

    try:
        assert database.read(lambda tx: 1) == 1
        first = threading.Thread(target=run_under_way)
        first.start()
        assert inside.wait(10)
        proxy.freeze()  # another unit of work now finds no answer
        with pytest.raises(SpoolError):
            database.write(lambda tx: None, wait_until=time.monotonic() + 2.0)
        proxy.thaw()
        go_on.set()
        first.join(10)
        assert outcome == [{"two": 2}]  # the unit under way succeeded
        assert database.write(lambda tx: 3, wait_until=time.monotonic() + 2.0) == 3
    finally:
        go_on.set()
        proxy.close()
        database.close()


def test_a_unit_begun_with_its_budget_nearly_spent_outlives_a_pause_between_its_statements(
    pg_url: str,
) -> None:
    # A loaded host (or the schema made first) can leave a unit of work milliseconds of its
    # budget; the server ending its session at the first pause between two statements dropped
    # a healthy connection and reported DURABILITY LOST (CI, test_leadership, on a busy host).
    database = PgDatabase(pg_url)
    try:
        database.read(lambda tx: None, wait_until=time.monotonic() + 30)  # the schema made

        def paused(tx: Tx) -> object:
            tx.execute("SELECT 1")
            # The pause of a loaded host, not a wait for something to happen: longer than the
            # budget left, shorter than the watchdog's grace past it.
            time.sleep(0.15)
            return tx.one("SELECT 2 AS two")

        # A tenth of a second: little enough to show the bug, enough for a loaded host to begin.
        assert database.write(paused, wait_until=time.monotonic() + 0.1) == {"two": 2}
        assert database.problem() is None
    finally:
        database.close()


def _answers(database: PgDatabase) -> bool:
    try:
        return database.read(lambda tx: True, wait_until=time.monotonic() + 2)
    except SpoolError:
        return False


def test_connections_a_restart_broke_are_replaced_without_failing_the_work(
    postgres_server: PostgresServer, pg_url: str
) -> None:
    database = PgDatabase(pg_url)
    try:
        assert database.read(lambda tx: True)  # a connection waits in the pool
        postgres_server.restart()
        assert database.write(lambda tx: True, wait_until=time.monotonic() + 5)
        assert database.problem() is None
    finally:
        database.close()


def test_both_databases_keep_the_same_tables_under_the_same_column_names(
    pg_url: str, tmp_path: Path
) -> None:
    # One schema history: a fresh spool of either kind, and a PostgreSQL database from before
    # it (schema 3), name every table and column alike.
    fresh_file = sqlite3.connect(str(tmp_path / "spool.sqlite3"), isolation_level=None)
    upgrade(fresh_file, None)
    in_sqlite = {
        table: sorted(row[1] for row in fresh_file.execute(f"PRAGMA table_info({table})"))
        for (table,) in fresh_file.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"
        )
    }
    fresh_file.close()
    with psycopg.connect(pg_url, autocommit=True) as old:
        old_postgres(old, 3)
    database = PgDatabase(pg_url, caller_skew=0.0)
    try:
        rows = database.read(
            lambda tx: tx.all(
                "SELECT table_name, column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema()"
            )
        )
        versions = database.read(lambda tx: tx.all("SELECT version FROM relay_schema"))
    finally:
        database.close()
    in_postgres: dict[str, list[str]] = {}
    for row in rows:
        in_postgres.setdefault(row["table_name"], []).append(row["column_name"])
    assert {table: sorted(columns) for table, columns in in_postgres.items()} == in_sqlite
    assert [row["version"] for row in versions] == [SCHEMA_VERSION]


def _as_made(url: str) -> tuple[object, ...]:
    """What a test could see of a database: its schema `public` (owner, rights, comment) and
    everything in it."""
    with psycopg.connect(url) as connection:
        schema = connection.execute(
            "SELECT nspowner::regrole::text, nspacl::text, obj_description(oid, 'pg_namespace')"
            " FROM pg_namespace WHERE nspname = 'public'"
        ).fetchone()
        objects = connection.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public'"
        ).fetchone()
        types = connection.execute(
            "SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
            " WHERE n.nspname = 'public'"
        ).fetchone()
        functions = connection.execute(
            "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'public'"
        ).fetchone()
    return schema, objects, types, functions


def test_a_database_given_back_is_lent_again_as_a_new_one_is(
    postgres_server: PostgresServer,
) -> None:
    """The tests' databases are emptied between tests rather than made anew (tests/postgres.py):
    what one test left, a relay's whole spool and a session still open, is gone for the next."""
    new = postgres_server.new_database()
    url = postgres_server.lend_database()
    spool = PgDatabase(url, caller_skew=0.0)
    left_open = psycopg.connect(url)
    try:
        spool.write(lambda tx: tx.execute("SELECT 1"))  # the relay's whole schema, made
        assert _as_made(url) != _as_made(new)
        postgres_server.give_back(url)
        assert postgres_server.lend_database() == url  # the same database, lent again
        assert _as_made(url) == _as_made(new)
        with pytest.raises(psycopg.OperationalError):
            left_open.execute("SELECT 1")  # its session was ended
    finally:
        spool.close()
        left_open.close()
        postgres_server.give_back(url)
        postgres_server.drop_database(new)
