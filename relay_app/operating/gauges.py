"""The gauges a scrape reads from what every worker shares: the spool and Telegram's health as
the relay sees it, so every worker reports the same numbers (metrics.py registers them)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.errors import SpoolError
from ..delivery.health import Health
from ..spool.admin import Admin
from ..spool.model import State

if TYPE_CHECKING:
    from prometheus_client.core import Metric


class SpoolGauges:
    """Gauges read at scrape time from what every worker shares (the spool, Telegram's
    health as the relay sees it), so every worker reports the same numbers."""

    def __init__(self, spool: Admin | None, health: Health | None) -> None:
        self._spool = spool
        self._health = health

    def _readings(self) -> tuple[dict[State, int], float | None] | None:
        """The counts and the oldest pending alert's arrival; None without a usable spool."""
        if self._spool is None:
            return None
        try:
            return self._spool.counts(), self._spool.oldest_pending()
        except SpoolError:
            return None

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        if self._health is not None:
            up = GaugeMetricFamily(
                "relay_telegram_up",
                "1 while Telegram answers; 0 from a failed send until it answers again (alerts "
                "wait meanwhile, and the relay asks with getMe every second while they do)",
            )
            up.add_metric([], 1 if self._health.current().sending else 0)
            yield up
        usable = GaugeMetricFamily(
            "relay_spool_usable",
            "1 when the spool can be read now; 0 when it cannot, or RELAY_SPOOL_PATH=off",
        )
        readings = self._readings()
        usable.add_metric([], 0 if readings is None else 1)
        yield usable
        if readings is None:
            return
        counts, oldest = readings
        alerts = GaugeMetricFamily(
            "relay_spool_alerts",
            "Alerts in the spool by state: pending (waiting to be sent) or dead (given up)",
            labels=["state"],
        )
        for state in ("pending", "dead"):
            alerts.add_metric([state], counts[state])
        yield alerts
        age = GaugeMetricFamily(
            "relay_spool_oldest_pending_age_seconds",
            "Age of the oldest pending alert in seconds; 0 when none is pending",
        )
        age.add_metric([], 0.0 if oldest is None else max(0.0, time.time() - oldest))
        yield age


class LocalSpoolGauge:
    """What waits in this host's own file beside a spool in PostgreSQL (RELAY_LOCAL_SPOOL_PATH),
    read at scrape time: above 0 only while the spool could not take alerts in time, until
    they move into it."""

    def __init__(self, local: Admin) -> None:
        self._local = local

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        try:
            counts = self._local.counts()
        except SpoolError:
            return
        waiting = GaugeMetricFamily(
            "relay_local_spool_alerts",
            "Alerts waiting in this host's own file because the spool in PostgreSQL could not "
            "take them in time; they are sent from there, and move into the spool when it "
            "answers again",
        )
        waiting.add_metric([], counts["pending"])
        yield waiting
