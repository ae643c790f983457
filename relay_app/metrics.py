"""Prometheus metrics: what the relay counts, and `GET /metrics` in the text format.

Counters and histograms are prometheus_client's, in its multiprocess mode under gunicorn: each
worker writes its values to files in PROMETHEUS_MULTIPROC_DIR and a scrape, answered by any
worker, adds them all up. gunicorn.conf.py makes that directory (`share_between_workers`), so
nobody has to. The spool's gauges (pending, dead, oldest pending) are not counted at all: they are
read from the spool, which every worker shares, when Prometheus scrapes.

prometheus_client chooses between in-process and file-backed values when it is first imported,
from the environment. So this module imports it only when the first `Metrics` is built, and the
gunicorn config can set the directory up first, in the master, before any worker exists.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Literal

from .errors import SpoolError

if TYPE_CHECKING:
    from prometheus_client.core import Metric

    from .health import Health
    from .spool.admin import Admin
    from .spool.model import State

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Receipt to Telegram's acceptance: a healthy send takes well under a second, pacing adds
# seconds, an outage minutes to hours (RELAY_RETRY_MAX_AGE is 6 h by default).
DELIVERY_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 21600)
# A digest holds 2 to 100 alerts (digest.MAX_ALERTS_PER_DIGEST).
DIGEST_BUCKETS = (2, 3, 5, 10, 20, 50, 100)
# A wait for the spool's lock: milliseconds when it is contended, seconds when a tool holds it.
LOCK_WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10)

WebhookOutcome = Literal["sent", "queued", "failed", "rejected"]
AttemptKind = Literal["sync", "background"]
AttemptResult = Literal["delivered", "retryable_error", "permanent_error"]
# What became of a press on an alert's button: the status GlitchTip now has, or why nothing
# changed (someone not allowed, a button the relay does not know, one no longer shown, an update
# handled before, GlitchTip or the spool failed).
PressOutcome = Literal[
    "resolved", "ignored", "unresolved", "refused", "unknown", "stale", "repeated", "failed"
]


class Metrics:
    """The relay's counters: one per app, each with a registry of its own."""

    def __init__(self, spool: Admin | None, health: Health | None = None) -> None:
        # Imported here, not at the top: see the module's docstring.
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.multiprocess_dir = os.environ.get(MULTIPROC_DIR) or None
        # The relay's own registry, not the global one: two apps in one process (tests) must
        # not share counts, and the global one would add Python's process metrics per worker.
        self.registry = CollectorRegistry()
        self.webhooks = Counter(
            "relay_webhooks",
            "Webhooks answered, by outcome (sent, queued, failed, rejected) and reason",
            ["outcome", "reason"],
            registry=self.registry,
        )
        self.attempts = Counter(
            "relay_delivery_attempts",
            "Attempts to deliver a message to Telegram, by kind (sync: the webhook's own; "
            "background: a retry or a paced send), result, and Telegram's error code",
            ["kind", "result", "error_code"],
            registry=self.registry,
        )
        self.delivery_seconds = Histogram(
            "relay_delivery_seconds",
            "Seconds from a webhook's arrival to Telegram accepting its alert",
            buckets=DELIVERY_BUCKETS,
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "relay_telegram_rate_limited",
            "429 Too Many Requests answers received from Telegram",
            registry=self.registry,
        )
        self.digest_alerts = Histogram(
            "relay_digest_alerts",
            "Alerts per digest message delivered (_count: digests sent; _sum: alerts in them)",
            buckets=DIGEST_BUCKETS,
            registry=self.registry,
        )
        self.undelivered = Counter(
            "relay_alerts_undelivered",
            "Alerts that will not reach Telegram, each logged as ALERT NOT DELIVERED with its "
            "text (dead letters, refused webhook URLs, alerts that could not be queued)",
            registry=self.registry,
        )
        self.lock_waits = Histogram(
            "relay_spool_lock_wait_seconds",
            "Waits for the spool's lock held by another connection (a busy spool, not a "
            "broken one), in seconds",
            buckets=LOCK_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.probes = Counter(
            "relay_telegram_probes",
            "Questions that post nothing (getMe) asked while Telegram was failing, by result "
            "(answered, failed)",
            ["result"],
            registry=self.registry,
        )
        self.second_chances = Counter(
            "relay_alerts_second_chance",
            "Dead letters sent once more because their chat accepted a message again",
            registry=self.registry,
        )
        self.presses = Counter(
            "relay_button_presses",
            "Presses on alerts' buttons, by outcome: the status GlitchTip now has (resolved, "
            "ignored, unresolved), or why nothing changed (refused, unknown, stale, repeated, "
            "failed)",
            ["outcome"],
            registry=self.registry,
        )
        self._spool_collector = _SpoolCollector(spool, health)
        self.registry.register(self._spool_collector)

    def webhook(self, outcome: WebhookOutcome, reason: str) -> None:
        self.webhooks.labels(outcome, reason).inc()

    def attempt(self, kind: AttemptKind, result: AttemptResult, error_code: int | None) -> None:
        self.attempts.labels(kind, result, "" if error_code is None else str(error_code)).inc()
        if error_code == 429:
            self.rate_limited.inc()

    def press(self, outcome: PressOutcome) -> None:
        self.presses.labels(outcome).inc()

    def probe(self, answered: bool) -> None:
        self.probes.labels("answered" if answered else "failed").inc()

    def lock_wait(self, seconds: float) -> None:
        self.lock_waits.observe(seconds)

    def delivered(self, received_at: list[float], now: float) -> None:
        for arrived in received_at:
            self.delivery_seconds.observe(max(0.0, now - arrived))
        if len(received_at) > 1:
            self.digest_alerts.observe(len(received_at))

    def exposition(self) -> bytes:
        """The text a scrape gets: every worker's counts, and the spool as it is now."""
        from prometheus_client import CollectorRegistry, generate_latest, multiprocess

        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        # A new registry per scrape, as prometheus_client's multiprocess docs have it: the
        # files are read afresh each time.
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        registry.register(self._spool_collector)
        return generate_latest(registry)


class _SpoolCollector:
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
                "wait meanwhile, and the relay asks with getMe every 2 s)",
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


# The directory share_between_workers made, kept here rather than in gunicorn.conf.py: gunicorn
# reads its config file again on SIGHUP, and the second reading finds the variable already set.
_made_directory: str | None = None


def share_between_workers(environ: MutableMapping[str, str]) -> None:
    """Give gunicorn's workers one directory for their metric files, in the master, before
    any worker imports prometheus_client; unless the user named one."""
    global _made_directory
    if environ.get(MULTIPROC_DIR):
        return
    _made_directory = tempfile.mkdtemp(prefix="relay-metrics-")
    environ[MULTIPROC_DIR] = _made_directory


def clear_stale_files(environ: Mapping[str, str]) -> None:
    """Files left by an earlier run would be added to this run's counts."""
    directory = environ.get(MULTIPROC_DIR)
    if directory:
        for stale in glob.glob(os.path.join(directory, "*.db")):
            os.remove(stale)


def remove_directory() -> None:
    """Remove the directory share_between_workers made, if it made one (gunicorn's on_exit)."""
    if _made_directory is not None:
        shutil.rmtree(_made_directory, ignore_errors=True)
