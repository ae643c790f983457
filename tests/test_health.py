"""Telegram's health as the relay sees it: when it stops sending, who asks whether Telegram is
back and when, and what happens when it is."""

from __future__ import annotations

import logging

import pytest

from relay_app.delivery.health import (
    FIRST_PROBE_AFTER,
    PROBE_INTERVAL,
    Health,
    MemoryHealthStore,
    after_send_failed,
    probe_due,
)
from relay_app.spool.database import Database
from relay_app.spool.health_store import SpoolHealthStore, TelegramHealth

NOW = 1_800_000_000.0


class Recovering:
    """A queue that counts the recoveries it is told of; `waiting` jobs wait in it."""

    def __init__(self, waiting: int = 0) -> None:
        self.told: list[float] = []
        self.waiting = waiting

    def after_recovery(self, now: float) -> int:
        self.told.append(now)
        return 3

    def pending(self) -> int:
        return self.waiting


def test_a_failed_send_stops_sending_until_a_probe_a_second_later() -> None:
    suspect = after_send_failed(TelegramHealth(), NOW)
    assert (suspect.state, suspect.sending) == ("suspect", False)
    assert not probe_due(suspect, NOW + FIRST_PROBE_AFTER - 0.01, prober_gone=False)
    assert probe_due(suspect, NOW + FIRST_PROBE_AFTER, prober_gone=False)
    assert after_send_failed(suspect, NOW + 0.5) == suspect  # a second failure changes nothing


def test_a_probe_answered_at_once_means_telegram_was_never_down() -> None:
    queue = Recovering()
    health = Health(MemoryHealthStore(), queues=[queue])
    health.send_failed(NOW)
    assert health.take_probe(NOW + 1, "me", NOW + 10, prober_gone=False)
    health.probed(True, NOW + 1.1)
    assert health.current().sending
    assert queue.told == []  # a lone failure (a lost reply): each alert keeps its schedule


def test_when_telegram_comes_back_every_alert_that_waited_for_it_is_due(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queues = [Recovering(), Recovering()]
    health = Health(MemoryHealthStore(), queues=queues)
    health.send_failed(NOW)
    assert health.take_probe(NOW + 1, "me", NOW + 10, prober_gone=False)
    health.probed(False, NOW + 1.2)
    down = health.current()
    assert (down.state, down.next_probe_at) == ("down", NOW + 1.2 + PROBE_INTERVAL)
    assert not health.take_probe(NOW + 2, "me", NOW + 10, prober_gone=False)
    assert health.take_probe(NOW + 3.2, "me", NOW + 10, prober_gone=False)
    health.probed(True, NOW + 3.3)
    assert health.current().sending
    assert [queue.told for queue in queues] == [[NOW + 3.3], [NOW + 3.3]]
    assert "the 6 alert(s) waiting go now, oldest first" in caplog.text
    assert [r.levelno for r in caplog.records if "not answering" in r.getMessage()] == [
        logging.ERROR
    ]


def test_while_writes_wait_the_question_is_asked_twice_as_often() -> None:
    queue = Recovering(waiting=2)
    health = Health(MemoryHealthStore(), queues=[queue])
    health.send_failed(NOW)
    assert health.take_probe(NOW + 1, "me", NOW + 10, prober_gone=False)
    health.probed(False, NOW + 1.2)
    assert health.current().next_probe_at == NOW + 1.2 + PROBE_INTERVAL / 2
    queue.waiting = 0  # delivered or given up meanwhile: back to the full interval
    assert health.take_probe(NOW + 2.2, "me", NOW + 10, prober_gone=False)
    health.probed(False, NOW + 2.3)
    assert health.current().next_probe_at == NOW + 2.3 + PROBE_INTERVAL


def test_a_question_that_hung_past_the_interval_is_followed_at_once() -> None:
    # Telegram hung: the question asked at +1 s failed only when let go, at +4 s. The next is
    # due then, not a second later: a Telegram back after a hang is seen within a round trip.
    health = Health(MemoryHealthStore(), queues=[Recovering(waiting=1)])
    health.send_failed(NOW)
    assert health.take_probe(NOW + 1, "me", NOW + 10, prober_gone=False)
    health.probed(False, NOW + 4, asked_at=NOW + 1)
    assert health.current().next_probe_at == NOW + 4
    # One refused at once is followed an interval after it was asked, as before.
    assert health.take_probe(NOW + 4, "me", NOW + 10, prober_gone=False)
    health.probed(False, NOW + 4.01, asked_at=NOW + 4)
    assert health.current().next_probe_at == NOW + 4 + PROBE_INTERVAL / 2


def test_any_answer_from_telegram_ends_an_outage() -> None:
    queue = Recovering()
    health = Health(MemoryHealthStore(), queues=[queue])
    health.send_failed(NOW)
    health.take_probe(NOW + 1, "me", NOW + 10, prober_gone=False)
    health.probed(False, NOW + 1)
    health.answered(NOW + 2)  # an attempt started before the outage came through, say
    assert health.current().sending
    assert queue.told == [NOW + 2]


def test_a_probe_that_fails_after_a_send_came_through_changes_nothing() -> None:
    health = Health(MemoryHealthStore())
    health.send_failed(NOW)
    assert health.take_probe(NOW + 1, "me", NOW + 10, prober_gone=False)
    health.answered(NOW + 1.5)  # another worker's attempt, under way before, delivered
    health.probed(False, NOW + 2)  # this question was lost on the way
    assert health.current().sending


def test_one_process_probes_at_a_time_unless_the_prober_is_gone(tmp_path: object) -> None:
    database = Database(f"{tmp_path}/spool.sqlite3")
    worker_1 = Health(SpoolHealthStore(database))
    worker_2 = Health(SpoolHealthStore(Database(database.path)))
    worker_1.send_failed(NOW)
    assert not worker_2.current().sending  # one view for every process on the spool
    assert worker_1.take_probe(NOW + 1, "worker-1", NOW + 7, prober_gone=False)
    assert not worker_2.take_probe(NOW + 1, "worker-2", NOW + 7, prober_gone=False)
    assert worker_2.take_probe(NOW + 1, "worker-2", NOW + 7, prober_gone=True)  # it died
    assert not worker_1.take_probe(NOW + 6, "worker-1", NOW + 12, prober_gone=False)
    assert worker_1.take_probe(NOW + 8, "worker-1", NOW + 14, prober_gone=False)  # ran out


def test_a_clock_stepped_back_never_postpones_the_next_probe() -> None:
    health = Health(MemoryHealthStore())
    health.send_failed(NOW)
    assert health.take_probe(NOW + 1, "me", NOW + 10, prober_gone=False)
    health.probed(False, NOW + 1)
    assert health.take_probe(NOW - 3600, "me", NOW - 3590, prober_gone=False)
