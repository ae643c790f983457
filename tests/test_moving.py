"""What this host's own file held while the spool in PostgreSQL could not take it, moved into the
spool when it answers again (spool/moving.py): every job once, with its ledger and the name it
arrived with, however the move is cut short. The file is SQLite; the spool is SQLite here and
PostgreSQL in the `postgres` runs."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from relay_app.core.errors import SpoolError
from relay_app.core.outcomes import Dead, RetryAt
from relay_app.core.routing import Destination
from relay_app.spool import (
    Admin,
    Claim,
    Claimant,
    Job,
    Lane,
    Precedence,
    Queue,
    Settlement,
    State,
    Taking,
    this_process,
)
from relay_app.spool.database import Database
from relay_app.spool.model import NewJob
from relay_app.spool.moving import Mover
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.store import Store
from tests.conftest import DESTINATION, FakeTime
from tests.payloads import issue, issue_alert

OTHER = Destination(-1009999)
ME = this_process()
LEASE = 10.0


@dataclass
class Both:
    """The host's file and the spool, with a queue on each and the mover between them."""

    local: Queue
    spool: Queue
    mover: Mover
    local_store: Store
    spool_store: Store

    def move(self, clock: FakeTime, *, in_flight: tuple[str, ...] = ()) -> int:
        return self.mover.move(holder=ME, in_flight=in_flight, lease_for=LEASE, now=clock.now)


@pytest.fixture(params=["sqlite", "postgres"])
def both(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Both]:
    local_store = Database(str(tmp_path / "local.sqlite3"))
    spool_store: Store
    if request.param == "postgres":
        spool_store = PgDatabase(request.getfixturevalue("pg_url"))
    else:
        spool_store = Database(str(tmp_path / "spool.sqlite3"))
    yield Both(
        Queue(local_store, home="local"),
        Queue(spool_store),
        Mover(local_store, spool_store),
        local_store,
        spool_store,
    )
    local_store.close()
    spool_store.close()


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


def held(queue: Queue, clock: FakeTime, number: int, to: Destination = DESTINATION) -> Job:
    about = {"webhook": issue_alert(issue(number))}
    return queue.add(NewJob("alert", about, to, Precedence.ALERT), now=clock.now)


def claimed(queue: Queue, job: Job, clock: FakeTime, token: str = "t") -> Claim:
    """The job's lane claimed for an attempt, as the dispatcher would."""
    claim = queue.claim(
        Lane(job.lane, job.destination, clock.now, free=True),
        Claimant(ME, token, LEASE, {token}),
        Taking(fit=len, retire=lambda job, now: None, send=True),
        now=clock.now,
    )
    assert isinstance(claim, Claim), claim
    return claim


def _listed(queue: Queue, state: State) -> list[Job]:
    return Admin(queue._store).alerts(state)


def test_what_waited_in_the_file_goes_to_the_spool_with_its_ledger_and_its_name(
    both: Both, clock: FakeTime
) -> None:
    first, second = held(both.local, clock, 1), held(both.local, clock, 2, OTHER)
    failed = claimed(both.local, second, clock)
    both.local.settle(
        failed,
        Settlement([(second, RetryAt(clock.now + 30))], error="Bad Gateway"),
        now=clock.now,
    )
    clock.now += 5
    assert both.move(clock) == 2
    moved = _listed(both.spool, "pending")
    host = socket.gethostname()
    assert [job.label for job in moved] == [f"local-{first.id}@{host}", f"local-{second.id}@{host}"]
    assert [job.destination for job in moved] == [DESTINATION, OTHER]
    assert (moved[1].attempts, moved[1].last_error) == (1, "Bad Gateway")
    # Times are carried over as ages: PostgreSQL keeps its own clock, not the test's.
    retry_due = clock.now - 5 + 30
    assert moved[1].next_attempt_at is not None
    assert moved[1].next_attempt_at - moved[0].received_at == pytest.approx(
        retry_due - first.received_at, abs=0.5
    )
    assert both.local.pending() == 0
    assert both.move(clock) == 0  # nothing left to move


def test_a_dead_letter_moves_too_and_stays_dead(both: Both, clock: FakeTime) -> None:
    job = held(both.local, clock, 1)
    claim = claimed(both.local, job, clock)
    both.local.settle(
        claim,
        Settlement([(job, Dead("refused", "Telegram refused it permanently"))]),
        now=clock.now,
    )
    assert both.move(clock) == 1
    [dead] = _listed(both.spool, "dead")
    assert dead.label.startswith("local-")
    assert _listed(both.spool, "pending") == []


def test_a_move_cut_short_and_made_again_adds_nothing_twice(
    both: Both, clock: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    held(both.local, clock, 1)
    writes = {"n": 0}
    real = both.local_store.write

    def dies_at_the_third(work: Any, **kwargs: Any) -> Any:
        writes["n"] += 1
        if writes["n"] == 2:  # lend, [adopt in the spool], then the file's forget: cut
            raise SpoolError("the host lost power")
        return real(work, **kwargs)

    monkeypatch.setattr(both.local_store, "write", dies_at_the_third)
    with pytest.raises(SpoolError):
        both.move(clock)
    monkeypatch.setattr(both.local_store, "write", real)
    assert (both.spool.pending(), both.local.pending()) == (1, 1)
    # The spool's copy is delivered (and deleted) before the move is made again.
    both.spool_store.write(lambda tx: tx.execute("DELETE FROM jobs"), now=clock.now)
    clock.now += LEASE + 1  # the cut move's lease on the file's lane ran out
    assert both.move(clock) == 0  # its origin says it moved once already
    assert both.spool.pending() == 0
    assert both.local.pending() == 0


def test_a_lane_an_attempt_holds_stays_until_that_attempt_ends(both: Both, clock: FakeTime) -> None:
    job = held(both.local, clock, 1)
    held(both.local, clock, 2, OTHER)
    claim = claimed(both.local, job, clock, "sending")
    assert both.move(clock, in_flight=("sending",)) == 1  # the other lane's only
    both.local.settle(claim, Settlement([(job, RetryAt(clock.now))]), now=clock.now)
    assert both.move(clock) == 1
    assert (both.local.pending(), both.spool.pending()) == (0, 2)


def test_a_spool_still_away_gets_nothing_and_the_file_keeps_sending(
    both: Both, clock: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = held(both.local, clock, 1)

    def away(work: Any, **kwargs: Any) -> Any:
        raise SpoolError("the database did not answer within 1 s")

    monkeypatch.setattr(both.spool_store, "write", away)
    with pytest.raises(SpoolError):
        both.move(clock)
    # The lane it lent is free again: this host sends from the file meanwhile.
    claim = claimed(both.local, job, clock)
    assert [each.id for each in claim.jobs] == [job.id]


def test_each_file_names_its_jobs_apart_from_another_files(tmp_path: Any, clock: FakeTime) -> None:
    # Two files (a host whose file was removed and made again, say) number from 1 alike: each
    # has a name of its own, so the second's #1 is not taken for the first's, moved already.
    spool_store = Database(str(tmp_path / "spool.sqlite3"))
    for name in ("one", "two"):
        store = Database(str(tmp_path / f"{name}.sqlite3"))
        held(Queue(store, home="local"), clock, 1)
        assert (
            Mover(store, spool_store).move(holder=ME, in_flight=(), lease_for=LEASE, now=clock.now)
            == 1
        )
    assert Queue(spool_store).pending() == 2
