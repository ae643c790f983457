"""The relay with its spool in PostgreSQL and this host's own file beside it
(RELAY_LOCAL_SPOOL_PATH), through its app: an alert the database cannot take in time (its
server paused, as in a failover) waits in the file under a name of its own, is sent from
there, and moves into the database when it answers again, each once. Memory is the last
resort only when the disk refuses too. The move's own contract: test_moving.py; under the
real gunicorn, killed and started again: tests/e2e/test_database_stall.py."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
import requests
import responses
from flask import Flask

from relay_app import create_app, relay_of
from relay_app.operating.config import Settings
from relay_app.spool import Admin, State
from relay_app.spool.database import Database
from relay_app.spool.postgres import PgDatabase
from tests.conftest import OK, SEND_URL, WEBHOOK, metric_samples, stop_app
from tests.e2e.helpers import wait_until
from tests.payloads import issue, issue_alert
from tests.postgres import PostgresServer
from tests.prometheus import value

HOST = socket.gethostname()


def start(app: Flask) -> None:
    """The dispatcher, as gunicorn's post_worker_init starts it (without the start-up check
    of the chats, which these tests' Telegram does not answer)."""
    relay = relay_of(app)
    assert relay is not None
    relay.dispatcher.start()


@pytest.fixture
def local_path(tmp_path: Path) -> str:
    return str(tmp_path / "relay-local-spool.sqlite3")


@pytest.fixture
def local_settings(settings: Settings, pg_url: str, local_path: str) -> Settings:
    # Retries and the dispatcher's rounds a tenth of production's; the database's own budget
    # (a first answer within 1 s) is the database module's, not scaled.
    return replace(
        settings,
        spool_path=None,
        spool_url=pg_url,
        local_spool_path=local_path,
        retry_wait=1.0,
        time_scale=0.1,
    )


@pytest.fixture
def app(local_settings: Settings) -> Iterator[Flask]:
    app = create_app(local_settings)
    start(app)
    yield app
    stop_app(app)


def counts(admin: Admin) -> dict[State, int]:
    try:
        return admin.counts()
    finally:
        admin.close()


def in_database(url: str) -> dict[State, int]:
    return counts(Admin(PgDatabase(url, for_service=False)))


def in_file(path: str) -> dict[State, int]:
    return counts(Admin(Database(path, for_service=False)))


def stalled(number: int) -> dict[str, Any]:
    return issue_alert(issue(number, title=f"Stalled {number}"))


def sent_titles(telegram: responses.RequestsMock) -> list[str]:
    """The titles in every message Telegram accepted, in order."""
    titles: list[str] = []
    for call in telegram.calls:
        accepted = isinstance(call.response, requests.Response) and call.response.ok
        if call.request.url == SEND_URL and accepted:
            titles += re.findall(r"Stalled \d+", json.loads(call.request.body or "{}")["text"])
    return titles


def test_alerts_the_stalled_database_could_not_take_wait_in_the_file_then_move_and_go_once(
    app: Flask,
    pg_url: str,
    local_path: str,
    postgres_server: PostgresServer,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = app.test_client()
    telegram.post(SEND_URL, status=500, json={"ok": False, "description": "Internal Server Error"})
    with postgres_server.paused():
        replies = [client.post(WEBHOOK, json=stalled(n)) for n in (1, 2, 3)]
        # The first attempt fails; the next two wait while Telegram is known to fail.
        assert [reply.status_code for reply in replies] == [502, 202, 202]
        labels = [reply.json["alert"] for reply in replies if reply.json is not None]
        # Each its own name, which says where it waits.
        assert labels == [f"local-{n}@{HOST}" for n in (1, 2, 3)]
        assert in_file(local_path)["pending"] == 3
        ready = client.get("/readyz")
        assert ready.status_code == 200  # it takes alerts, and keeps them on this host's disk
        assert ready.json is not None
        assert ready.json["spool"].startswith("unusable: the database ")
        waiting = f"3 alert(s) wait in {local_path} until the spool takes them"
        assert ready.json["local_spool"] == waiting
        assert value(metric_samples(client), "relay_local_spool_alerts") == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum(f"waits in this host's file {local_path}" in m for m in warnings) == 3
    assert "kept in memory only" not in caplog.text
    assert "SPOOL UNREACHABLE: the spool " in caplog.text
    assert "DURABILITY LOST" not in caplog.text

    # The database answers again: what waits moves into it, where every relay can send it.
    assert wait_until(lambda: in_file(local_path)["pending"] == 0, timeout=15)
    assert in_database(pg_url)["pending"] == 3
    assert "are in the spool now (3 added" in caplog.text
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json) == (200, {"status": "ready", "last_webhook": ANY})

    telegram.replace(responses.POST, SEND_URL, json=OK)
    assert wait_until(lambda: in_database(pg_url)["pending"] == 0, timeout=15)
    assert sorted(sent_titles(telegram)) == ["Stalled 1", "Stalled 2", "Stalled 3"]  # each once


def test_while_the_database_is_away_the_file_s_alerts_are_sent_from_it(
    app: Flask,
    pg_url: str,
    local_path: str,
    postgres_server: PostgresServer,
    telegram: responses.RequestsMock,
) -> None:
    client = app.test_client()
    telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
    with postgres_server.paused():
        reply = client.post(WEBHOOK, json=stalled(1))
        assert reply.status_code == 502
        telegram.replace(responses.POST, SEND_URL, json=OK)
        # Sent (its retry), and then the file holds nothing: waited for in the order they happen.
        assert wait_until(lambda: sent_titles(telegram) == ["Stalled 1"], timeout=15)
        assert wait_until(lambda: in_file(local_path)["pending"] == 0, timeout=15)
        # A webhook now: the database still does not answer, Telegram does; the file sends it
        # at once, or at the chat's next turn.
        reply = client.post(WEBHOOK, json=stalled(2))
        assert reply.status_code in (200, 202)
        assert wait_until(lambda: sent_titles(telegram) == ["Stalled 1", "Stalled 2"], timeout=15)
    assert wait_until(lambda: "spool" not in (client.get("/readyz").json or {}), timeout=10)
    assert in_database(pg_url) == {"pending": 0, "dead": 0}  # nothing to move: all was sent
    assert sent_titles(telegram) == ["Stalled 1", "Stalled 2"]


def test_when_the_disk_refuses_too_memory_is_the_last_resort_and_says_so(
    local_settings: Settings,
    tmp_path: Path,
    postgres_server: PostgresServer,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A path no one can create a file at, root included: its directory is a file.
    not_a_directory = tmp_path / "not-a-directory"
    not_a_directory.write_text("")
    unusable = str(not_a_directory / "relay-local-spool.sqlite3")
    app = create_app(replace(local_settings, local_spool_path=unusable))
    start(app)
    try:
        telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
        with postgres_server.paused():
            reply = app.test_client().post(WEBHOOK, json=stalled(1))
        assert reply.status_code == 502
        assert reply.json is not None
        assert reply.json["alert"] == f"mem-{os.getpid()}-1"
        assert "kept in memory only, and lost if this process stops" in caplog.text
    finally:
        stop_app(app)
