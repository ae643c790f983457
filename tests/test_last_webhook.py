"""When GlitchTip last reached the relay (intake/record.py, spool/arrivals.py): shared through
the spool, what each webhook became kept for the last RECENT_WEBHOOKS, and kept in memory when the
spool cannot take it."""

from __future__ import annotations

from pathlib import Path

from relay_app.core.errors import SpoolError
from relay_app.intake.record import LastWebhook
from relay_app.spool.arrivals import RECENT_WEBHOOKS, SeenWebhook, SpoolArrivals
from relay_app.spool.database import Database
from tests.conftest import FakeTime


class FailingArrivals(SpoolArrivals):
    """Writes fail; reads fail too once `unreadable`."""

    unreadable = False

    def record(self, outcome: str, text: str, *, now: float | None = None) -> None:
        raise SpoolError("the disk is full")

    def last(self, now: float | None = None) -> float | None:
        if self.unreadable:
            raise SpoolError("the disk is gone")
        return super().last(now)


def gauge(last_webhook: LastWebhook) -> list[float]:
    [family] = last_webhook.collect()
    return [sample.value for sample in family.samples]


def test_every_worker_reads_the_last_webhook_any_of_them_accepted(tmp_path: Path) -> None:
    clock = FakeTime()
    path = str(tmp_path / "spool.sqlite3")
    one, other = Database(path), Database(path)
    try:
        first = LastWebhook(SpoolArrivals(one), clock=clock)
        second = LastWebhook(SpoolArrivals(other), clock=clock)
        assert second.last() is None
        assert gauge(second) == []  # never: no sample, rather than 1970
        first.accepted("silenced", False, "🔴 GlitchTip Alert\n\nZeroDivisionError")
        assert second.last() == clock.now
        assert gauge(second) == [clock.now]
        clock.now += 5
        second.accepted("failed", False, "x" * 5000)
        second.accepted("sent", True, "noted by the queue's own write")  # not again here
        assert SpoolArrivals(one).since(clock.now - 10, now=clock.now) == [
            SeenWebhook(clock.now - 5, None, "silenced", "🔴 GlitchTip Alert\n\nZeroDivisionError"),
            SeenWebhook(clock.now, None, "failed", "x" * 1000),
        ]
    finally:
        one.close()
        other.close()


def test_the_spool_keeps_the_latest_webhooks_and_a_failing_spool_leaves_memory(
    tmp_path: Path,
) -> None:
    clock = FakeTime()
    store = Database(str(tmp_path / "spool.sqlite3"))
    try:
        arrivals = SpoolArrivals(store)
        for number in range(RECENT_WEBHOOKS + 20):
            arrivals.record("silenced", f"alert {number}", now=clock.now + number)
        kept = arrivals.since(0.0, now=clock.now)
        assert len(kept) == RECENT_WEBHOOKS
        assert kept[-1].text == f"alert {RECENT_WEBHOOKS + 19}"
        arrivals_failing = FailingArrivals(store)
        failing = LastWebhook(arrivals_failing, clock=clock)
        clock.now += 1000
        failing.accepted("silenced", False, "while the disk is full")
        # The spool's, as every worker reads it, while it answers; then this process's own.
        assert failing.last() == clock.now - 1000 + RECENT_WEBHOOKS + 19
        arrivals_failing.unreadable = True
        assert failing.last() == clock.now
    finally:
        store.close()
    assert LastWebhook(None, clock=clock).last() is None
