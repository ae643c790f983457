"""The scheduled queue: every write to a chat waits here as a job, with the time it is next due,
until Telegram has it or it is dead. One set of statements for every store (store.py): the
spool file (durable, shared by every process on the host), a PostgreSQL database several relays
share, or a private in-memory database when neither can be used, with the same rules.

Jobs wait per lane, oldest first: an alert's lane is its destination (chat and topic), and the
writes that concern one message (its card's edits, a reply under it) have that message's. A
claim takes the oldest due jobs of one lane that go in one write (alerts that fit one message;
a card's edits, whose last state is what is sent), with the chat's turn and the lane's lease;
the job runner makes one attempt and settles the outcome. A lane has at most one attempt in
flight, and its oldest job goes first: alerts reach a chat in the order they arrived, after a
retry, a 429 or a crash alike. Every lane of a chat takes its turns from that chat's one pace.

Alerts first: every job has a precedence (model.Precedence), and a chat's turn goes to its
lowest first: a lane whose first job is an answer to a command leaves the turn to a due alert
(or call, or edit) of the same chat in another lane, in the same unit of work that would have
taken it, whichever process or relay claims; within a lane, jobs go by precedence, then oldest
first. RELAY_SPOOL_MAX_PENDING counts alerts alone: nothing else queued counts, or is refused
for it (answers to what people type have a small budget of their own: answers.py).

Fenced leases: every claim is leased until its attempt cannot be running any more
(`lease_for`), on the store's clock, under a token of its own; every write of a claim's outcome
presents that token, and a write whose token no longer holds the lane records only deliveries
(a write Telegram has must never go again) and is reported. A lane's row is claimed with
`FOR UPDATE SKIP LOCKED` on PostgreSQL (a lane another relay is claiming is skipped, not waited
for); SQLite's write transaction holds the whole file.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..core.clock import guarded
from ..core.errors import QueueFull
from ..core.outcomes import Dead
from ..core.pacing import TELEGRAMS, Pace
from ..core.routing import Destination
from . import job_rows as rows
from .arrivals import note_arrival
from .holders import Holder, row_is_free
from .model import Claim, Home, Job, Lane, Later, NewJob, Precedence, Settled, Settlement
from .pacer import next_turn, take_turn, turn_settled
from .precedence import owed_first
from .store import Store, Tx

# A claim never needs more rows than one digest holds.
MAX_CLAIM = 120
# How many dead letters an in-memory queue keeps: the newest.
MEMORY_DEAD_KEPT = 1000
# How often a process forgets the lanes whose writes are done.
TIDY_EVERY = 60.0

# How many of these jobs, oldest first, go in one write (at least one).
Fit = Callable[[list[Job]], int]
Retire = Callable[[Job, float], Dead | None]


@dataclass(frozen=True)
class Claimant:
    """Who claims a lane: this process (`holder`), the claim's token, which every later write
    of it presents, the tokens of its claims still in flight (never taken over, whatever the
    clock says), and how long its lease lasts."""

    holder: Holder
    token: str
    lease_for: float
    in_flight: Container[str] = ()


def _retire_none(job: Job, now: float) -> Dead | None:
    return None


@dataclass(frozen=True)
class Taking:
    """How a claim takes a lane's due jobs: how many of them go in one write (`fit`), which die
    on the way (`retire`), and whether it sends at all (False: only the retiring happens)."""

    fit: Fit = len
    retire: Retire = _retire_none
    send: bool = True


class Queue:
    """Writes waiting for Telegram, scheduled by due time, leased per lane."""

    def __init__(
        self,
        store: Store,
        *,
        max_pending: int = 10000,
        pace: Pace = TELEGRAMS,
        home: Home | None = None,
    ) -> None:
        """`pace`: Telegram's limits as every claim keeps them (core/timing.py); `home`: what
        the queue is to the relay (its jobs' labels say it), by default the spool when its
        store outlives the process, memory when not."""
        self._store = store
        self.max_pending = max_pending
        self._pace = pace
        self.home: Home = home or ("spool" if store.durable else "memory")
        self._tidied_at = float("-inf")

    @property
    def name(self) -> str:
        """For logs: the spool's path, its URL without password, or 'memory'."""
        return self._store.path

    @property
    def durable(self) -> bool:
        """Whether its jobs outlive this process."""
        return self._store.durable

    def add(
        self,
        new: NewJob,
        *,
        now: float,
        wait_until: float | None = None,
        arrival: str | None = None,
        once: bool = False,
        quiet: bool = False,
    ) -> Job:
        """Queue a job. `arrival`: the start of a webhook's text, noted with it (arrivals.py).
        `once`: not again while one of the lane's jobs of this kind waits unattempted (that one
        is returned), as a card's edit, which sends the card's state when it goes. `quiet`: no
        relay is told of it (a webhook's alert, held for its webhook, which claims it next).
        Raises QueueFull for an alert past RELAY_SPOOL_MAX_PENDING (nothing else counts)."""

        def add(tx: Tx) -> Job:
            return self.add_in(tx, new, arrival=arrival, once=once, quiet=quiet)

        return self._store.write(add, now=now, wait_until=wait_until)

    def add_in(
        self,
        tx: Tx,
        new: NewJob,
        *,
        arrival: str | None = None,
        once: bool = False,
        quiet: bool = False,
    ) -> Job:
        """`add`, in a unit of work of this queue's store under way (`record`'s, say)."""
        if once and (waiting := self._waiting(tx, new.lane_key, new.kind)) is not None:
            return waiting
        if new.precedence == Precedence.ALERT:
            pending = tx.one("SELECT alerts FROM pending_count")["alerts"]
            if pending >= self.max_pending:
                where = "pending" if self.durable else "waiting in memory"
                raise QueueFull(f"{self.max_pending} alerts are already {where}")
        job = rows.insert(tx, new, home=self.home)
        if arrival is not None and self.home == "spool":
            note_arrival(tx, job.id, arrival)
        if not quiet:
            tx.notify()
        return job

    def record(self, work: Callable[[Tx], object], *, now: float) -> None:
        """Run `work` in a unit of work of this queue's store: what follows a delivery made
        from another store (this host's file, memory), recorded where this queue's store is.
        Raises SpoolError."""
        self._store.write(work, now=now)

    def _waiting(self, tx: Tx, lane: str, kind: str) -> Job | None:
        row = tx.one(
            "SELECT * FROM jobs WHERE lane = ? AND kind = ? AND state = 'pending'"
            " AND attempts = 0 ORDER BY id DESC LIMIT 1",
            (lane, kind),
        )
        return self._job(row, tx) if row is not None else None

    def merge(self, job: Job, more: Mapping[str, Any], *, now: float, due_now: bool = True) -> bool:
        """Add `more` to what the job is about (its issues' details came) while no attempt of
        it was made, due now unless `due_now` is False (its webhook claims it next); whether it
        was (after an attempt, every later one sends what that one did)."""

        def merge(tx: Tx) -> bool:
            return rows.merge(tx, job.id, more, due_now=due_now)

        return bool(self._store.write(merge, now=now))

    def leave_to_passes(self, job: Job, *, now: float) -> None:
        """A webhook's alert its webhook will not claim (Telegram is down, no thread is free):
        due now, no longer held for it, for whichever pass comes first."""
        self._store.write(lambda tx: rows.make_due_now(tx, job.id), now=now)

    def lanes(self, *, now: float, holder: Holder, in_flight: Container[str]) -> list[Lane]:
        """Every lane with jobs pending, by its first job: the lowest precedence first, then
        the oldest (the lanes of one chat take its turns in that order)."""

        def read(tx: Tx) -> list[Lane]:
            found = tx.all(
                "SELECT l.lane, l.chat, l.thread, l.holder, l.token, l.until,"
                " h.next_attempt_at, h.scheduled_at FROM lanes l JOIN jobs h ON h.id ="
                " (SELECT id FROM jobs WHERE lane = l.lane AND state = 'pending'"
                " ORDER BY precedence, id LIMIT 1) ORDER BY h.precedence, h.id"
            )
            return [_lane(self.name, row, tx, holder, in_flight) for row in found]

        return self._store.read(read, now=now)

    def claim(
        self,
        lane: Lane,
        by: Claimant,
        taking: Taking,
        *,
        now: float,
        wait_until: float | None = None,
        oldest: int | None = None,
    ) -> Claim | Later | None:
        """Claim the lane's oldest due jobs that go in one write, taking the chat's turn: a
        Claim, Later when the turn has not come, None when there is nothing to claim. Jobs
        `retire` rules out die on the way (Claim.retired); with `send` False only that happens.
        While the chat's turn has not come the jobs are not read at all: in a storm nearly
        every claim is that one, and it stays short.

        `oldest`: a webhook's own alert, held for it (due at its deadline, so no pass takes it
        first): claimed as due when it is the lane's oldest, and else, or when the turn has not
        come, due now, left to the passes, in the same unit of work."""
        destination = lane.destination
        chat, group = destination.chat_key, destination.is_group
        send = taking.send

        def claim(tx: Tx) -> Claim | Later | None:
            claimed = take(tx)
            if oldest is not None and not (isinstance(claimed, Claim) and claimed.jobs):
                rows.make_due_now(tx, oldest)
            return claimed

        def take(tx: Tx) -> Claim | Later | None:
            if not self._free_lane(tx, lane.key, by, oldest):
                return None  # another relay is claiming it, someone holds it, or older go first
            now = tx.at.db
            if send and (turn := next_turn(tx, chat, group=group, now=now, pace=self._pace)) > now:
                return Later(tx.at.to_local(turn))
            alive, retired = self._alive(tx, lane.key, taking.retire, oldest)
            if send and alive and owed_first(tx, chat, lane.key, alive[0].precedence):
                alive = []  # the turn is another lane's, whose write goes before these
            if send and alive and take_turn(tx, chat, group=group, now=now, pace=self._pace) <= now:
                taken = alive[: max(1, taking.fit(alive))]
                claim = self._take(tx, lane.key, destination, taken, by, retired)
                return replace(claim, turn_at=now)  # the send take_turn recorded
            return Claim(lane.key, destination, "", [], retired) if retired else None

        return self._store.write(claim, now=now, wait_until=wait_until)

    @staticmethod
    def _free_lane(tx: Tx, lane: str, by: Claimant, oldest: int | None) -> bool:
        """Whether the lane may be claimed now, its row locked for this unit of work: nobody
        holds it, and `oldest` (when given) is its first pending job."""
        lease = tx.one(
            "SELECT holder, token, until FROM lanes WHERE lane = ? FOR UPDATE SKIP LOCKED",
            (lane,),
        )
        if lease is None or not row_is_free(
            lease, now=tx.at.db, me=by.holder, in_flight=by.in_flight
        ):
            return False
        if oldest is None:
            return True
        first = tx.one(
            "SELECT id FROM jobs WHERE lane = ? AND state = 'pending'"
            " ORDER BY precedence, id LIMIT 1",
            (lane,),
        )
        return first is not None and first["id"] == oldest

    def _alive(
        self, tx: Tx, lane: str, retire: Retire, oldest: int | None
    ) -> tuple[list[Job], list[tuple[Job, Dead]]]:
        """The lane's due jobs (`oldest` among them), but those `retire` rules out: buried on
        the way, and returned apart."""
        alive: list[Job] = []
        retired: list[tuple[Job, Dead]] = []
        for job in self._due(tx, lane, oldest):
            if (dead := retire(job, tx.at.local)) is not None:
                rows.bury(tx, job, dead)
                retired.append((job, dead))
            else:
                alive.append(job)
        return alive, retired

    def _due(self, tx: Tx, lane: str, oldest: int | None) -> list[Job]:
        """The lane's due jobs in their order (precedence, then oldest first): up to the first
        one that is not due, since a lane's jobs go in order; `oldest`, its webhook's to
        claim, is."""
        due = []
        for row in tx.all(
            "SELECT * FROM jobs WHERE lane = ? AND state = 'pending' ORDER BY precedence, id"
            " LIMIT ?",
            (lane, MAX_CLAIM),
        ):
            if _due_at(row, tx) > tx.at.db and row["id"] != oldest:
                break
            due.append(self._job(row, tx))
        return due

    def settle(
        self,
        claim: Claim,
        settlement: Settlement,
        *,
        now: float,
        wait_until: float | None = None,
        also: Callable[[Tx], None] | None = None,
    ) -> Settled:
        """Record an attempt's outcomes and free the lane, in one change. A delivered job is
        deleted whoever holds its lane now (it must never go again); the rest change only
        while the claim's token still holds the lane. `also`: what follows the delivery (its
        buttons, its steps, ...), recorded with it, in a savepoint: should it fail, the
        delivery stays recorded, and the failure is in `Settled.also_failed`."""
        chat = claim.destination.chat_key

        def settle(tx: Tx) -> Settled:
            lease = tx.one("SELECT token FROM lanes WHERE lane = ? FOR UPDATE", (claim.lane,))
            ours = lease is not None and lease["token"] == claim.token
            for job, outcome in settlement.outcomes:
                rows.settle(
                    tx, job, outcome, held=ours, refund=settlement.refund, error=settlement.error
                )
            failed = tx.apart("follow_up", also) if also and settlement.delivered else None
            if not ours:
                return Settled(lease_lost=True, also_failed=failed)
            tx.execute(
                "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE lane = ?",
                (claim.lane,),
            )
            turn_settled(
                tx,
                chat,
                claim.turn_at,
                sent_at=_in_db(tx, settlement.sent_at),
                paused_until=_in_db(tx, settlement.pause_chat_until),
            )
            revived = self._accepting(tx, chat, settlement) if settlement.delivered else 0
            # The lane is free, and may hold more: any relay may take it up now.
            tx.notify()
            return Settled(revived=revived, also_failed=failed)

        return self._store.write(settle, now=now, wait_until=wait_until)

    @staticmethod
    def _accepting(tx: Tx, chat: str, settlement: Settlement) -> int:
        """The chat accepts writes: what waits for it because of a failure goes now, and its
        dead letters get their second chance (how many)."""
        tx.execute(
            "UPDATE jobs SET next_attempt_at = ?, scheduled_at = ?"
            " WHERE chat = ? AND state = 'pending' AND after_failure",
            (tx.at.db, tx.at.db, chat),
        )
        if settlement.second_chance_since is None:
            return 0
        return rows.revive(tx, chat, tx.at.to_db(settlement.second_chance_since))

    def after_recovery(self, now: float) -> int:
        """Telegram answers again: every job waiting because of a failure is due now. Returns
        how many alerts wait in all: those, and those that came meanwhile and never had an
        attempt, all of which go now, oldest first (and the other writes after them)."""

        def recover(tx: Tx) -> int:
            made_due = tx.execute(
                "UPDATE jobs SET next_attempt_at = CASE WHEN next_attempt_at < ?"
                " THEN next_attempt_at ELSE ? END, scheduled_at = ?"
                " WHERE state = 'pending' AND after_failure",
                (tx.at.db, tx.at.db, tx.at.db),
            ).rowcount
            waiting = int(tx.one("SELECT alerts FROM pending_count")["alerts"])
            if waiting or made_due:
                tx.notify()
            return waiting

        return self._store.write(recover, now=now)

    def release(self, holder: Holder) -> int:
        """Free every lane this process holds (it is stopping); how many."""
        if not self._store.opened:
            return 0  # never opened here: nothing held
        return int(
            self._store.write(
                lambda tx: (
                    tx.execute(
                        "UPDATE lanes SET holder = NULL, token = NULL, until = NULL"
                        " WHERE holder = ?",
                        (str(holder),),
                    ).rowcount
                )
            )
        )

    def pending(self) -> int:
        """How many jobs wait, of every kind (the cap counts the alerts alone)."""
        found = self._store.read(
            lambda tx: tx.one("SELECT count(*) AS jobs FROM jobs WHERE state = 'pending'")
        )
        return int(found["jobs"])

    def last_claim(
        self, fit: Fit, *, holder: Holder, token: str, tried: Container[int]
    ) -> Claim | None:
        """The process is stopping, and these jobs go with it (an in-memory queue): the first
        jobs not `tried` yet (alerts first, then the oldest), of one lane, as many as go in
        one write, due or not, paced or not, claimed for one last attempt. None when every
        one was tried."""

        def claim(tx: Tx) -> Claim | None:
            found = tx.all("SELECT * FROM jobs WHERE state = 'pending' ORDER BY precedence, id")
            waiting = [self._job(row, tx) for row in found if row["id"] not in tried]
            if not waiting:
                return None
            first = waiting[0]
            lane = [job for job in waiting if job.lane == first.lane][:MAX_CLAIM]
            taken = lane[: max(1, fit(lane))]
            by = Claimant(holder, token, lease_for=0.0)
            claim = self._take(tx, first.lane, first.destination, taken, by)
            # This process's own queue, and its last attempt: no one else may take it over.
            return replace(claim, leased_until=None)

        return self._store.write(claim)

    def take_all(self) -> list[Job]:
        """Empty the queue of what is pending, returning it, oldest first."""

        def take(tx: Tx) -> list[Job]:
            found = tx.all("SELECT * FROM jobs WHERE state = 'pending' ORDER BY id")
            tx.execute("DELETE FROM jobs WHERE state = 'pending'")
            return [self._job(row, tx) for row in found]

        return self._store.write(take)

    def tidy(self) -> None:
        """Upkeep, off the webhooks' path: the dispatcher calls it once a second. Once every
        TIDY_EVERY, the lanes of messages whose writes are done are forgotten (each edited card
        had one): a lane without jobs costs the table a row, never a claim a look, so an idle
        relay need not write for it each second."""
        self._store.tidy()
        now = time.monotonic()
        if not self._store.opened or now - self._tidied_at < TIDY_EVERY:
            return
        self._tidied_at = now

        def tidy(tx: Tx) -> None:
            tx.execute(
                "DELETE FROM lanes WHERE token IS NULL AND lane LIKE '%#%'"
                " AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.lane = lanes.lane)"
            )
            if not self.durable:
                tx.execute(
                    "DELETE FROM jobs WHERE state = 'dead' AND id <= (SELECT id FROM jobs"
                    " WHERE state = 'dead' ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (MEMORY_DEAD_KEPT,),
                )

        self._store.write(tidy)

    def hears(self) -> bool:
        """Whether news of other processes' work reaches `subscribe`'s callback now."""
        return self._store.hears()

    def subscribe(self, on_news: Callable[[], None]) -> None:
        """Call `on_news` when another process queues work or frees a lane, where the store
        can tell (PostgreSQL's NOTIFY); the dispatcher polls anyway."""
        self._store.listen(on_news)

    def unsubscribe(self) -> None:
        self._store.stop_listening()

    def next_turn(self, destination: Destination, *, now: float) -> float:
        """When the chat's next turn is (for tests and tools: nothing is taken)."""
        return self._store.read(
            lambda tx: tx.at.to_local(
                next_turn(
                    tx,
                    destination.chat_key,
                    group=destination.is_group,
                    now=tx.at.db,
                    pace=self._pace,
                )
            ),
            now=now,
        )

    # --- rows ------------------------------------------------------------------------------------

    def _take(
        self,
        tx: Tx,
        lane: str,
        destination: Destination,
        taken: list[Job],
        by: Claimant,
        retired: list[tuple[Job, Dead]] | None = None,
    ) -> Claim:
        """The claim of `taken`: their attempt counted before it is made (a process that dies
        mid-attempt leaves that count behind), and the lane leased under `token`."""
        rows.count_attempt(tx, [job.id for job in taken])
        counted = [_counted(job) for job in taken]
        claim = Claim(lane, destination, by.token, counted, retired or [])
        tx.execute(
            "UPDATE lanes SET holder = ?, token = ?, until = ? WHERE lane = ?",
            (str(by.holder), by.token, tx.at.db + by.lease_for, lane),
        )
        return replace(claim, leased_until=tx.at.local + by.lease_for)

    def _job(self, row: Any, tx: Tx) -> Job:
        return rows.job_from_row(row, tx.at, store=self.name, home=self.home)


def _lane(store: str, row: Any, tx: Tx, holder: Holder, in_flight: Container[str]) -> Lane:
    free = row_is_free(row, now=tx.at.db, me=holder, in_flight=in_flight)
    until = row["until"]
    return Lane(
        str(row["lane"]),
        rows.destination_of(store, row["chat"], row["thread"]),
        tx.at.to_local(_due_at(row, tx)),
        free,
        held_until=tx.at.to_local(float(until)) if not free and until is not None else None,
    )


def _in_db(tx: Tx, local: float | None) -> float | None:
    return None if local is None else tx.at.to_db(local)


def _due_at(row: Any, tx: Tx) -> float:
    """When a job is due (the store's time), guarded: after the clock stepped back, now,
    not an hour late."""
    return guarded(row["next_attempt_at"], row["scheduled_at"], tx.at.db)


def _counted(job: Job) -> Job:
    """The job as its claim left it: one more attempt, as the claim's statement counted."""
    return replace(job, attempts=job.attempts + 1, unsure_attempts=job.unsure_attempts + 1)
