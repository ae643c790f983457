"""One leader for the fleet's chores (delivery/leadership.py, spool/leader.py): of the processes
sharing a spool, one holds the leader's lease and runs the chores; it renews its term each look,
gives the lease back when it stops, and loses it when it stalls past its term; a holder gone
from this host frees it at once. On SQLite and PostgreSQL, with the store's clock the caller's
or 30 s off it; the processes of a fleet as Leaderships of their own on the test's clock."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from relay_app.core.timing import PRODUCTION
from relay_app.delivery.leadership import Leadership, Upkeep
from relay_app.spool import on_store
from relay_app.spool.database import Database
from relay_app.spool.holders import Holder, this_process
from relay_app.spool.leader import LeaderLease
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.store import Store
from tests.conftest import FakeTime
from tests.old_spools import old_postgres, one_history_sqlite

TERM = PRODUCTION.leader_term


@pytest.fixture(params=["sqlite", "postgres", "sqlite-30s-off", "postgres-30s-off"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Store]]:
    """Three connections to one spool: three processes of a fleet, started (their spool's
    schema made, which a look's one-second budget is not meant to pay for)."""
    kind, _, off = str(request.param).partition("-")
    skew = 30.0 if off else 0.0
    opened: list[Store] = []
    for _ in range(3):
        if kind == "sqlite":
            opened.append(Database(str(tmp_path / "spool.sqlite3"), skew=skew))
        else:
            opened.append(PgDatabase(request.getfixturevalue("pg_url"), caller_skew=skew))
        opened[-1].read(lambda tx: None, wait_until=time.monotonic() + 30)
    yield opened
    for store in opened:
        store.close()


class Counted:
    """A chore that counts its starts and stops."""

    def __init__(self) -> None:
        self.running = False
        self.starts = 0

    def start(self) -> None:
        self.running = True
        self.starts += 1

    def stop(self) -> None:
        self.running = False


def fleet(stores: list[Store], clock: FakeTime) -> list[tuple[Leadership, Counted]]:
    made = []
    for store in stores:
        chore = Counted()
        made.append(
            (Leadership(on_store(store).leader, [chore], clock=clock, monotonic=clock), chore)
        )
    return made


def leaders(made: list[tuple[Leadership, Counted]]) -> list[int]:
    return [number for number, (leadership, _) in enumerate(made) if leadership.leads()]


def test_one_process_leads_and_runs_the_chores_renewing_its_term_each_look(
    stores: list[Store], fake_time: FakeTime
) -> None:
    made = fleet(stores, fake_time)
    assert [leadership.look() for leadership, _ in made] == [True, False, False]
    assert [chore.running for _, chore in made] == [True, False, False]
    for _ in range(20):  # a minute and more of looks, each within the term
        fake_time.now += TERM / 2
        assert [leadership.look() for leadership, _ in made] == [True, False, False]
    assert made[0][1].starts == 1  # one term, started once
    assert leaders(made) == [0]


def test_a_leader_that_stops_gives_the_lease_back_and_the_next_look_takes_it(
    stores: list[Store], fake_time: FakeTime
) -> None:
    made = fleet(stores, fake_time)
    made[0][0].look()
    made[0][0].shutdown()
    assert not made[0][1].running
    assert made[1][0].look()  # at once, not a term later
    assert made[1][1].running


def test_a_leader_that_stalls_past_its_term_is_replaced_and_stops_its_chores(
    stores: list[Store], fake_time: FakeTime
) -> None:
    made = fleet(stores, fake_time)
    stalled, _ = made[0]
    stalled.look()
    fake_time.now += TERM - 0.5
    assert not made[1][0].look()  # its term holds
    fake_time.now += 1.0  # it renewed nothing (a stopped process): its term is over
    assert not stalled.leads()  # by its own clock too: it runs no upkeep
    assert made[1][0].look()
    assert leaders(made) == [1]
    assert not stalled.look()  # back: it finds another leads, and stops its chores
    assert not made[0][1].running
    assert made[1][1].running


def test_a_leader_gone_from_this_host_is_replaced_at_the_next_look(
    stores: list[Store], fake_time: FakeTime
) -> None:
    lease = on_store(stores[0]).leader
    me = this_process()
    gone = replace(me, pid=2**22 + 17, started="1")  # a process of this host that exists no more
    assert gone.is_here(me)
    assert gone.is_gone()
    assert lease.take(gone, "its-token", hold_for=TERM, now=fake_time.now)
    made = fleet(stores[1:], fake_time)
    assert made[0][0].look()  # long before its term would have ended


def test_a_leader_on_another_host_keeps_its_term_however_alive_it_looks(
    stores: list[Store], fake_time: FakeTime
) -> None:
    lease = on_store(stores[0]).leader
    elsewhere = Holder("another-host", "boot", os.getpid(), "1", "4026531836")
    assert lease.take(elsewhere, "its-token", hold_for=TERM, now=fake_time.now)
    made = fleet(stores[1:], fake_time)
    assert not made[0][0].look()
    term = lease.term(now=fake_time.now)
    assert term.holder == str(elsewhere)
    fake_time.now += TERM + 0.1
    assert made[0][0].look()


def test_a_leader_that_cannot_reach_the_spool_leads_out_its_term_then_stops(
    stores: list[Store], fake_time: FakeTime
) -> None:
    made = fleet(stores[:1], fake_time)
    leadership, chore = made[0]
    leadership.look()
    stores[0].close()

    class Unreachable(LeaderLease):
        def take(self, *args: object, **kwargs: object) -> bool:
            from relay_app.core.errors import SpoolError

            raise SpoolError("the database cannot be reached")

    leadership._lease = Unreachable(stores[0])
    fake_time.now += TERM / 2
    assert leadership.look()
    fake_time.now += TERM / 2 + 0.1
    assert not leadership.look()
    assert not chore.running


def test_the_upkeep_runs_only_where_the_leader_is() -> None:
    ran: list[str] = []
    leading = [False]
    upkeep = Upkeep([lambda: ran.append("fired")], leads=lambda: leading[0])
    upkeep()
    leading[0] = True
    upkeep()
    assert ran == ["fired"]


def test_the_updates_offset_moves_on_only_under_the_leaders_term(
    stores: list[Store], fake_time: FakeTime
) -> None:
    made = fleet(stores, fake_time)
    first, second = made[0][0], made[1][0]
    lease = on_store(stores[0]).leader
    first.look()
    token = first.term()
    assert token is not None
    assert second.term() is None
    assert lease.offset(token) == 0
    assert lease.confirm(token, 17)
    assert lease.confirm(token, 9)  # the term holds; the offset never goes back
    assert lease.offset(token) == 17
    first.shutdown()
    second.look()
    # The last leader's term is over: what it still handles moves nothing, and the next
    # leader reads on from the first update the last did not confirm.
    assert lease.offset(token) is None
    assert not lease.confirm(token, 99)
    successor = second.term()
    assert successor is not None
    assert successor != token
    assert lease.offset(successor) == 17


def test_a_spool_of_the_pollers_own_lease_keeps_its_offset_for_the_leader(
    request: pytest.FixtureRequest, tmp_path: Path, fake_time: FakeTime
) -> None:
    """A spool at step 20 (the poller had a lease of its own) upgrades in place, and the
    next leader reads on from the update the last poller had reached."""
    path = str(tmp_path / "spool.sqlite3")
    with sqlite3.connect(path) as db:
        one_history_sqlite(db, 20)
        db.execute("UPDATE updates_poller SET holder = 'gone', next_update = 4242")
    db.close()
    url = request.getfixturevalue("pg_url")
    with psycopg.connect(url, autocommit=True) as pg:
        old_postgres(pg, 20)
        pg.execute("UPDATE updates_poller SET holder = 'gone', next_update = 4242")
    for store in (Database(path), PgDatabase(url, caller_skew=0.0)):
        try:
            leadership = Leadership(on_store(store).leader, clock=fake_time, monotonic=fake_time)
            assert leadership.look()
            token = leadership.term()
            assert token is not None
            assert on_store(store).leader.offset(token) == 4242
        finally:
            store.close()
