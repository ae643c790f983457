"""What the relay keeps about the messages it may change later (spool/sent.py) and who reads
Telegram's updates (spool/poller.py), in both spools: the SQLite file and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay_app.spool import Database, Holder, this_process
from relay_app.spool.poller import PollerLease, SqlitePollerLease
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.postgres.poller import PgPollerLease
from relay_app.spool.postgres.sent import PgSentStore
from relay_app.spool.sent import IssueButton, Outage, SentMessage, SentStore, SqliteSentStore

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
def backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[SentStore, PollerLease]]:
    if request.param == "sqlite":
        database = Database(str(tmp_path / "spool.sqlite3"))
        yield SqliteSentStore(database), SqlitePollerLease(database)
        database.close()
    else:
        shared = PgDatabase(request.getfixturevalue("pg_url"), clock_source="caller")
        yield PgSentStore(shared), PgPollerLease(shared)
        shared.close()


@pytest.fixture
def store(backend: tuple[SentStore, PollerLease]) -> SentStore:
    return backend[0]


@pytest.fixture
def lease(backend: tuple[SentStore, PollerLease]) -> PollerLease:
    return backend[1]


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
    updated = store.acted("key-one", "resolved", by="@ada", at=NOW + 60)
    assert updated is not None
    first, second = updated.buttons
    assert (first.status, first.acted_by, first.acted_at) == ("resolved", "@ada", NOW + 60)
    assert second.status is None
    assert store.acted("no-such-key", "ignored", by="@ada", at=NOW) is None


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


@pytest.fixture
def other_process() -> Iterator[tuple[Holder, subprocess.Popen[bytes]]]:
    """A live process on this host other than this one, as a lease names it."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    me = this_process()
    yield Holder(me.host, me.boot, child.pid, ""), child
    child.kill()
    child.wait()


def test_one_process_polls_and_the_offset_survives_it(
    lease: PollerLease, other_process: tuple[Holder, subprocess.Popen[bytes]]
) -> None:
    me, other = this_process(), other_process[0]
    assert lease.take(me, now=NOW, hold_for=20) == 0
    assert lease.take(other, now=NOW + 1, hold_for=20) is None  # a live holder keeps it
    lease.confirm(me, 17)
    lease.confirm(other, 99)  # not the holder: changes nothing
    assert lease.take(me, now=NOW + 2, hold_for=20) == 17  # renewed
    lease.release(me)
    assert lease.take(other, now=NOW + 3, hold_for=20) == 17  # the next one reads on


def test_a_poller_that_is_gone_is_replaced_at_once(
    lease: PollerLease, other_process: tuple[Holder, subprocess.Popen[bytes]]
) -> None:
    gone, child = other_process
    assert lease.take(gone, now=NOW, hold_for=3600) == 0
    child.kill()
    child.wait()
    assert lease.take(this_process(), now=NOW + 1, hold_for=20) == 0


def test_a_poller_on_another_host_keeps_it_until_its_lease_runs_out(lease: PollerLease) -> None:
    elsewhere = Holder("another-host", "boot", os.getpid(), "1")
    assert lease.take(elsewhere, now=NOW, hold_for=20) == 0
    assert lease.take(this_process(), now=NOW + 19, hold_for=20) is None
    assert lease.take(this_process(), now=NOW + 21, hold_for=20) == 0
