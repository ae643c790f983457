"""When GlitchTip last reached the relay (web/last_webhook.py): shared through the spool, written
at most once a second per process, and kept in memory when the spool cannot take it."""

from __future__ import annotations

from pathlib import Path

from relay_app.core.errors import SpoolError
from relay_app.spool.arrivals import SpoolArrivals
from relay_app.spool.database import Database
from relay_app.web.last_webhook import LastWebhook


class Ticking:
    """A clock the test moves: wall and monotonic together."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def wall(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now - 1_700_000_000.0


class CountingArrivals(SpoolArrivals):
    def __init__(self, store: Database) -> None:
        super().__init__(store)
        self.writes = 0
        self.failing = False

    def record(self, now: float | None = None) -> None:
        self.writes += 1
        if self.failing:
            raise SpoolError("the disk is full")
        super().record(now)


def gauge(last_webhook: LastWebhook) -> list[float]:
    [family] = last_webhook.collect()
    return [sample.value for sample in family.samples]


def test_every_worker_reads_the_last_webhook_any_of_them_accepted(tmp_path: Path) -> None:
    clock = Ticking()
    path = str(tmp_path / "spool.sqlite3")
    one, other = Database(path), Database(path)
    try:
        first = LastWebhook(SpoolArrivals(one), clock=clock.wall, monotonic=clock.monotonic)
        second = LastWebhook(SpoolArrivals(other), clock=clock.wall, monotonic=clock.monotonic)
        assert second.last() is None
        assert gauge(second) == []  # never: no sample, rather than 1970
        first.accepted()
        assert second.last() == clock.now
        assert gauge(second) == [clock.now]
    finally:
        one.close()
        other.close()


def test_a_storm_writes_once_a_second_and_a_failing_spool_keeps_it_in_memory(
    tmp_path: Path,
) -> None:
    clock = Ticking()
    store = Database(str(tmp_path / "spool.sqlite3"))
    arrivals = CountingArrivals(store)
    last_webhook = LastWebhook(arrivals, clock=clock.wall, monotonic=clock.monotonic)
    try:
        for _ in range(50):
            last_webhook.accepted()
            clock.now += 0.01
        assert arrivals.writes == 1
        clock.now += 1.0
        last_webhook.accepted()
        assert arrivals.writes == 2
        assert arrivals.last() == clock.now
        arrivals.failing = True
        clock.now += 5.0
        last_webhook.accepted()
        assert last_webhook.last() == clock.now  # memory's, newer than the spool's
        clock.now += 0.1
        last_webhook.accepted()
        assert arrivals.writes == 4  # a failed write is tried again at the next webhook
    finally:
        store.close()
    assert LastWebhook(None, clock=clock.wall).last() is None
