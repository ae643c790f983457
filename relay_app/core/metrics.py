"""Prometheus metrics: what the relay counts, and `GET /metrics` in the text format.

Counters and histograms are prometheus_client's, in its multiprocess mode under gunicorn: each
worker writes its values to files in PROMETHEUS_MULTIPROC_DIR and a scrape, answered by any
worker, adds them all up. gunicorn.conf.py makes that directory (`share_between_workers`), so
nobody has to. The spool's gauges (pending, dead, oldest pending) are not counted at all: they are
read from the spool, which every worker shares, when Prometheus scrapes (gauges.py).

prometheus_client chooses between in-process and file-backed values when it is first imported,
from the environment. So this module imports it only when the first `Metrics` is built, and the
gunicorn config can set the directory up first, in the master, before any worker exists.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, get_args

if TYPE_CHECKING:
    from prometheus_client import Counter
    from prometheus_client.core import Metric

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Receipt to Telegram's acceptance: a healthy send takes well under a second, pacing adds
# seconds, an outage minutes to hours (RELAY_RETRY_MAX_AGE is 6 h by default).
DELIVERY_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 21600)
# A digest holds 2 to 100 alerts (digest.MAX_ALERTS_PER_DIGEST).
DIGEST_BUCKETS = (2, 3, 5, 10, 20, 50, 100)
# A wait for the spool's lock: milliseconds when it is contended, seconds when a tool holds it.
LOCK_WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10)

WebhookOutcome = Literal["sent", "queued", "silenced", "dropped", "failed", "rejected"]
AttemptKind = Literal["sync", "background"]
# Of a look-up of an issue's details in its source's API (core/lookups.py).
LookupOutcome = Literal["read", "cached", "gone", "failed", "skipped"]
LOOKUP_OUTCOMES: tuple[LookupOutcome, ...] = get_args(LookupOutcome)
AttemptResult = Literal["delivered", "retryable_error", "permanent_error"]
# What became of a press on an alert's button: the status its tracker now has, or why nothing
# changed (someone not allowed, a button the relay does not know, one no longer shown, an update
# handled before, the tracker or the spool failed).
PressOutcome = Literal[
    "taken",
    "let_go",
    "resolved",
    "ignored",
    "unresolved",
    "muted",
    "unmuted",
    "refused",
    "unknown",
    "stale",
    "repeated",
    "failed",
]

# Why a request reached no page (web/misses.py).
MissReason = Literal[
    "webhook_secret",
    "webhook_path",
    "telegram_secret",
    "telegram_header",
    "method",
    "unknown_path",
]
MISS_REASONS: tuple[MissReason, ...] = get_args(MissReason)


@dataclass(frozen=True)
class CounterSpec:
    """A counter a capability adds: its name (without `_total`), its help, its labels, and the
    values of its one label present from the start at 0 (so that a rule reading it has it
    before its first count)."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    series: tuple[str, ...] = ()


class Collector(Protocol):
    """Gauges read when Prometheus scrapes (prometheus_client's custom collectors)."""

    def collect(self) -> Iterator[Metric]: ...


class Metrics:
    """The relay's counters: one per app, each with a registry of its own."""

    def __init__(
        self, gauges: Collector | None = None, counters: Iterable[CounterSpec] = ()
    ) -> None:
        """`gauges` are read at each scrape (gauges.py: the spool and Telegram's health);
        `counters`: the capabilities' own (each capability's `counters`), the core's beside."""
        # Imported here, not at the top: see the module's docstring.
        from prometheus_client import CollectorRegistry, Histogram

        self.multiprocess_dir = os.environ.get(MULTIPROC_DIR) or None
        # The relay's own registry, not the global one: two apps in one process (tests) must
        # not share counts, and the global one would add Python's process metrics per worker.
        self.registry = CollectorRegistry()
        self.webhooks = self._counter(
            "relay_webhooks",
            "Webhooks answered, by outcome (sent, queued, silenced, dropped, failed, rejected) and "
            "reason; a webhook the routes split counts once per part",
            ["outcome", "reason"],
        )
        self.attempts = self._counter(
            "relay_delivery_attempts",
            "Attempts to deliver a message to Telegram, by kind (sync: the webhook's own; "
            "background: a retry or a paced send), result, and Telegram's error code",
            ["kind", "result", "error_code"],
        )
        self.delivery_seconds = Histogram(
            "relay_delivery_seconds",
            "Seconds from a webhook's arrival to Telegram accepting its alert",
            buckets=DELIVERY_BUCKETS,
            registry=self.registry,
        )
        self.routed = self._counter(
            "relay_alerts_routed",
            "Issues (and uptime monitors) the routes file sent on, by route name ('none': no "
            "route matched, so where the webhook URL says)",
            ["route"],
        )
        self.dropped = self._counter(
            "relay_alerts_dropped",
            "Issues (and uptime monitors) a route with drop = true kept out of every chat",
            ["route"],
        )
        self.writes = self._counter(
            "relay_chat_writes",
            "Attempts of the writes to a chat other than alerts, each a job in the spool as an "
            "alert is, by job (card: an alert's message edited after a press, a mute or a "
            "recovery; reply; reaction), result, and Telegram's error code",
            ["job", "result", "error_code"],
        )
        self.rate_limited = self._counter(
            "relay_telegram_rate_limited",
            "429 Too Many Requests answers received from Telegram",
        )
        self.digest_alerts = Histogram(
            "relay_digest_alerts",
            "Alerts per digest message delivered (_count: digests sent; _sum: alerts in them)",
            buckets=DIGEST_BUCKETS,
            registry=self.registry,
        )
        self.undelivered = self._counter(
            "relay_alerts_undelivered",
            "Alerts that will not reach Telegram, each logged as ALERT NOT DELIVERED with its "
            "text (dead letters, refused webhook URLs, alerts that could not be queued)",
        )
        self.lock_waits = Histogram(
            "relay_spool_lock_wait_seconds",
            "Waits for the spool's lock held by another connection (a busy spool, not a "
            "broken one), in seconds",
            buckets=LOCK_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.probes = self._counter(
            "relay_telegram_probes",
            "Questions that post nothing (getMe) asked while Telegram was failing, by result "
            "(answered, failed)",
            ["result"],
        )
        self.second_chances = self._counter(
            "relay_alerts_second_chance",
            "Dead letters sent once more because their chat accepted a message again",
        )
        self.presses = self._counter(
            "relay_button_presses",
            "Presses on alerts' buttons, by outcome: someone on it (taken), the status "
            "GlitchTip now has (resolved, ignored, unresolved), a silence started or ended in "
            "the chat (muted, unmuted), a chart asked for (charted), or why nothing changed "
            "(refused, unknown, stale, repeated, failed; not_now: the asker's turn to be "
            "answered had not come)",
            ["outcome"],
        )
        self.misses = self._counter(
            "relay_requests_missed",
            "Requests that reached no page or were refused, by reason: webhook_secret (a "
            "webhook URL with a wrong secret), webhook_path (a near miss of the webhook's "
            "path), telegram_secret (Telegram posting to an old address), telegram_header, "
            "method, unknown_path, and each of the capabilities' pages' own (docs/operating.md)",
            ["reason"],
            series=MISS_REASONS,
        )
        self._gauges: list[Collector] = []
        if gauges is not None:
            self.add_gauges(gauges)
        self._theirs: dict[CounterSpec, Counter] = {}
        for spec in counters:
            self._theirs[spec] = self._counter(
                spec.name, spec.help, spec.labels, series=spec.series
            )

    def of(self, spec: CounterSpec) -> Counter:
        """A capability's counter, as it registered it (operating/capability.py). Raises
        KeyError for one that was not: a count would otherwise go nowhere, unseen."""
        return self._theirs[spec]

    def _counter(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        *,
        series: Iterable[str] = (),
    ) -> Counter:
        """A counter in the relay's registry; each of `series` there from the start, at 0, so
        that a rule reading it has it before its first count."""
        from prometheus_client import Counter  # here, not at the top: the module docstring says

        made = Counter(name, documentation, labels, registry=self.registry)
        for value in series:
            made.labels(value)
        return made

    def add_gauges(self, gauges: Collector) -> None:
        """More gauges read at each scrape (this worker's own, or what every worker shares)."""
        self._gauges.append(gauges)
        self.registry.register(gauges)

    def webhook(self, outcome: WebhookOutcome, reason: str) -> None:
        self.webhooks.labels(outcome, reason).inc()

    def route(self, route: str | None, count: int, *, dropped: bool = False) -> None:
        (self.dropped if dropped else self.routed).labels(route or "none").inc(count)

    def attempt(
        self, kind: AttemptKind, result: AttemptResult, error_code: int | None, job: str = "alert"
    ) -> None:
        """One write's attempt: an alert's (or a digest's) by `kind`, any other job's by its
        own kind (relay_chat_writes_total)."""
        code = "" if error_code is None else str(error_code)
        if job == "alert":
            self.attempts.labels(kind, result, code).inc()
        else:
            self.writes.labels(job, result, code).inc()
        if error_code == 429:
            self.rate_limited.inc()

    def press(self, outcome: PressOutcome | str) -> None:
        """A press's outcome: the core's (PressOutcome), or one a capability's button says."""
        self.presses.labels(outcome).inc()

    def missed(self, reason: str) -> None:
        self.misses.labels(reason).inc()

    def may_miss(self, reason: str) -> None:
        """A reason a page may refuse with, counted at 0 from the start (a rule reads it)."""
        self.misses.labels(reason)

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
        from prometheus_client import CollectorRegistry, generate_latest

        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        # A new registry per scrape, as prometheus_client's multiprocess docs have it: the
        # files are read afresh each time.
        registry = CollectorRegistry()
        registry.register(_WorkersFiles(self.multiprocess_dir))
        for gauges in self._gauges:
            registry.register(gauges)
        return generate_latest(registry)


class _WorkersFiles:
    """prometheus_client's MultiProcessCollector, but for a file of 0 bytes: a worker creates
    its file, then sizes it, and a scrape between the two (any worker starting) failed whole
    with struct.error; one killed between them failed every scrape until a restart
    (prometheus/client_python#1199, open). Such a file holds nothing yet, so it is left out."""

    def __init__(self, path: str) -> None:
        self._path = path

    def collect(self) -> Iterable[Metric]:
        from prometheus_client.multiprocess import MultiProcessCollector

        files = []
        for name in glob.glob(os.path.join(self._path, "*.db")):
            with contextlib.suppress(OSError):  # removed meanwhile: nothing to add up
                if os.path.getsize(name) > 0:
                    files.append(name)
        merged: Iterable[Metric] = MultiProcessCollector.merge(files, accumulate=True)  # type: ignore[no-untyped-call]
        return merged


# Names the process that made the directory, beside it in the environment rather than in a
# variable of gunicorn.conf.py: gunicorn reads its config file again on SIGHUP, and the second
# reading finds the directory already set.
MADE_BY = "RELAY_METRICS_DIR_MADE_BY"


def share_between_workers(environ: MutableMapping[str, str]) -> None:
    """Give gunicorn's workers one directory for their metric files, in the master, before
    any worker imports prometheus_client; unless the user named one."""
    if environ.get(MULTIPROC_DIR):
        return
    environ[MULTIPROC_DIR] = tempfile.mkdtemp(prefix="relay-metrics-")
    environ[MADE_BY] = str(os.getpid())


def clear_stale_files(environ: Mapping[str, str]) -> None:
    """Files left by an earlier run would be added to this run's counts."""
    directory = environ.get(MULTIPROC_DIR)
    if directory:
        for stale in glob.glob(os.path.join(directory, "*.db")):
            os.remove(stale)


def remove_directory(environ: Mapping[str, str]) -> None:
    """Remove the directory share_between_workers made in this process, if it made one
    (gunicorn's on_exit)."""
    directory = environ.get(MULTIPROC_DIR)
    if directory and environ.get(MADE_BY) == str(os.getpid()):
        shutil.rmtree(directory, ignore_errors=True)
