from __future__ import annotations

import fcntl
import itertools
import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from relay_app.formatting import format_alert
from relay_app.glitchtip import parse_alert
from relay_app.pacing import BOT_LIMIT, BOT_WINDOW, CHAT_INTERVAL, GROUP_LIMIT, GROUP_WINDOW
from relay_app.routing import Destination
from relay_app.spool import _SCHEMA_STEPS, Spool, SpooledAlert, SpoolError, SpoolFull
from tests.conftest import CHAT_ID, DESTINATION, FakeTime
from tests.payloads import issue, issue_alert

MESSAGE = format_alert(parse_alert(issue_alert(issue(1))))


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def spool(spool_path: str, clock: FakeTime) -> Spool:
    return Spool(spool_path, clock=clock)


def add(
    spool: Spool, clock: FakeTime, *, lease: float = 10.0, to: Destination = DESTINATION
) -> SpooledAlert:
    return spool.add(MESSAGE, to, received_at=clock.now, lease_for=lease).alert


def add_id(spool: Spool, clock: FakeTime, *, lease: float = 10.0) -> int:
    alert_id = add(spool, clock, lease=lease).id
    assert alert_id is not None
    return alert_id


def claim(spool: Spool, destination: Destination = DESTINATION, most: int = 100) -> list[int]:
    alerts = spool.claim(
        destination, lease_for=35, how_many=lambda waiting: min(most, len(waiting))
    )
    return [alert.id for alert in alerts if alert.id is not None]


def test_an_alert_sent_at_once_is_held_by_its_process_until_the_lease_expires(
    spool: Spool, spool_path: str, clock: FakeTime
) -> None:
    admission = spool.add(MESSAGE, DESTINATION, received_at=clock.now, lease_for=10)
    assert admission.send_now
    other_process = Spool(spool_path, clock=clock)
    assert claim(other_process) == []
    clock.now += 10.5
    [claimed] = other_process.claim(DESTINATION, lease_for=35, how_many=len)
    assert (claimed.id, claimed.message, claimed.lease_owner, claimed.destination) == (
        admission.alert.id,
        MESSAGE,
        other_process.owner,
        DESTINATION,
    )
    assert claimed.lease_until == pytest.approx(clock.now + 35)
    assert (claimed.attempts, claimed.unsure_attempts) == (1, 1)  # the one that was in flight


def test_an_alert_whose_turn_has_not_come_waits_unleased_and_uncounted(
    spool: Spool, clock: FakeTime
) -> None:
    add(spool, clock)
    second = spool.add(MESSAGE, DESTINATION, received_at=clock.now + 0.2, lease_for=10)
    assert not second.send_now
    assert second.alert.next_attempt_at == pytest.approx(clock.now + CHAT_INTERVAL)
    assert (second.alert.attempts, second.alert.lease_owner) == (0, None)
    # Another topic of the same chat shares the chat's pace; another chat has its own.
    assert not spool.add(
        MESSAGE, Destination(CHAT_ID, 7), received_at=clock.now, lease_for=10
    ).send_now
    assert spool.add(MESSAGE, Destination(-42), received_at=clock.now, lease_for=10).send_now


def test_a_new_alert_queues_behind_older_ones_waiting_for_the_same_destination(
    spool: Spool, clock: FakeTime
) -> None:
    add(spool, clock)
    add(spool, clock)  # waits for the next turn
    clock.now += 5  # the chat's turn has long come, but an older alert is waiting
    assert not spool.add(MESSAGE, DESTINATION, received_at=clock.now, lease_for=10).send_now
    assert claim(spool) == [2, 3]


def test_turns_are_shared_by_every_process_on_the_file(spool_path: str, clock: FakeTime) -> None:
    first, second = Spool(spool_path, clock=clock), Spool(spool_path, clock=clock)
    chat = DESTINATION.chat_key
    assert first.reserve(chat, group=True, now=clock.now) == clock.now
    assert second.reserve(chat, group=True, now=clock.now) == pytest.approx(
        clock.now + CHAT_INTERVAL
    )
    second.pause(chat, clock.now + 30)
    assert first.reserve(chat, group=True, now=clock.now + 2) == clock.now + 30
    first.give_back(chat, clock.now)
    assert second.reserve("-42", group=True, now=clock.now) == clock.now  # chats are apart


def test_the_bot_gets_thirty_turns_a_second_across_chats_and_processes(
    spool_path: str, clock: FakeTime
) -> None:
    processes = [Spool(spool_path, clock=clock) for _ in range(3)]
    granted = [
        processes[n % 3].reserve(f"-{n}", group=True, now=clock.now) == clock.now
        for n in range(BOT_LIMIT + 5)
    ]
    assert granted == [True] * BOT_LIMIT + [False] * 5
    assert processes[0].reserve("-999", group=True, now=clock.now) == pytest.approx(
        clock.now + BOT_WINDOW
    )


def test_a_group_gets_twenty_turns_a_minute(spool: Spool, clock: FakeTime) -> None:
    turns: list[float] = []
    now = clock.now
    while len(turns) < GROUP_LIMIT + 1:
        turn = spool.reserve("-100", group=True, now=now)
        if turn <= now:
            turns.append(now)
        now = max(now, turn)
    assert turns[GROUP_LIMIT] - turns[0] >= GROUP_WINDOW - 1e-6
    assert all(b - a >= CHAT_INTERVAL - 1e-6 for a, b in itertools.pairwise(turns))


def test_a_lease_given_back_is_claimable_at_once(
    spool: Spool, spool_path: str, clock: FakeTime
) -> None:
    add(spool, clock, lease=3600)
    assert spool.release_all() == 1
    assert claim(Spool(spool_path, clock=clock)) == [1]


def test_only_due_alerts_for_the_destination_are_claimed_oldest_first(
    spool: Spool, clock: FakeTime
) -> None:
    ids = [add(spool, clock, lease=0).id for _ in range(4)]
    later = add(spool, clock, to=Destination(CHAT_ID, 9))
    later.next_attempt_at = clock.now + 60
    spool.save([later], lease_until=None)
    clock.now += 2
    assert claim(spool, Destination(CHAT_ID, 9)) == []
    assert claim(spool, most=3) == ids[:3]  # as many as the digest takes
    assert claim(spool) == ids[3:]


def test_waiting_names_the_destinations_and_the_next_due_time(
    spool: Spool, clock: FakeTime
) -> None:
    add(spool, clock, lease=0)
    queued = add(spool, clock, to=Destination("@Alerts", 3))
    queued.next_attempt_at = clock.now + 60
    spool.save([queued], lease_until=None)
    clock.now += 1
    assert spool.waiting(now=clock.now) == ([DESTINATION], clock.now + 59)
    clock.now += 60
    destinations, _ = spool.waiting(now=clock.now)
    assert set(destinations) == {DESTINATION, Destination("@alerts", 3)}


def test_workers_claiming_at_once_never_share_a_row(spool_path: str, clock: FakeTime) -> None:
    writer = Spool(spool_path, clock=clock)
    for _ in range(300):
        writer.add(MESSAGE, DESTINATION, received_at=clock.now - 100, lease_for=0)
    workers = [Spool(spool_path, clock=clock) for _ in range(6)]
    claimed: dict[str, list[int]] = {w.owner: [] for w in workers}
    start = threading.Barrier(len(workers))

    def claim_all(worker: Spool) -> None:
        start.wait(timeout=10)
        for _ in range(100):
            claimed[worker.owner].extend(claim(worker, most=7))

    threads = [threading.Thread(target=claim_all, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    every_claim = [alert_id for ids in claimed.values() for alert_id in ids]
    assert sorted(every_claim) == list(range(1, 301))  # each row exactly once


def test_saving_fails_once_another_worker_holds_the_row(
    spool: Spool, spool_path: str, clock: FakeTime
) -> None:
    alert = add(spool, clock)
    clock.now += 11
    assert claim(Spool(spool_path, clock=clock)) == [alert.id]
    assert spool.save([alert], lease_until=clock.now + 35) is False


def test_the_pending_limit_is_enforced_and_freed_by_delivery_and_death(
    spool_path: str, clock: FakeTime
) -> None:
    spool = Spool(spool_path, max_pending=2, clock=clock)
    first, second = add(spool, clock), add(spool, clock)
    with pytest.raises(SpoolFull):
        add(spool, clock)
    spool.delivered([first])
    third = add(spool, clock)
    spool.bury(second)
    add(spool, clock)
    with pytest.raises(SpoolFull):
        add(spool, clock)
    assert spool.requeue([second.id or 0]) == {second.id: "dead"}  # pending again: 3 of 2
    spool.delivered([third])
    with pytest.raises(SpoolFull):
        add(spool, clock)
    assert spool.counts() == {"pending": 2, "dead": 0}


def test_a_spool_from_before_routing_is_upgraded_and_its_alerts_keep_their_chat(
    spool_path: str, clock: FakeTime
) -> None:
    with sqlite3.connect(spool_path) as db:
        for statement in _SCHEMA_STEPS[1]:
            db.execute(statement)
        db.execute("PRAGMA user_version = 1")
        db.execute(
            "INSERT INTO alerts (received_at, retry_from, html, text, fallback, attempts,"
            " unsure_attempts, next_attempt_at) VALUES (?, ?, ?, ?, ?, 1, 1, ?)",
            (clock.now, clock.now, MESSAGE.html, MESSAGE.text, MESSAGE.fallback, clock.now),
        )
    db.close()
    with pytest.raises(SpoolError, match="start the relay once to upgrade it"):
        Spool(spool_path, for_service=False).counts()
    upgraded = Spool(spool_path, clock=clock, default_destination=Destination(CHAT_ID, 5))
    [old] = upgraded.alerts("pending")
    assert (old.destination, old.message) == (Destination(CHAT_ID, 5), MESSAGE)
    assert Spool(spool_path, for_service=False).counts() == {"pending": 1, "dead": 0}
    with pytest.raises(SpoolFull):  # the old alert counts toward the limit
        Spool(spool_path, max_pending=1, clock=clock).add(
            MESSAGE, DESTINATION, received_at=clock.now, lease_for=10
        )


def test_dead_letters_can_be_requeued_with_a_fresh_horizon_and_purged(
    spool: Spool, clock: FakeTime
) -> None:
    ids = [add_id(spool, clock, lease=-1) for _ in range(3)]
    clock.now += 5
    for alert in spool.claim(DESTINATION, lease_for=35, how_many=len):
        alert.last_error = "Connection refused"
        spool.bury(alert)
    clock.now += 86400
    assert spool.requeue([ids[0], ids[0] + 100]) == {ids[0]: "dead", ids[0] + 100: None}
    [again] = spool.alerts("pending")
    assert (again.id, again.retry_from, again.attempts, again.lease_owner) == (
        ids[0],
        clock.now,
        0,
        None,
    )
    assert spool.requeue([ids[0]]) == {ids[0]: "pending"}
    assert spool.purge_dead(received_before=clock.now - 3600) == 2
    assert spool.counts() == {"pending": 1, "dead": 0}
    assert spool.purge_dead(received_before=clock.now) == 0  # pending ones are never purged


def test_a_corrupt_file_is_moved_aside_and_a_fresh_spool_started(
    spool_path: str, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    garbage = b"this is not a database, whatever the name says\n" * 200
    Path(spool_path).write_bytes(garbage)
    spool = Spool(spool_path, clock=clock)
    assert spool.problem() is None
    add(spool, clock)
    [aside] = Path(spool_path).parent.glob("spool.sqlite3.corrupt-*")
    assert aside.read_bytes() == garbage  # kept as it was, for a person to look at
    [record] = [r for r in caplog.records if "was corrupt" in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert str(aside) in record.getMessage()


def test_a_full_disk_is_reported_once_and_recovery_noticed(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    add(spool, clock)
    with spool._statement() as db:  # a disk that is full from this page on, for this connection
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
    big = MESSAGE.__class__(html="x" * 100_000, text="x" * 100_000, fallback="x")
    for _ in range(2):
        with pytest.raises(SpoolError, match="database or disk is full"):
            spool.add(big, DESTINATION, received_at=clock.now, lease_for=0)
        with spool._statement() as db:  # the failed connection was dropped: the next one too
            assert db.execute("SELECT count(*) FROM alerts").fetchone()[0] == 1  # reads work
            db.execute(f"PRAGMA max_page_count = {pages}")
    errors = [r for r in caplog.records if r.getMessage().startswith("DURABILITY LOST")]
    assert len(errors) == 1  # on becoming unusable, not on every failure
    assert errors[0].levelno == logging.ERROR
    assert "database or disk is full" in errors[0].getMessage()
    assert spool.problem() is None  # a fresh connection has room: it works again
    assert "works again" in caplog.text
    add(spool, clock)


def test_a_missing_directory_is_reported_and_recovered_from(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "volume" / "spool.sqlite3"))
    assert spool.problem() == f"the directory {tmp_path / 'volume'} does not exist"
    (tmp_path / "volume").mkdir()
    assert spool.problem() is None


def test_a_spool_from_a_newer_relay_is_left_alone(spool_path: str) -> None:
    with sqlite3.connect(spool_path) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()
    problem = Spool(spool_path).problem()
    assert problem is not None
    assert "newer relay_app" in problem


def test_the_cli_never_creates_a_spool(tmp_path: Path) -> None:
    path = tmp_path / "typo.sqlite3"
    with pytest.raises(SpoolError, match="there is no spool at"):
        Spool(str(path), for_service=False).counts()
    assert not path.exists()


def test_opening_waits_for_the_lock_only_so_long(
    spool_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("relay_app.spool.OPEN_LOCK_TIMEOUT", 0.2)
    with open(f"{spool_path}.lock", "a") as held:  # a process stopped while opening the spool
        fcntl.flock(held, fcntl.LOCK_EX)
        assert Spool(spool_path).problem() == (
            f"another process has held {spool_path}.lock for over 0.2 s"
        )
    assert Spool(spool_path).problem() is None


def test_the_checkpoint_copies_the_log_back_off_the_webhooks_path(
    spool: Spool, spool_path: str, clock: FakeTime
) -> None:
    for _ in range(200):
        add(spool, clock)
    before = Path(spool_path).stat().st_size
    assert before <= 8 * 4096  # the rows are still in the write-ahead log only
    spool.checkpoint()
    assert Path(spool_path).stat().st_size >= before + 30 * 4096
    assert spool.counts()["pending"] == 200
