"""What the relay keeps about the messages it may change later (cards/sent.py), in both spools:
the SQLite file and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from relay_app.cards.card import IssueButton, SentMessage
from relay_app.cards.outgoing import OldRecords
from relay_app.cards.sent import Outage, SentStore
from relay_app.spool.database import Database
from relay_app.spool.postgres import PgDatabase
from tests.old_spools import old_postgres, old_sqlite

NOW = 1_800_000_000.0
MESSAGE = SentMessage(
    chat="-1001234567890",
    message_id=41,
    html="<b>🔴 GlitchTip Alert</b>",
    sent_at=NOW,
    buttons=(
        IssueButton("key-one", "4", "https://gt.example.org", "BACKEND-4A"),
        IssueButton("key-two", "5", "https://gt.example.org", "BACKEND-5A"),
    ),
)
OUTAGE = Outage(
    "-1001234567890/77",
    "https://gt/acme/uptime-monitors/42",
    "-1001234567890",
    41,
    "My API",
    NOW - 30,
)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SentStore]:
    if request.param == "sqlite":
        database = Database(str(tmp_path / "spool.sqlite3"))
        yield SentStore(database)
        database.close()
    else:
        shared = PgDatabase(request.getfixturevalue("pg_url"), caller_skew=0.0)
        yield SentStore(shared)
        shared.close()


def test_a_button_leads_to_its_message_and_nothing_else_does(store: SentStore) -> None:
    store.keep(MESSAGE, [])
    found = store.pressed("key-two")
    assert found is not None
    message, button = found
    assert (message.chat, message.message_id, message.html) == (MESSAGE.chat, 41, MESSAGE.html)
    assert [b.key for b in message.buttons] == ["key-one", "key-two"]  # in their order
    assert (button.issue_id, button.origin, button.label) == (
        "5",
        "https://gt.example.org",
        "BACKEND-5A",
    )
    assert store.pressed("key-three") is None


def test_a_press_is_recorded_on_its_own_button(store: SentStore) -> None:
    store.keep(MESSAGE, [])
    claim = store.claim("key-one", None, "resolved", by="@ada", at=NOW + 60)
    assert claim is not None
    updated = store.message(MESSAGE.chat, MESSAGE.message_id)
    assert updated is not None
    first, second = updated.buttons
    assert (first.status, first.acted_by, first.acted_at) == ("resolved", "@ada", NOW + 60)
    assert second.status is None
    assert store.claim("no-such-key", None, "ignored", by="@ada", at=NOW) is None


def test_of_changes_claimed_on_the_same_state_one_wins_and_a_refused_one_is_taken_back(
    store: SentStore,
) -> None:
    store.keep(MESSAGE, [])
    resolve = store.claim("key-one", None, "resolved", by="@ada", at=NOW + 60)
    ignore = store.claim("key-one", None, "ignored", by="@bob", at=NOW + 60)  # pressed on the same
    assert resolve is not None
    assert ignore is None
    store.unclaim(resolve)  # GlitchTip refused it: the button shows what it did before
    found = store.pressed("key-one")
    assert found is not None
    assert (found[1].status, found[1].acted_by, found[1].acted_at) == (None, None, None)
    # Pressed again, and reopened; an old claim taken back now changes nothing.
    again = store.claim("key-one", "unresolved", "resolved", by="@bob", at=NOW + 70)
    assert again is not None
    assert store.claim("key-one", "resolved", "unresolved", by="@ada", at=NOW + 80) is not None
    store.unclaim(again)
    found = store.pressed("key-one")
    assert found is not None
    assert (found[1].status, found[1].acted_by) == ("unresolved", "@ada")


def test_a_recovery_ends_its_outage_and_adds_its_note_to_the_message(store: SentStore) -> None:
    store.keep(MESSAGE, [OUTAGE])
    found = store.outage(OUTAGE.lane, OUTAGE.link)
    assert found == OUTAGE
    assert store.outage("another/lane", OUTAGE.link) is None
    updated = store.recovered(OUTAGE, "✅ My API back up after 30 s")
    assert updated is not None
    assert updated.notes == ("✅ My API back up after 30 s",)
    assert store.outage(OUTAGE.lane, OUTAGE.link) is None  # a second recovery is not threaded
    again = store.pressed("key-one")
    assert again is not None
    assert again[0].notes == ("✅ My API back up after 30 s",)


def test_records_older_than_the_cutoff_are_forgotten(store: SentStore) -> None:
    store.keep(MESSAGE, [OUTAGE])
    newer = SentMessage(
        "-100999",
        7,
        "newer",
        NOW + 3600,
        buttons=(IssueButton("key-new", "9", "https://gt", "X-9"),),
    )
    store.keep(newer, [])
    assert store.prune(before=NOW + 1) == 1
    assert store.pressed("key-one") is None
    assert store.outage(OUTAGE.lane, OUTAGE.link) is None
    assert store.pressed("key-new") is not None


def test_old_records_are_kept_a_week_at_least_and_forgotten_once_a_minute(
    store: SentStore,
) -> None:
    day = 86400.0
    now = NOW + 8 * day
    store.keep(replace(MESSAGE, sent_at=NOW + day), [])  # a week old at `now`, no more
    records = OldRecords(store, keep_for=60.0, clock=lambda: now)  # below the week: a week
    records.tidy()
    assert store.pressed("key-one") is not None
    now += 2 * day
    records.tidy()  # within a minute of the last: nothing asked of the spool
    assert store.pressed("key-one") is not None
    OldRecords(store, keep_for=60.0, clock=lambda: now).tidy()
    assert store.pressed("key-one") is None


def test_an_update_is_handled_once_and_forgotten_with_the_rest(store: SentStore) -> None:
    assert store.first_time(["update:7", "press:a"], at=NOW)
    assert not store.first_time(["update:7", "press:a"], at=NOW + 1)  # delivered again
    assert not store.first_time(["update:8", "press:a"], at=NOW + 1)  # the press, replayed
    assert not store.first_time(["update:7", "press:b"], at=NOW + 1)
    assert store.first_time(["update:9", "press:c"], at=NOW + 1)
    store.prune(before=NOW + 0.5)  # past Telegram's 24 hours, a week in fact
    assert store.first_time(["update:7", "press:a"], at=NOW + 2)
    assert not store.first_time(["update:9"], at=NOW + 2)


def test_a_spool_from_before_handled_updates_is_upgraded_with_its_buttons(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    button = ("key-one", "-1001234567890", 41, 0, "4", "https://gt.example.org", "BACKEND-4A")
    message = ("-1001234567890", 41, "<b>alert</b>", NOW)
    insert_message = "INSERT INTO sent_messages (chat, message_id, html, sent_at) VALUES "
    insert_button = (
        "INSERT INTO issue_buttons (key, chat, message_id, position, issue_id, origin, label)"
        " VALUES "
    )
    path = str(tmp_path / "spool.sqlite3")
    with sqlite3.connect(path) as db:  # as the relay before this one left it: schema 5
        old_sqlite(db, 5)
        db.execute(insert_message + "(?, ?, ?, ?)", message)
        db.execute(insert_button + "(?, ?, ?, ?, ?, ?, ?)", button)
    db.close()
    url = request.getfixturevalue("pg_url")
    with psycopg.connect(url, autocommit=True) as pg:  # ... and the PostgreSQL one: schema 2
        old_postgres(pg, 2)
        pg.execute(insert_message + "(%s, %s, %s, %s)", message)
        pg.execute(insert_button + "(%s, %s, %s, %s, %s, %s, %s)", button)
    database, shared = Database(path), PgDatabase(url, caller_skew=0.0)
    try:
        for upgraded in (SentStore(database), SentStore(shared)):
            found = upgraded.pressed("key-one")
            assert found is not None
            assert found[1].label == "BACKEND-4A"
            assert upgraded.first_time(["update:1"], at=NOW)
            assert not upgraded.first_time(["update:1"], at=NOW)
    finally:
        database.close()
        shared.close()
