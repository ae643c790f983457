"""The scheduled queue's contract (spool/queue.py), held by every backend: the spool file and
memory. A second backend runs these same tests."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from relay_app.core.alerts import ALERT_KEY, IssueAlert, alert_as_json
from relay_app.core.errors import QueueFull
from relay_app.core.outcomes import Dead, Delivered, Outcome, RetryAt
from relay_app.core.pacing import GROUP_INTERVAL
from relay_app.core.routing import Destination
from relay_app.delivery.render import Renderer
from relay_app.glitchtip.webhook import read_kept
from relay_app.message.formatting import format_alert
from relay_app.spool import (
    Admin,
    Claim,
    Claimant,
    Holder,
    Job,
    Lane,
    Later,
    Precedence,
    Queue,
    Settlement,
    Taking,
    on_store,
    this_process,
)
from relay_app.spool.database import MEMORY, Database
from relay_app.spool.holders import _start_time
from relay_app.spool.model import NewJob
from relay_app.spool.pacer import MAX_SEND_DELAY
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.store import Store, Tx
from relay_app.words import ENGLISH
from tests.conftest import CHAT_ID, DESTINATION, SOURCES, FakeTime, queue_alert
from tests.old_spools import old_postgres, old_sqlite, one_history_sqlite
from tests.payloads import issue, issue_alert, read

TOPIC = Destination(CHAT_ID, 7)
ALERT, CALL, EDIT, ANSWER = Precedence
OTHER_CHAT = Destination(-1009999)
ME = this_process()


def payload(number: int = 1) -> dict[str, object]:
    return issue_alert(issue(number))


class Tokens:
    """This process's claims in flight, as the dispatcher keeps them."""

    def __init__(self) -> None:
        self.in_flight: set[str] = set()
        self._next = 0

    def new(self) -> str:
        self._next += 1
        token = f"token-{self._next}"
        self.in_flight.add(token)
        return token


# The store's clock is the caller's (the test's fake one), or 30 s ahead of it: a queue that
# mixed up the two clocks anywhere would fail these tests in the second case.
SKEWS = {"": 0.0, "-30s-off": 30.0}


@dataclass(frozen=True)
class Place:
    """Where a test's queue keeps its alerts, to open it again as another process does."""

    where: str
    skew: float

    def store(self) -> Store:
        """A connection of its own; in memory, the one database there is (this process's)."""
        store: Store
        if self.where == MEMORY and self in _memory:
            return _memory[self]
        if self.where.startswith("postgresql://"):
            store = PgDatabase(self.where, caller_skew=self.skew)
        else:
            store = Database(self.where, skew=self.skew)
        _opened.append(store)
        if self.where == MEMORY:
            _memory[self] = store
        return store


# Every store a test opened, closed when it ends; and where each queue keeps its alerts.
_opened: list[Store] = []
_places: dict[int, Place] = {}
_memory: dict[Place, Store] = {}


def _queue_at(request: pytest.FixtureRequest, spool_path: str) -> Iterator[Queue]:
    kind, _, off = str(request.param).partition("-")
    where = {"sqlite": spool_path, "memory": MEMORY}.get(kind) or request.getfixturevalue("pg_url")
    place = Place(where, SKEWS["-" + off if off else ""])
    queue = on_store(place.store()).queue
    _places[id(queue)] = place
    yield queue
    _places.clear()
    _memory.clear()
    while _opened:
        _opened.pop().close()


@pytest.fixture(
    params=["sqlite", "memory", "postgres", "sqlite-30s-off", "memory-30s-off", "postgres-30s-off"]
)
def queue(request: pytest.FixtureRequest, spool_path: str) -> Iterator[Queue]:
    """The queue on every store: the spool file, memory, and PostgreSQL."""
    yield from _queue_at(request, spool_path)


@pytest.fixture(params=["sqlite", "postgres", "sqlite-30s-off", "postgres-30s-off"])
def spool(request: pytest.FixtureRequest, spool_path: str) -> Iterator[Queue]:
    """A queue that several processes share: the spool file, or the database."""
    yield from _queue_at(request, spool_path)


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def tokens() -> Tokens:
    return Tokens()


def admit(queue: Queue, clock: FakeTime, to: Destination = DESTINATION, *, number: int = 1) -> Job:
    """A webhook's alert queued, as the webhook queues it."""
    return queue_alert(queue, payload(number), to, now=clock.now)


def lane_of(
    queue: Queue, clock: FakeTime, tokens: Tokens, to: Destination | str = DESTINATION
) -> Lane:
    """The lane of a destination's alerts, or (by its key) a message's."""
    key = to if isinstance(to, str) else to.lane
    [lane] = [
        lane
        for lane in queue.lanes(now=clock.now, holder=ME, in_flight=tokens.in_flight)
        if lane.key == key
    ]
    return lane


def claim(
    queue: Queue,
    clock: FakeTime,
    tokens: Tokens,
    to: Destination | str = DESTINATION,
    *,
    fit: Callable[[list[Job]], int] = len,
    retire: Callable[[Job, float], Dead | None] = lambda job, now: None,
    send: bool = True,
    holder: Holder = ME,
) -> Claim | Later | None:
    return queue.claim(
        lane_of(queue, clock, tokens, to),
        Claimant(holder, tokens.new(), 10.0, tokens.in_flight),
        Taking(fit=fit, retire=retire, send=send),
        now=clock.now,
    )


def claimed(queue: Queue, clock: FakeTime, tokens: Tokens, **kwargs: object) -> Claim:
    result = claim(queue, clock, tokens, **kwargs)  # type: ignore[arg-type]
    assert isinstance(result, Claim), result
    return result


def number_of(job: Job) -> int:
    """The number its test alert was made with (its issue's title ends in it)."""
    alert = SOURCES.alert_kept_in(job.data)  # as written now, or by a relay before
    assert isinstance(alert, IssueAlert)
    return int(alert.issues[0].title.rsplit("#", 1)[1])


def numbers(claim: Claim) -> list[int]:
    return [number_of(job) for job in claim.jobs]


def settle(
    queue: Queue,
    clock: FakeTime,
    tokens: Tokens,
    claim: Claim,
    outcome: Outcome,
    *,
    pause_chat_until: float | None = None,
    error: str | None = None,
    sent: bool = True,
) -> None:
    """`sent`: whether the attempt's message left (at once); one that never did gives its
    chat's turn back."""
    queue.settle(
        claim,
        Settlement(
            [(job, outcome) for job in claim.jobs],
            error=error,
            pause_chat_until=pause_chat_until,
            sent_at=clock.now if sent else None,
        ),
        now=clock.now,
    )
    tokens.in_flight.discard(claim.token)


def sent_now(
    queue: Queue, clock: FakeTime, tokens: Tokens, to: Destination = DESTINATION, number: int = 1
) -> tuple[Job, Claim]:
    """An alert queued and claimed at once, as a webhook's first attempt claims it."""
    job = admit(queue, clock, to, number=number)
    return job, claimed(queue, clock, tokens, to=to)


def send_first(
    queue: Queue, clock: FakeTime, tokens: Tokens, to: Destination = DESTINATION
) -> None:
    """An alert the webhook sends at once and Telegram accepts: the chat's turn is used."""
    _, first = sent_now(queue, clock, tokens, to)
    settle(queue, clock, tokens, first, Delivered())


# --- adding -----------------------------------------------------------------------------------


def test_a_new_alert_is_written_ahead_of_any_attempt_and_due_at_once(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    job = admit(queue, clock)
    assert (job.kind, job.attempts, job.lane) == ("alert", 0, DESTINATION.lane)
    assert job.data == {ALERT_KEY: alert_as_json(read(payload(1)))}  # about, not its text
    assert queue.pending() == 1
    lane = lane_of(queue, clock, tokens)
    assert (lane.due_at, lane.free) == (clock.now, True)
    first = claimed(queue, clock, tokens)
    assert [(j.id, j.attempts, j.unsure_attempts) for j in first.jobs] == [(job.id, 1, 1)]
    assert not lane_of(queue, clock, tokens).free  # its attempt is in flight


def test_a_new_alert_joins_older_ones_waiting_for_its_destination(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    _, first = sent_now(queue, clock, tokens)
    settle(queue, clock, tokens, first, RetryAt(clock.now + 30))
    clock.now += 5  # the chat's turn has long come; the older alert still waits
    admit(queue, clock, number=2)
    assert claim(queue, clock, tokens) is None  # its lane's oldest is not due
    assert numbers(sent_now(queue, clock, tokens, TOPIC, 3)[1]) == [3]  # a lane of its own


def test_a_new_alert_waits_for_its_chats_turn_and_says_when_that_is(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    send_first(queue, clock, tokens)
    clock.now += 0.5
    admit(queue, clock, TOPIC)  # another topic of the same chat
    assert claim(queue, clock, tokens, TOPIC) == Later(clock.now - 0.5 + GROUP_INTERVAL)


def test_the_pending_limit_is_enforced_and_freed_by_delivery(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    queue.max_pending = 2
    admit(queue, clock)
    admit(queue, clock, OTHER_CHAT)
    with pytest.raises(QueueFull):
        admit(queue, clock)
    settle(queue, clock, tokens, claimed(queue, clock, tokens), Delivered())
    admit(queue, clock, TOPIC)
    assert queue.pending() == 2


def test_what_an_alert_is_about_grows_until_its_first_attempt_and_never_after(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    # Queued first, due once its issues' details came or their budget is spent; what came is
    # added, and it is due at once.
    about = {"webhook": payload(1)}
    job = queue.add(NewJob("alert", about, DESTINATION, ALERT, due_in=0.3), now=clock.now)
    assert claim(queue, clock, tokens) is None  # waiting for its details
    assert queue.merge(job, {"details": {"1": {"count": 3}}}, now=clock.now)
    attempt = claimed(queue, clock, tokens)
    assert attempt.jobs[0].data == {"webhook": payload(1), "details": {"1": {"count": 3}}}
    # Once an attempt may have sent it, every later one sends what that one did.
    assert not queue.merge(job, {"details": {}}, now=clock.now)
    settle(queue, clock, tokens, attempt, RetryAt(clock.now + 30, after_failure=False))
    clock.now += 30
    assert claimed(queue, clock, tokens).jobs[0].data["details"] == {"1": {"count": 3}}


def test_a_cards_edits_wait_as_one_and_go_in_the_chats_pace_apart_from_its_alerts(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    card = DESTINATION.message_lane(40)
    edit = {"message_id": 40}
    first = queue.add(NewJob("card", edit, DESTINATION, EDIT, lane=card), now=clock.now, once=True)
    again = queue.add(NewJob("card", edit, DESTINATION, EDIT, lane=card), now=clock.now, once=True)
    assert again.id == first.id  # asked again while one waits: that one, which shows it all
    send_first(queue, clock, tokens)  # an alert took the chat's turn
    assert claim(queue, clock, tokens, card) == Later(clock.now + GROUP_INTERVAL)
    clock.now += GROUP_INTERVAL
    editing = claimed(queue, clock, tokens, to=card)
    assert [job.kind for job in editing.jobs] == ["card"]
    # Asked for while the edit is under way: a new one, for the state after it.
    later = queue.add(NewJob("card", edit, DESTINATION, EDIT, lane=card), now=clock.now, once=True)
    assert later.id != first.id
    settle(queue, clock, tokens, editing, RetryAt(clock.now + 1))
    clock.now += GROUP_INTERVAL
    both = claimed(queue, clock, tokens, to=card)
    assert [job.id for job in both.jobs] == [first.id, later.id]  # one write: the card's state


def test_a_write_other_than_an_alert_that_dies_is_not_kept(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    card = DESTINATION.message_lane(41)
    queue.add(NewJob("card", {"message_id": 41}, DESTINATION, EDIT, lane=card), now=clock.now)
    settle(queue, clock, tokens, claimed(queue, clock, tokens, to=card), Dead("refused", "400"))
    assert admin_of(queue, clock).counts() == {"pending": 0, "dead": 0}
    queue.tidy()  # and its message's lane goes with it
    assert queue.lanes(now=clock.now, holder=ME, in_flight=()) == []


# --- claims -----------------------------------------------------------------------------------


def test_a_claim_takes_the_oldest_due_alerts_that_fit_and_counts_the_attempt(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    send_first(queue, clock, tokens)
    for number in range(2, 7):
        admit(queue, clock, number=number)
    assert claim(queue, clock, tokens) == Later(clock.now + GROUP_INTERVAL)
    clock.now += GROUP_INTERVAL
    first = claimed(queue, clock, tokens, fit=lambda alerts: 3)
    assert numbers(first) == [2, 3, 4]
    assert [(a.attempts, a.unsure_attempts) for a in first.jobs] == [(1, 1)] * 3
    assert claim(queue, clock, tokens) is None  # one attempt per destination at a time
    settle(queue, clock, tokens, first, Delivered())
    clock.now += GROUP_INTERVAL
    assert numbers(claimed(queue, clock, tokens)) == [5, 6]


def test_a_waiting_oldest_alert_holds_back_the_ones_behind_it(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    head, head_claim = sent_now(queue, clock, tokens)
    settle(queue, clock, tokens, head_claim, RetryAt(clock.now + 30))
    admit(queue, clock, number=2)
    clock.now += 10
    lane = lane_of(queue, clock, tokens)
    assert (lane.due_at, lane.free) == (head.received_at + 30, True)
    assert claim(queue, clock, tokens) is None  # the newer alert is due, the oldest is not
    clock.now += 20
    assert numbers(claimed(queue, clock, tokens)) == [1, 2]  # together, oldest first


def test_alerts_past_their_horizon_die_when_claimed_even_while_nothing_is_sent(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    admit(queue, clock)
    admit(queue, clock, number=2)
    too_old = Dead("too_old", "older than RELAY_RETRY_MAX_AGE")

    def retire(job: Job, now: float) -> Dead | None:
        return too_old if number_of(job) == 1 else None

    result = claimed(queue, clock, tokens, retire=retire, send=False)
    assert (result.jobs, [(a.label, d) for a, d in result.retired]) == (
        [],
        [(result.retired[0][0].label, too_old)],
    )
    assert queue.pending() == 1
    assert claim(queue, clock, tokens, send=False) is None  # nothing more to retire


def test_topics_of_one_chat_take_its_turns_in_the_order_their_alerts_arrived(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    for thread in (2, 1, 3):  # each topic had an alert before, in another order
        clock.now += GROUP_INTERVAL
        send_first(queue, clock, tokens, Destination(CHAT_ID, thread))
    for thread in (3, 1, 2):
        admit(queue, clock, Destination(CHAT_ID, thread))
    lanes = queue.lanes(now=clock.now, holder=ME, in_flight=())
    assert [lane.destination.thread for lane in lanes] == [3, 1, 2]  # the oldest alert's first


def test_a_settled_attempt_frees_its_destination_with_each_alerts_outcome(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    send_first(queue, clock, tokens)
    for number in (2, 3, 4):
        admit(queue, clock, number=number)
    clock.now += GROUP_INTERVAL
    digest = claimed(queue, clock, tokens)
    two, three, four = digest.jobs
    queue.settle(
        digest,
        Settlement(
            [
                (two, Dead("exhausted", "used up")),
                (three, RetryAt(clock.now + 1)),
                (four, RetryAt(clock.now + 1)),
            ]
        ),
        now=clock.now,
    )
    assert queue.pending() == 2
    lane = lane_of(queue, clock, tokens)
    assert (lane.free, lane.due_at) == (True, clock.now + 1)


def test_a_429_pauses_the_chat(queue: Queue, clock: FakeTime, tokens: Tokens) -> None:
    _first, first_claim = sent_now(queue, clock, tokens)
    settle(
        queue,
        clock,
        tokens,
        first_claim,
        RetryAt(clock.now + 40, after_failure=False),
        pause_chat_until=clock.now + 40,
    )
    admit(queue, clock, TOPIC)
    clock.now += 5
    assert claim(queue, clock, tokens, TOPIC) == Later(clock.now + 35)


def test_a_refused_message_gives_back_its_turn_so_only_telegrams_pause_holds_the_chat(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    send_first(queue, clock, tokens)
    admit(queue, clock, number=2)
    clock.now += GROUP_INTERVAL
    refused = claimed(queue, clock, tokens)
    settle(
        queue,
        clock,
        tokens,
        refused,
        RetryAt(clock.now + 1, after_failure=False),
        pause_chat_until=clock.now + 1,
    )
    clock.now += 1
    # Counted, the refused message would hold the group a whole turn more (GROUP_INTERVAL).
    assert numbers(claimed(queue, clock, tokens)) == [2]


def test_a_claim_whose_message_never_left_gives_back_its_turn(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    # Given back unsent (its lease ran out before its attempt, or the message could not even
    # be composed): no message took the turn, so the next may go at once.
    send_first(queue, clock, tokens)
    admit(queue, clock, number=2)
    clock.now += GROUP_INTERVAL
    unsent = claimed(queue, clock, tokens)
    settle(queue, clock, tokens, unsent, RetryAt(clock.now, after_failure=False), sent=False)
    assert numbers(claimed(queue, clock, tokens)) == [2]


@pytest.mark.parametrize("left_after", [0.4, 3600.0])
def test_a_chats_pace_runs_from_when_its_message_left_not_from_its_turn(
    queue: Queue, clock: FakeTime, tokens: Tokens, left_after: float
) -> None:
    first, first_claim = sent_now(queue, clock, tokens)
    turn = clock.now
    queue.settle(
        first_claim,
        Settlement([(first, Delivered())], sent_at=turn + left_after),
        now=turn + left_after,
    )
    admit(queue, clock, number=2)
    clock.now = turn + GROUP_INTERVAL
    # A clock that stepped forward an hour meanwhile moves the send by MAX_SEND_DELAY at most.
    left = turn + min(left_after, MAX_SEND_DELAY)
    assert claim(queue, clock, tokens) == Later(left + GROUP_INTERVAL)
    clock.now = left + GROUP_INTERVAL
    assert numbers(claimed(queue, clock, tokens)) == [2]


def test_a_moved_alert_goes_first_in_its_new_destination(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    _, in_topic = sent_now(queue, clock, tokens, TOPIC)
    admit(queue, clock, DESTINATION, number=2)  # the chat itself, paced
    settle(
        queue,
        clock,
        tokens,
        in_topic,
        RetryAt(clock.now, after_failure=False, destination=DESTINATION),
    )
    clock.now += GROUP_INTERVAL
    assert numbers(claimed(queue, clock, tokens)) == [1, 2]
    assert [lane.destination for lane in queue.lanes(now=clock.now, holder=ME, in_flight=())] == [
        DESTINATION
    ]


def test_a_delivery_makes_what_waits_for_its_chat_due_now(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    _failed, failed_claim = sent_now(queue, clock, tokens, TOPIC)
    settle(queue, clock, tokens, failed_claim, RetryAt(clock.now + 30))
    _elsewhere, elsewhere_claim = sent_now(queue, clock, tokens, OTHER_CHAT)
    settle(queue, clock, tokens, elsewhere_claim, RetryAt(clock.now + 30))
    clock.now += GROUP_INTERVAL
    send_first(queue, clock, tokens)  # the chat itself: Telegram accepts a message there
    assert lane_of(queue, clock, tokens, TOPIC).due_at == clock.now
    other = lane_of(queue, clock, tokens, OTHER_CHAT).due_at
    assert other == pytest.approx(clock.now + 30 - GROUP_INTERVAL)  # another chat


def test_when_telegram_is_back_every_alert_that_waited_for_it_is_due(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    _failed, failed_claim = sent_now(queue, clock, tokens)
    settle(queue, clock, tokens, failed_claim, RetryAt(clock.now + 30))
    _paused, paused_claim = sent_now(queue, clock, tokens, OTHER_CHAT)
    settle(queue, clock, tokens, paused_claim, RetryAt(clock.now + 40, after_failure=False))
    clock.now += 3
    assert queue.after_recovery(clock.now) == 2  # both wait; the one that failed goes now
    assert lane_of(queue, clock, tokens).due_at == clock.now
    assert lane_of(queue, clock, tokens, OTHER_CHAT).due_at == clock.now + 37  # a 429 stands


def test_a_clock_stepped_back_never_stalls_a_destination(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    send_first(queue, clock, tokens)
    _failed, failed_claim = sent_now(queue, clock, tokens, OTHER_CHAT)
    settle(queue, clock, tokens, failed_claim, RetryAt(clock.now + 30))
    clock.now -= 3600  # NTP, a VM resumed: every stored time is "an hour in the future"
    assert lane_of(queue, clock, tokens, OTHER_CHAT).due_at == clock.now  # not in an hour
    # The chat's last send no longer holds it back: the webhook may send at once.
    assert numbers(sent_now(queue, clock, tokens, number=2)[1]) == [2]
    clock.now += 120  # minutes later, still "an hour before" every stored time: no stall
    assert lane_of(queue, clock, tokens, OTHER_CHAT).due_at == clock.now


def test_in_flight_claims_are_never_taken_over_whatever_the_clock_says(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    _, admission_claim = sent_now(queue, clock, tokens)
    clock.now += 600  # stepped forward during a slow attempt
    assert not lane_of(queue, clock, tokens).free
    assert claim(queue, clock, tokens) is None
    tokens.in_flight.discard(admission_claim.token)  # ended without settling (a spool error)
    assert lane_of(queue, clock, tokens).free  # this process takes its lease back


def test_stopping_frees_what_this_process_holds(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    sent_now(queue, clock, tokens)
    sent_now(queue, clock, tokens, OTHER_CHAT)
    assert queue.release(ME) == 2
    assert all(lane.free for lane in queue.lanes(now=clock.now, holder=ME, in_flight=()))


# --- the spool file: shared by processes ------------------------------------------------------


def another_process(spool: Queue) -> Queue:
    """The same store through a connection of its own, as another worker has it."""
    return on_store(_places[id(spool)].store()).queue


def admin_of(spool: Queue, clock: FakeTime | None = None) -> Admin:
    """What `relay-app spool` and the metrics read, for the same store."""
    now = clock if clock is not None else FakeTime()
    return Admin(_places[id(spool)].store(), clock=now)


def holder_on_this_host(pid: int) -> Holder:
    return replace(ME, pid=pid, started=_start_time(pid))


def claimed_by(spool: Queue, clock: FakeTime, holder: Holder) -> Claim:
    """An alert queued and claimed by `holder`, through a connection of its own: another
    worker, or a relay on another host, mid-attempt."""
    other = another_process(spool)
    admit(other, clock)
    tokens = Tokens()
    return claimed(other, clock, tokens, holder=holder)


def test_a_lease_of_a_process_that_is_gone_is_free_at_once(
    spool: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    gone = replace(ME, pid=2**22 + 12345, started="1")  # past the kernel's highest pid
    claimed_by(spool, clock, gone)  # it was mid-attempt when it died
    assert lane_of(spool, clock, tokens).free  # no waiting for its lease to run out
    clock.now += GROUP_INTERVAL
    [alert] = claimed(spool, clock, tokens).jobs
    assert (alert.attempts, alert.unsure_attempts) == (2, 2)  # its attempt may have arrived


def test_a_live_process_on_this_host_keeps_its_lease_past_any_time(
    spool: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    parent = holder_on_this_host(os.getppid())
    claimed_by(spool, clock, parent)
    clock.now += 86400
    assert not lane_of(spool, clock, tokens).free


def test_a_lease_from_another_host_runs_out_with_its_time(
    spool: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    elsewhere = Holder("another-host", "boot", 1, "1")
    admit(spool, clock)
    clock.now += 1
    assert claimed(another_process(spool), clock, tokens, holder=elsewhere).jobs
    clock.now += 10  # its lease_for
    assert not lane_of(spool, clock, tokens).free
    clock.now += 0.1
    assert lane_of(spool, clock, tokens).free


def test_a_webhooks_own_claim_holds_off_another_host_while_its_attempt_can_run(
    spool: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    """Telegram slow (3 s, inside a 5 s timeout): the other relay must not take the lane over
    at the chat's next turn, a second later, and send the alert a second time."""
    elsewhere = Holder("another-host", "boot", 1, "1")
    claimed_by(spool, clock, elsewhere)
    clock.now += GROUP_INTERVAL + 2.0
    assert not lane_of(spool, clock, tokens).free
    assert claim(spool, clock, tokens) is None  # nothing to claim: the lane is held
    clock.now += 7.9  # past its lease_for (claim's 10 s): the attempt cannot be running any more
    assert lane_of(spool, clock, tokens).free


@pytest.mark.parametrize(
    "other",
    [
        replace(ME, pidns="4026531999"),  # another container, given the same hostname
        replace(ME, pidns=""),  # named by a relay that did not record its namespace
    ],
)
def test_the_same_pid_in_another_pid_namespace_is_judged_by_time(
    spool: Queue, clock: FakeTime, tokens: Tokens, other: Holder
) -> None:
    # Our own pid, alive here: "here", it would keep the lane for good; "gone", lose it at once.
    claimed_by(spool, clock, other)
    clock.now += 1
    assert not lane_of(spool, clock, tokens).free
    clock.now += 9.1
    assert lane_of(spool, clock, tokens).free


def test_a_holder_reads_back_as_written_and_as_older_relays_wrote_it() -> None:
    assert Holder.parse(str(ME)) == ME
    assert ME.pidns.isdigit()
    assert Holder.parse("web-1/ab12cd34/4242/98765") == Holder("web-1", "ab12cd34", 4242, "98765")
    assert not Holder.parse("web-1/ab12cd34/4242/98765").is_here(ME)  # type: ignore[union-attr]
    assert Holder.parse("not a holder") is None


def follow_up(queue: Queue, *, then_fail: bool) -> Callable[[Tx], None]:
    """What follows a delivery, as the jobs hand it to `settle`: a write to another chat
    (a card's edit, a step), and then, if `then_fail`, a statement the database refuses."""

    def record(tx: Tx) -> None:
        queue.add_in(tx, NewJob("alert", {"webhook": payload(9)}, OTHER_CHAT, ALERT))
        if then_fail:
            tx.execute("UPDATE no_such_table SET x = 1")

    return record


def test_what_follows_a_delivery_is_recorded_in_the_same_unit_of_work(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    job, first = sent_now(queue, clock, tokens)
    settled = queue.settle(
        first,
        Settlement([(job, Delivered())], sent_at=clock.now),
        now=clock.now,
        also=follow_up(queue, then_fail=False),
    )
    assert settled.also_failed is None
    assert [numbers(claimed(queue, clock, tokens, to=OTHER_CHAT))] == [[9]]
    assert queue.pending() == 1  # the delivered alert went, the follow-up waits


def test_a_follow_up_that_fails_leaves_nothing_of_itself_and_the_delivery_recorded(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    job, first = sent_now(queue, clock, tokens)
    admit(queue, clock, number=2)
    settled = queue.settle(
        first,
        Settlement([(job, Delivered())], sent_at=clock.now),
        now=clock.now,
        also=follow_up(queue, then_fail=True),
    )
    assert settled.also_failed is not None
    assert "no_such_table" in str(settled.also_failed)
    assert settled.recorded
    assert not settled.lease_lost
    assert queue.pending() == 1  # alert 2: neither alert 1 nor the half-made follow-up
    clock.now += GROUP_INTERVAL
    assert numbers(claimed(queue, clock, tokens)) == [2]  # the lane was freed


def test_an_attempt_that_delivered_nothing_has_nothing_follow_it(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    job, first = sent_now(queue, clock, tokens)
    settled = queue.settle(
        first,
        Settlement([(job, RetryAt(clock.now + 1))]),
        now=clock.now,
        also=follow_up(queue, then_fail=False),
    )
    assert settled.also_failed is None
    assert queue.pending() == 1  # only the alert, waiting to retry


def test_a_settlement_without_the_lease_records_only_deliveries(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    admission, admission_claim = sent_now(queue, clock, tokens)
    admit(queue, clock, OTHER_CHAT, number=2)
    queue.release(ME)  # a person's tool, or a stop, freed it: the claim no longer holds
    settled = queue.settle(
        admission_claim,
        Settlement([(admission, RetryAt(clock.now + 30))]),
        now=clock.now,
    )
    assert settled.lease_lost
    assert lane_of(queue, clock, tokens).due_at == clock.now  # untouched
    lost = queue.settle(admission_claim, Settlement([(admission, Delivered())]), now=0)
    assert lost.lease_lost
    assert queue.pending() == 1  # but a delivered alert goes, whoever holds it


def test_workers_claiming_at_once_never_share_an_alert(
    spool: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    destinations = [Destination(-100 - n) for n in range(20)]
    for destination in destinations:
        for number in range(3):
            admit(spool, clock, destination, number=number)
    claims: list[Claim] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        mine = another_process(spool)
        holder = Holder(f"host-{n}", "boot", n, "1")  # each its own: never "this process"
        for lane in mine.lanes(now=clock.now, holder=holder, in_flight=()):
            result = mine.claim(
                lane,
                Claimant(holder, f"{n}-{lane.destination.lane}", 10, ()),
                Taking(fit=len, retire=lambda alert, now: None, send=True),
                now=clock.now,
            )
            if isinstance(result, Claim):
                with lock:
                    claims.append(result)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    ids = [job.id for claim in claims for job in claim.jobs]
    assert sorted(ids) == list(range(1, 61))  # every alert claimed, and only once


def test_a_dead_letter_of_used_up_attempts_gets_a_second_chance_when_its_chat_accepts_one(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    admin = admin_of(queue, clock)
    admitted = []
    for to, dead in (
        (TOPIC, Dead("exhausted", "used up")),
        (OTHER_CHAT, Dead("refused", "403")),
        (DESTINATION, Dead("exhausted", "used up")),
    ):
        clock.now += GROUP_INTERVAL
        admission, admission_claim = sent_now(queue, clock, tokens, to)
        settle(queue, clock, tokens, admission_claim, dead)
        admitted.append(admission)
    refused = admitted[1]
    clock.now += 60
    send_first(queue, clock, tokens, OTHER_CHAT)  # another chat: nothing revived
    assert admin.counts() == {"pending": 0, "dead": 3}
    clock.now += GROUP_INTERVAL
    accepted, accepted_claim = sent_now(queue, clock, tokens, Destination(CHAT_ID, 99))
    settled = queue.settle(
        accepted_claim,
        Settlement([(accepted, Delivered())], "answered", second_chance_since=clock.now - 30),
        now=clock.now,
    )
    assert settled.revived == 0  # their horizons began too long ago
    clock.now += GROUP_INTERVAL
    again, again_claim = sent_now(queue, clock, tokens, Destination(CHAT_ID, 98))
    revived = queue.settle(
        again_claim,
        Settlement([(again, Delivered())], "answered", second_chance_since=clock.now - 3600),
        now=clock.now,
    )
    assert revived.revived == 2  # the chat's exhausted ones, never the refused one
    clock.now += GROUP_INTERVAL
    [back] = claimed(queue, clock, tokens, to=TOPIC).jobs
    assert back.second_chance
    assert [a.id for a in admin.alerts("dead")] == [refused.id]


def test_dead_letters_can_be_requeued_with_a_fresh_horizon_and_purged(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    admin = admin_of(queue, clock)
    ids = []
    for to in (DESTINATION, TOPIC, OTHER_CHAT):
        clock.now += GROUP_INTERVAL
        admission, admission_claim = sent_now(queue, clock, tokens, to)
        assert admission.id is not None
        dead = Dead("too_old", "too old")
        settle(queue, clock, tokens, admission_claim, dead, error="Connection refused")
        ids.append(admission.id)
    clock.now += 86400
    requeued = admin.requeue([ids[0], ids[0] + 100])
    assert {alert_id: found.state for alert_id, found in requeued.items()} == {
        ids[0]: "dead",
        ids[0] + 100: None,
    }
    [again] = admin.alerts("pending")
    assert (again.id, again.retry_from, again.attempts, again.last_error) == (
        ids[0],
        clock.now,
        0,
        "Connection refused",
    )
    assert lane_of(queue, clock, tokens).due_at == clock.now
    assert admin.requeue([ids[0]])[ids[0]].state == "pending"
    assert admin.purge_dead(received_before=clock.now - 3600) == 2  # the other two
    assert admin.counts() == {"pending": 1, "dead": 0}
    assert admin.purge_dead(received_before=clock.now) == 0  # pending ones are never purged
    assert admin.requeue_all_dead() == 0


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    def ours() -> int:
        # The deadline watchdog is one thread per process, started at first use and kept.
        return sum(1 for t in threading.enumerate() if t.name != "relay-deadline-watchdog")

    before = ours()
    yield
    assert ours() <= before


def test_jobs_from_another_process_are_read_as_written(
    spool: Queue, clock: FakeTime, tokens: Tokens, tmp_path: Path
) -> None:
    long_one = issue_alert(issue(1, title="Ошибка ✓ " + "x" * 3000))
    queue_alert(spool, long_one, TOPIC, now=clock.now, mentions=("@ada",))
    [job] = claimed(another_process(spool), clock, tokens, to=TOPIC).jobs
    assert (job.data, job.destination, job.received_at) == (
        {ALERT_KEY: alert_as_json(read(long_one)), "mentions": ["@ada"]},
        TOPIC,
        clock.now,
    )


# --- stores from before one set of statements ---------------------------------------------------


def _old_sqlite(path: str, now: float) -> None:
    """A spool file as the relay before left it (schema 6): one alert pending, a 429's pause."""
    with sqlite3.connect(path) as db:
        old_sqlite(db, 6)
        db.execute(OLD_ALERT, old_values(now))
        db.execute("INSERT INTO lanes (lane, chat, thread) VALUES (?, ?, NULL)", (LANE, CHAT))
        db.execute("INSERT INTO pauses VALUES (?, ?, ?)", (CHAT, now + 30, now))
    db.close()


def _old_postgres(url: str, now: float) -> None:
    """A database as the relay before left it (schema 3), with the same."""
    with psycopg.connect(url, autocommit=True) as pg:
        old_postgres(pg, 3)
        pg.execute(OLD_ALERT.replace("?", "%s"), old_values(now))
        pg.execute("INSERT INTO lanes (lane, chat, thread) VALUES (%s, %s, NULL)", (LANE, CHAT))
        pg.execute("INSERT INTO chats VALUES (%s, %s, %s)", (CHAT, now + 30, now))


LANE, CHAT = DESTINATION.lane, DESTINATION.chat_key
OLD_ALERT = (
    "INSERT INTO alerts (chat, thread, lane, received_at, retry_from, html, text, fallback,"
    " attempts, unsure_attempts, next_attempt_at, scheduled_at)"
    " VALUES (?, NULL, ?, ?, ?, ?, ?, ?, 1, 1, ?, ?)"
)


OLD_MESSAGE = format_alert(read_kept(payload(1)), ENGLISH)


def old_values(now: float) -> tuple[object, ...]:
    text = OLD_MESSAGE.text
    return (CHAT, LANE, now, now, OLD_MESSAGE.html, text, text, now, now)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_spool_from_the_relay_before_is_upgraded_in_place(
    kind: str, request: pytest.FixtureRequest, spool_path: str, clock: FakeTime, tokens: Tokens
) -> None:
    where = spool_path if kind == "sqlite" else request.getfixturevalue("pg_url")
    (_old_sqlite if kind == "sqlite" else _old_postgres)(where, clock.now)
    queue = on_store(Place(where, 0.0).store()).queue
    try:
        assert queue.pending() == 1  # counted where the limit is checked
        assert queue.next_turn(DESTINATION, now=clock.now) == clock.now + 30  # the 429 holds
        [lane] = queue.lanes(now=clock.now, holder=ME, in_flight=())
        assert (lane.destination, lane.due_at, lane.free) == (DESTINATION, clock.now, True)
        admit(queue, clock)
        assert queue.pending() == 2
        clock.now += 30
        [old, new] = claimed(queue, clock, tokens).jobs
        assert (old.attempts, old.unsure_attempts, new.attempts) == (2, 2, 1)
        # The alert rendered before jobs held data goes as it was rendered then.
        assert (old.kind, set(old.data)) == ("alert", {"rendered"})
        shown = Renderer(ENGLISH, late_after=3600, sources=SOURCES).alert(old)
        assert (shown.html, shown.text) == (OLD_MESSAGE.html, OLD_MESSAGE.text)
    finally:
        while _opened:
            _opened.pop().close()


# --- alerts first -----------------------------------------------------------------------------


def add_answer(queue: Queue, clock: FakeTime, message_id: int) -> Job:
    """An answer under someone's message in the chat (a command's, say)."""
    said = {"say": {"word": "issues_none", "values": {}}, "message_id": message_id}
    lane = DESTINATION.message_lane(message_id)
    return queue.add(NewJob("reply", said, DESTINATION, ANSWER, lane=lane), now=clock.now)


def next_write(queue: Queue, clock: FakeTime, tokens: Tokens) -> Claim | None:
    """What a dispatcher's pass sends next: the first lane, in the order the queue gives them,
    whose claim gets the chat's turn (one job a write); delivered."""
    for lane in queue.lanes(now=clock.now, holder=ME, in_flight=tokens.in_flight):
        got = queue.claim(
            lane,
            Claimant(ME, tokens.new(), 10.0, tokens.in_flight),
            Taking(fit=lambda jobs: 1, retire=lambda job, now: None, send=True),
            now=clock.now,
        )
        if isinstance(got, Claim) and got.jobs:
            settle(queue, clock, tokens, got, Delivered())
            return got
    return None


def test_a_due_alert_takes_its_chats_next_turn_before_answers_queued_earlier(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    send_first(queue, clock, tokens)  # the chat's turn is used
    for message_id in (500, 501, 502):
        add_answer(queue, clock, message_id)
    clock.now += 1
    admit(queue, clock, number=2)
    lanes = queue.lanes(now=clock.now, holder=ME, in_flight=tokens.in_flight)
    assert next(lane.key for lane in lanes) == DESTINATION.lane  # the alert's lane first
    clock.now += GROUP_INTERVAL
    # Tried first all the same (another process's pass, say), an answer leaves the turn.
    assert claim(queue, clock, tokens, DESTINATION.message_lane(500)) is None
    alert = claimed(queue, clock, tokens)
    assert numbers(alert) == [2]
    settle(queue, clock, tokens, alert, Delivered())
    clock.now += GROUP_INTERVAL
    assert isinstance(claim(queue, clock, tokens, DESTINATION.message_lane(500)), Claim)


def test_a_chats_writes_go_alerts_then_calls_and_summaries_then_edits_then_answers(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    card = DESTINATION.message_lane(41)
    add_answer(queue, clock, 500)
    queue.add(NewJob("card", {"message_id": 41}, DESTINATION, EDIT, lane=card), now=clock.now)
    called = {"say": {"word": "escalation_call", "values": {}}, "message_id": 41}
    queue.add(NewJob("reply", called, DESTINATION, CALL, lane=card), now=clock.now)
    summary: dict[str, object] = {"summary": {}}
    queue.add(NewJob("alert", summary, DESTINATION, CALL), now=clock.now)
    admit(queue, clock, number=3)
    order = []
    for _ in range(5):
        clock.now += GROUP_INTERVAL
        sent = next_write(queue, clock, tokens)
        assert sent is not None
        order.append([(job.kind, job.precedence) for job in sent.jobs])
    assert order == [
        [("alert", ALERT)],
        [("reply", CALL)],  # before the edit queued earlier in its lane
        [("alert", CALL)],  # the summary, queued after the call, behind the alert in its lane
        [("card", EDIT)],
        [("reply", ANSWER)],
    ]


def test_a_fresh_alert_holds_answers_back_and_an_alert_waiting_to_retry_does_not(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    add_answer(queue, clock, 500)
    about = {"webhook": payload(1)}
    # Held for its webhook, which claims it next (due at the webhook's deadline).
    held = queue.add(NewJob("alert", about, DESTINATION, ALERT, due_in=9.25), now=clock.now)
    assert claim(queue, clock, tokens, DESTINATION.message_lane(500)) is None
    lane = lane_of(queue, clock, tokens)
    webhooks = queue.claim(
        lane,
        Claimant(ME, tokens.new(), 10.0, tokens.in_flight),
        Taking(fit=len, retire=lambda job, now: None, send=True),
        now=clock.now,
        oldest=held.id,
    )
    assert isinstance(webhooks, Claim)
    settle(queue, clock, tokens, webhooks, RetryAt(clock.now + 60))  # Telegram failed it
    clock.now += GROUP_INTERVAL
    # Waiting a minute for its retry, it leaves the chat's turns to what can go now.
    assert isinstance(claim(queue, clock, tokens, DESTINATION.message_lane(500)), Claim)


def test_answers_never_count_against_the_cap_and_few_wait_for_a_chat(
    queue: Queue, clock: FakeTime, tokens: Tokens
) -> None:
    answers = on_store(_places[id(queue)].store()).answers
    queue.max_pending = 1

    def answer(message_id: int, to: Destination = DESTINATION) -> Job | None:
        said = {"say": {"word": "issues_none", "values": {}}, "message_id": message_id}
        lane = to.message_lane(message_id)
        return answers.add("reply", said, to, lane=lane, most_waiting=3, now=clock.now)

    assert all(answer(number) is not None for number in (500, 501, 502))
    assert answer(503) is None  # three wait for the chat already
    assert answer(504, OTHER_CHAT) is not None  # another chat's are its own
    assert answers.waiting(DESTINATION, now=clock.now) == 3
    admit(queue, clock)  # the alert fits under a cap of one: answers are not counted
    with pytest.raises(QueueFull):
        admit(queue, clock, OTHER_CHAT)
    assert queue.pending() == 5  # what waits, of every kind
    [job] = next_write(queue, clock, tokens).jobs  # type: ignore[union-attr]
    assert job.kind == "alert"


def test_relays_answering_at_once_keep_to_the_chats_answers_between_them(
    spool: Queue, clock: FakeTime
) -> None:
    place = _places[id(spool)]
    start = threading.Barrier(12)

    def answer(number: int) -> bool:
        answers = on_store(place.store()).answers
        said = {"say": {"word": "issues_none", "values": {}}, "message_id": number}
        start.wait(timeout=10)
        lane = DESTINATION.message_lane(number)
        added = answers.add("reply", said, DESTINATION, lane=lane, most_waiting=3, now=clock.now)
        return added is not None

    with ThreadPoolExecutor(12) as pool:
        added = list(pool.map(answer, range(600, 612)))
    assert sum(added) == 3


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_what_waited_when_alerts_first_came_takes_its_precedence(
    kind: str, request: pytest.FixtureRequest, spool_path: str, clock: FakeTime
) -> None:
    where = spool_path if kind == "sqlite" else request.getfixturevalue("pg_url")
    waiting: dict[str, list[dict[str, Any]]] = {
        "alert": [
            {"webhook": payload(1)},
            {"rendered": {"html": "x"}},
            {"handoff": {}},
            {"summary": {}},
            {"silence_over": {}},
            {"link_card": {}, "message_id": 7},
        ],
        "reply": [
            {"say": {"word": "escalation_call", "values": {}}, "message_id": 7},
            {"say": {"word": "snooze_back_time", "values": {}}, "message_id": 7},
            {"say": {"word": "issues_answer", "values": {}}, "message_id": 8},
        ],
        "reaction": [{"emoji": "✍", "say": {"word": "comment_posted"}, "message_id": 9}],
        "card": [{"message_id": 7}],
    }
    rows = [
        (kind_, json.dumps(data, ensure_ascii=False))
        for kind_, all_ in waiting.items()
        for data in all_
    ]
    insert = (
        "INSERT INTO jobs (kind, data, chat, lane, received_at, retry_from, next_attempt_at,"
        " scheduled_at) VALUES (?, ?, ?, ?, 0, 0, 0, 0)"
    )
    if kind == "sqlite":
        with sqlite3.connect(where) as db:
            one_history_sqlite(db, 17)
            db.executemany(insert, [(k, d, CHAT, LANE) for k, d in rows])
        db.close()
    else:
        with psycopg.connect(where, autocommit=True) as pg:
            old_postgres(pg, 17)
            pg.cursor().executemany(
                insert.replace("?", "%s"), [(k, d, CHAT, LANE) for k, d in rows]
            )
    store = Place(where, 0.0).store()
    queue = on_store(store).queue
    try:
        assert queue.pending() == len(rows)
        found = store.read(lambda tx: tx.all("SELECT precedence FROM jobs ORDER BY id"))
        assert [int(row["precedence"]) for row in found] == [0, 0, 1, 1, 1, 3, 1, 1, 3, 3, 2]
        counted = store.read(lambda tx: tx.one("SELECT alerts FROM pending_count"))
        assert counted["alerts"] == 2  # the alerts alone
        queue.max_pending = 3
        admit(queue, clock)
        with pytest.raises(QueueFull):
            admit(queue, clock)
    finally:
        while _opened:
            _opened.pop().close()
