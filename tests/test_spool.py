"""The spool file itself (spool/database.py, schema.py, pacer.py, admin.py): opening, upgrading
and repairing it, a busy or broken disk, and Telegram's limits shared through it. The queue's
own behaviour is tests/test_queue.py."""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import sqlite3
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import pytest

from relay_app.core.errors import QueueFull, SpoolBusy, SpoolError
from relay_app.core.pacing import BOT_LIMIT, BOT_WINDOW, CHAT_INTERVAL, GROUP_LIMIT, GROUP_WINDOW
from relay_app.core.routing import Destination
from relay_app.delivery.render import Renderer
from relay_app.glitchtip.webhook import read_kept
from relay_app.message.formatting import format_alert
from relay_app.spool import Admin, on_store, this_process
from relay_app.spool.database import MEMORY, Database, readable_by_others
from relay_app.spool.history import SCHEMA_VERSION
from relay_app.spool.pacer import pause, take_turn
from relay_app.spool.schema import upgrade, version_of
from relay_app.spool.store import Tx
from relay_app.spool.warnings import SpoolWarnings
from relay_app.words import ENGLISH
from tests.conftest import CHAT_ID, DESTINATION, SOURCES, FakeTime, hold_the_lock, queue_alert
from tests.old_spools import old_sqlite
from tests.payloads import issue, issue_alert

PAYLOAD = issue_alert(issue(1))
MESSAGE = format_alert(read_kept(PAYLOAD), ENGLISH)


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def database(spool_path: str) -> Database:
    return Database(spool_path)


def add(database: Database, clock: FakeTime, payload: dict[str, Any] | None = None) -> None:
    """An alert queued: no turn taken, nothing leased."""
    queue_alert(on_store(database).queue, payload or PAYLOAD, now=clock.now)


def turn(database: Database, chat: str, now: float, *, group: bool = True) -> float:
    return database.write(lambda tx: take_turn(tx, chat, group=group, now=now), now=now)


# --- pacing shared through the file -----------------------------------------------------------


def test_turns_are_shared_by_every_process_on_the_file(spool_path: str, clock: FakeTime) -> None:
    first, second = Database(spool_path), Database(spool_path)
    chat = DESTINATION.chat_key
    assert turn(first, chat, clock.now) == clock.now
    assert turn(second, chat, clock.now) == pytest.approx(clock.now + CHAT_INTERVAL)
    second.write(lambda tx: pause(tx, chat, clock.now + 30, now=clock.now))
    assert turn(first, chat, clock.now + 2) == clock.now + 30
    assert turn(second, "-42", clock.now) == clock.now  # chats are apart


def test_the_bot_gets_thirty_turns_a_second_across_chats_and_processes(
    spool_path: str, clock: FakeTime
) -> None:
    processes = [Database(spool_path) for _ in range(3)]
    granted = [
        turn(processes[n % 3], f"-{n}", clock.now) == clock.now for n in range(BOT_LIMIT + 5)
    ]
    assert granted == [True] * BOT_LIMIT + [False] * 5
    assert turn(processes[0], "-999", clock.now) == pytest.approx(clock.now + BOT_WINDOW)


def test_a_group_gets_twenty_turns_a_minute(database: Database, clock: FakeTime) -> None:
    turns: list[float] = []
    now = clock.now
    while len(turns) < GROUP_LIMIT + 1:
        next_turn = turn(database, "-100", now)
        if next_turn <= now:
            turns.append(now)
        now = max(now, next_turn)
    assert turns[GROUP_LIMIT] - turns[0] >= GROUP_WINDOW - 1e-6
    assert all(b - a >= CHAT_INTERVAL - 1e-6 for a, b in itertools.pairwise(turns))


def test_a_pause_decided_before_the_clock_stepped_back_no_longer_holds(
    database: Database, clock: FakeTime
) -> None:
    database.write(lambda tx: pause(tx, "-100", clock.now + 30, now=clock.now))
    assert turn(database, "-100", clock.now + 5) == clock.now + 30
    stepped_back = clock.now - 3600
    assert turn(database, "-100", stepped_back) == stepped_back  # not an hour and 30 s


# --- the file ---------------------------------------------------------------------------------


def test_the_pending_limit_counts_what_is_already_on_disk(spool_path: str, clock: FakeTime) -> None:
    add(Database(spool_path), clock)
    with pytest.raises(QueueFull):
        queue_alert(on_store(Database(spool_path), max_pending=1).queue, PAYLOAD, now=clock.now)


def old_spool(spool_path: str, clock: FakeTime, version: int) -> None:
    """A file as an older relay_app wrote it, with one alert."""
    with sqlite3.connect(spool_path) as db:
        old_sqlite(db, version)
        columns, values = "", ""
        if version >= 2:
            columns, values = ", chat, thread", f", '{CHAT_ID}', 3"
        db.execute(
            "INSERT INTO alerts (received_at, retry_from, html, text, fallback, attempts,"
            f" unsure_attempts, next_attempt_at, lease_owner, lease_until{columns})"
            f" VALUES (?, ?, ?, ?, ?, 1, 1, ?, 'gone:1:ab', ?{values})",
            (
                clock.now,
                clock.now,
                MESSAGE.html,
                MESSAGE.text,
                MESSAGE.fallback,
                clock.now,
                clock.now + 9,
            ),
        )
        db.execute("DELETE FROM alerts WHERE id > 1")
    db.close()


@pytest.mark.parametrize(
    ("version", "destination"), [(1, Destination(CHAT_ID, 5)), (2, Destination(CHAT_ID, 3))]
)
def test_a_spool_from_an_older_relay_is_upgraded_with_its_alerts_intact(
    spool_path: str, clock: FakeTime, version: int, destination: Destination
) -> None:
    old_spool(spool_path, clock, version)
    with pytest.raises(SpoolError, match="start the relay once to upgrade it"):
        Admin(Database(spool_path, for_service=False)).counts()
    upgraded = Database(spool_path, default_destination=Destination(CHAT_ID, 5))
    [old] = Admin(upgraded).alerts("pending")
    # Spooled before headings and lines were kept: a digest shows its entry whole.
    assert (old.id, old.destination) == (1, destination)
    assert Renderer(ENGLISH, late_after=60.0, sources=SOURCES).alert(old) == replace(
        MESSAGE, heading=None, lines=()
    )
    assert (old.attempts, old.unsure_attempts) == (1, 1)  # its attempt may have arrived
    assert Admin(Database(spool_path, for_service=False)).counts() == {
        "pending": 1,
        "dead": 0,
    }
    queue = on_store(upgraded).queue
    [lane] = queue.lanes(now=clock.now, holder=this_process(), in_flight=())
    assert (lane.destination, lane.due_at, lane.free) == (destination, clock.now, True)
    add(upgraded, clock)
    assert [alert.id for alert in Admin(upgraded).alerts("pending")] == [1, 2]


def test_a_corrupt_file_is_moved_aside_and_a_fresh_spool_started(
    spool_path: str, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    garbage = b"this is not a database, whatever the name says\n" * 200
    Path(spool_path).write_bytes(garbage)
    database = Database(spool_path)
    assert database.problem() is None
    add(database, clock)
    [aside] = Path(spool_path).parent.glob("spool.sqlite3.corrupt-*")
    assert aside.read_bytes() == garbage  # kept as it was, for a person to look at
    [record] = [r for r in caplog.records if "was corrupt" in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert str(aside) in record.getMessage()


def test_a_full_disk_is_reported_once_and_recovery_noticed(
    database: Database, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    add(database, clock)

    def fill_the_disk(tx: Tx) -> None:
        # A disk that is full from this page on, for this connection.
        pages = tx.one("PRAGMA page_count")[0]
        tx.execute(f"PRAGMA max_page_count = {pages}")

    database.read(fill_the_disk)
    big = issue_alert(issue(1, title="x" * 100_000))
    for _ in range(2):
        with pytest.raises(SpoolError, match="database or disk is full"):
            add(database, clock, big)
        # The failed connection was dropped; reads work on the next one, which is full too.
        assert Admin(database).counts()["pending"] == 1
        database.read(fill_the_disk)
    errors = [r for r in caplog.records if r.getMessage().startswith("DURABILITY LOST")]
    assert len(errors) == 1  # on becoming unusable, not on every failure
    assert errors[0].levelno == logging.ERROR
    assert "database or disk is full" in errors[0].getMessage()
    database.close()
    assert database.problem() is None  # a fresh connection has room: it works again
    assert "works again" in caplog.text
    add(database, clock)


def test_a_missing_directory_is_reported_and_recovered_from(tmp_path: Path) -> None:
    database = Database(str(tmp_path / "volume" / "spool.sqlite3"))
    assert database.problem() == f"the directory {tmp_path / 'volume'} does not exist"
    (tmp_path / "volume").mkdir()
    assert database.problem() is None


def test_a_spool_from_a_newer_relay_is_left_alone(spool_path: str) -> None:
    with sqlite3.connect(spool_path) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()
    problem = Database(spool_path).problem()
    assert problem is not None
    assert "newer relay_app" in problem


def test_the_cli_never_creates_a_spool(tmp_path: Path) -> None:
    path = tmp_path / "typo.sqlite3"
    with pytest.raises(SpoolError, match="there is no spool at"):
        Admin(Database(str(path), for_service=False)).counts()
    assert not path.exists()


def test_opening_waits_for_the_lock_only_so_long(
    spool_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("relay_app.spool.database.OPEN_LOCK_TIMEOUT", 0.2)
    with open(f"{spool_path}.lock", "a") as held:  # a process stopped while opening the spool
        fcntl.flock(held, fcntl.LOCK_EX)
        assert Database(spool_path).problem() == (
            f"another process has held {spool_path}.lock for over 0.2 s"
        )
    assert Database(spool_path).problem() is None


def test_the_checkpoint_copies_the_log_back_off_the_webhooks_path(
    database: Database, spool_path: str, clock: FakeTime
) -> None:
    for _ in range(200):
        add(database, clock)
    before = Path(spool_path).stat().st_size
    assert before <= 8 * 4096  # the rows are still in the write-ahead log only
    database.tidy()
    assert Path(spool_path).stat().st_size >= before + 30 * 4096
    assert Admin(database).counts()["pending"] == 200


# --- a busy spool is not a broken one ---------------------------------------------------------


def test_a_write_waits_for_another_connections_lock_and_the_wait_is_counted(
    database: Database, spool_path: str, clock: FakeTime
) -> None:
    add(database, clock)  # the file exists, in WAL mode
    waits: list[float] = []
    database.on_lock_wait = waits.append
    holder = hold_the_lock(spool_path, 0.6)
    started = time.monotonic()
    add(database, clock)
    holder.join()
    assert time.monotonic() - started >= 0.5
    [waited] = waits
    assert waited >= 0.5
    assert database.problem() is None  # busy, not broken
    assert Admin(database).counts()["pending"] == 2


def test_a_lock_held_past_the_callers_budget_is_busy_not_broken(
    database: Database, spool_path: str, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    add(database, clock)
    holder = hold_the_lock(spool_path, 1.0)
    try:
        with pytest.raises(SpoolBusy, match=r"held the spool .* locked for over 0\.3 s"):
            database.write(lambda tx: None, wait_until=time.monotonic() + 0.3)
    finally:
        holder.join()
    assert database.problem() is None
    assert "DURABILITY LOST" not in caplog.text


def test_a_new_spool_is_readable_by_its_owner_only(spool_path: str, clock: FakeTime) -> None:
    previous = os.umask(0o022)  # the usual umask, under which files are made world-readable
    try:
        database = Database(spool_path)
        add(database, clock)
        files = [spool_path, f"{spool_path}-wal", f"{spool_path}-shm", f"{spool_path}.lock"]
        assert {name: stat.S_IMODE(os.stat(name).st_mode) for name in files} == dict.fromkeys(
            files, 0o600
        )
        database.close()
    finally:
        os.umask(previous)
    assert readable_by_others(spool_path) is None


def test_a_spool_others_can_read_is_named_with_its_fix(spool_path: str, clock: FakeTime) -> None:
    database = Database(spool_path)
    add(database, clock)
    os.chmod(spool_path, 0o644)
    os.chmod(f"{spool_path}-wal", 0o660)
    warning = readable_by_others(spool_path)
    database.close()
    assert warning is not None
    assert f"{spool_path} (mode 0644), {spool_path}-wal (mode 0660)" in warning
    assert warning.endswith(f"chmod 600 {spool_path} {spool_path}-wal")


def test_a_failed_unit_of_work_in_memory_keeps_what_memory_holds(clock: FakeTime) -> None:
    memory = Database(MEMORY)
    queue = on_store(memory).queue
    queue_alert(queue, PAYLOAD, now=clock.now)
    with pytest.raises(SpoolError, match="no such table"):
        memory.write(lambda tx: tx.execute("SELECT 1 FROM nowhere"))
    assert queue.pending() == 1  # the file would be reopened; memory is its alerts


class UnusableStore:
    """A store whose every unit of work fails, as a spool on a lost disk does."""

    def write(
        self, work: object, *, now: float | None = None, wait_until: float | None = None
    ) -> NoReturn:
        raise SpoolError("the spool's disk is gone")


def test_a_warning_is_said_once_a_period_between_processes_and_always_when_the_spool_cannot_say(
    spool_path: str,
) -> None:
    first, second = Database(spool_path), Database(spool_path)
    try:
        worker, sibling = SpoolWarnings(first), SpoolWarnings(second)
        assert worker.says("missed:method", 60)
        assert not sibling.says("missed:method", 60)  # said already, by the other process
        assert sibling.says("missed:unknown_path", 60)
        assert worker.says("missed:method", 0)  # its period is over
    finally:
        first.close()
        second.close()
    broken = SpoolWarnings(UnusableStore())  # type: ignore[arg-type]
    with pytest.raises(SpoolError):
        broken.due("missed:method", 60)
    assert broken.says("missed:method", 60)


class ClockReadAt:
    """A store whose units of work read the clock at `now`: as a process does that read it,
    then waited for the lock while another wrote."""

    def __init__(self, store: Database, now: float) -> None:
        self._store = store
        self.now = now

    def write(self, work: Any, *, now: float | None = None, wait_until: float | None = None) -> Any:
        return self._store.write(work, now=self.now, wait_until=wait_until)


def test_a_warning_given_while_a_sibling_waited_for_the_lock_is_not_given_again(
    spool_path: str,
) -> None:
    # Two workers see the same refusal at once: the second read the clock, then waited for
    # the first's write, and found a warning given a moment "after" its now. That is no clock
    # step: it was given twice, both workers logging the ERROR.
    first, second = Database(spool_path), Database(spool_path)
    try:
        given_at = time.time()
        worker = SpoolWarnings(ClockReadAt(first, given_at))  # type: ignore[arg-type]
        sibling = SpoolWarnings(ClockReadAt(second, given_at - 0.5))  # type: ignore[arg-type]
        assert worker.says("setup refused", 60)
        assert not sibling.says("setup refused", 60)
        stepped_back = SpoolWarnings(ClockReadAt(second, given_at - 3600))  # type: ignore[arg-type]
        assert stepped_back.says("setup refused", 60)  # a real step back: due again
    finally:
        first.close()
        second.close()


def schema_of(connection: sqlite3.Connection) -> dict[str, object]:
    """A file's schema as the statements see it: each table's columns (name, type, not null,
    default, key) in any order, its indexes' columns, and the triggers."""
    tables = [
        row[0]
        for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"
        )
    ]
    found: dict[str, object] = {}
    for table in tables:
        found[table] = sorted(
            tuple(row[1:]) for row in connection.execute(f"PRAGMA table_info({table})")
        )
        for index in connection.execute(f"PRAGMA index_list({table})"):
            name = index[1] if not index[1].startswith("sqlite_autoindex") else f"{table} key"
            found[f"index {name}"] = [
                row[2] for row in connection.execute(f"PRAGMA index_info({index[1]})")
            ]
    found["triggers"] = sorted(
        row[0]
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    )
    return found


@pytest.mark.parametrize("version", [1, 2, 5, 7, 10])
def test_a_file_from_before_the_one_history_ends_as_a_fresh_one_begins(
    tmp_path: Path, version: int
) -> None:
    fresh = sqlite3.connect(str(tmp_path / "fresh.sqlite3"), isolation_level=None)
    upgrade(fresh, None)
    old = sqlite3.connect(str(tmp_path / "old.sqlite3"), isolation_level=None)
    old_sqlite(old, version)
    upgrade(old, None)
    assert schema_of(old) == schema_of(fresh)
    for connection in (old, fresh):
        assert version_of(connection) == SCHEMA_VERSION
        assert connection.execute("SELECT version FROM relay_schema").fetchall() == [
            (SCHEMA_VERSION,)
        ]
        with pytest.raises(sqlite3.IntegrityError):  # a singleton's check holds, renamed too
            connection.execute("INSERT INTO pending_count (id, alerts) VALUES (2, 0)")
        connection.close()
