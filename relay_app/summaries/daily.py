"""The daily summary (docs/oncall.md): a route's `summary = "09:00"` posts, once a day at that
time in the route's zone (or RELAY_TIMEZONE's), to the place its alerts go, what happened there
since the last one: the issues alerted on for the first time, those escalating, those back after
being resolved (GlitchTip alerts again only then), the ones still unresolved with their events
and last 24 hours as the watcher last read them (most events first), who has which, and how many
alerts were delivered, went in digests and were held by silences.

The dispatcher's upkeep looks each second, a read; the place whose time has come is posted once
for the whole fleet (summaries/store.py: the job is queued in the transaction that moves the
place's time on). The job holds the summary's data; its text is made when it is sent
(summaries/text.py). `relay-app summary` composes the same data now.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from ..cards.calls_made import CallsMade
from ..core.alerts import ALERT_KEY, KEPT_BODY_KEY
from ..core.errors import SpoolError
from ..core.routing import Destination
from ..core.sources import Sources
from ..delivery.job import Delivery
from ..message.open_issues import ChatIssues, WatchedIssue, issue_data
from ..routes.summary_time import SummaryAt
from ..spool.store import Tx
from .report import Report, ReportStore
from .store import Since, SummaryStore, counted_in

log = logging.getLogger(__name__)

# What a summary covers when none was posted before (the command's, for a place without one).
A_DAY = 86400.0
# How long a summary with the week's report waits for the report's picture (drawn in about a
# second, queued due at once): the photo goes first, its text after; without it, the text alone.
PICTURE_FIRST = 20.0
A_WEEK = 7 * A_DAY


@dataclass(frozen=True)
class Reading:
    """What a summary is made from: the watcher's issues (lent by it: None without a watcher,
    and the summary lists none), and on a route's `report` day what on call cost (None: no
    report), with the calls on call made (lent by it: None without on call, none counted)."""

    watched: ChatIssues | None
    # Read the issues' alerts as their rows keep them.
    sources: Sources
    reports: ReportStore | None = None
    calls: CallsMade | None = None


class DailySummaries:
    def __init__(
        self,
        places: Mapping[Destination, SummaryAt],
        store: SummaryStore,
        reading: Reading,
        *,
        zone: ZoneInfo,
        posted: Callable[[], None] = lambda: None,
        pictured: Callable[[Destination, Report, ZoneInfo], None] | None = None,
        picture_first: float = PICTURE_FIRST,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`places`: where a summary goes, and when (RouteTable.summaries); `zone`:
        RELAY_TIMEZONE's, for a route that names none; `pictured`: given a weekly report
        queued with its summary, in its place's zone (its picture goes first: the summary waits
        `picture_first` for it)."""
        self._places = dict(places)
        self._store = store
        self._watched = reading.watched
        self._sources = reading.sources
        self._reports = reading.reports
        self._calls = reading.calls
        self._zone = zone
        self._posted = posted
        self._pictured = pictured
        self._picture_first = picture_first
        self._clock = clock

    def upkeep(self) -> int:
        """Post the summaries whose time has come (the dispatcher's upkeep); how many."""
        posted = 0
        for destination, at in self._places.items():
            try:
                posted += self._post_if_due(destination, at)
            except SpoolError as exc:
                log.debug(
                    "the daily summary of %s could not be looked at now: %s", destination, exc
                )
        return posted

    def delivered(self, destination: Destination, alerts: int) -> None:
        """Alerts delivered to a place in one message: counted for its summary."""
        self._count(destination, delivered=alerts)

    def follow_up(self, delivery: Delivery) -> Callable[[Tx], None] | None:
        """`delivered`, written in the delivery's unit of work (None: the place has no summary,
        or the message held no webhook's alert: a summary or a notice is not counted)."""
        destination = delivery.destination
        alerts = sum(1 for data in delivery.about if ALERT_KEY in data or KEPT_BODY_KEY in data)
        if destination not in self._places or not alerts:
            return None
        return lambda tx: counted_in(tx, destination, delivered=alerts)

    def held(self, destination: Destination) -> None:
        """An alert a silence held back from a place: counted for its summary."""
        self._count(destination, silenced=1)

    def compose(self, destination: Destination, since: Since | None = None) -> dict[str, Any]:
        """The summary's data for a place, now: since the last one (`since`), or a day."""
        now = self._clock()
        at = self._places.get(destination)
        zone = self._zone_of(at)
        covered = since or Since(now - A_DAY, 0, 0, 0)
        watched = self._watched
        issues = watched.overview(str(destination.chat_key), now=now) if watched else []
        here = [i for i in issues if destination.thread is None or i.thread == destination.thread]
        return {
            "summary": {
                "from": covered.last_at,
                "to": now,
                "zone": zone.key,
                **_sorted_out(here, covered.last_at, self._sources),
                "delivered": covered.delivered,
                "digested": covered.digested,
                "silenced": covered.silenced,
                **self._weekly(destination, at, now),
            }
        }

    def _zone_of(self, at: SummaryAt | None) -> ZoneInfo:
        return ZoneInfo(at.timezone) if at is not None and at.timezone else self._zone

    def _weekly(self, destination: Destination, at: SummaryAt | None, now: float) -> dict[str, Any]:
        """On its route's `report` day, what on call cost in the place over the week."""
        if self._reports is None or at is None or not at.reports(now, self._zone):
            return {}
        zone = self._zone_of(at)
        report = self._reports.report(
            destination, start=now - A_WEEK, now=now, zone=zone, calls=self._calls
        )
        return {"report": report.as_json()}

    def _post_if_due(self, destination: Destination, at: SummaryAt) -> int:
        now = self._clock()
        next_at = at.next_after(now, self._zone)
        since = self._store.due(destination, next_at=next_at, now=now)
        if since is None:
            return 0
        data = self.compose(destination, since)
        report = data["summary"].get("report") if self._pictured is not None else None
        due_in = self._picture_first if report is not None else 0.0
        if not self._store.post(destination, data, next_at=next_at, now=now, due_in=due_in):
            return 0  # another process of the fleet posted it first
        log.info("the daily summary of %s is queued", destination.describe())
        self._posted()
        if report is not None and self._pictured is not None:
            self._pictured(destination, Report.from_json(report), self._zone_of(at))
        return 1

    def _count(self, destination: Destination, *, delivered: int = 0, silenced: int = 0) -> None:
        if destination not in self._places:
            return
        try:
            self._store.counted(
                destination, delivered=delivered, silenced=silenced, now=self._clock()
            )
        except SpoolError as exc:
            log.debug("an alert of %s could not be counted for its summary: %s", destination, exc)


def _sorted_out(
    issues: list[WatchedIssue], start: float, sources: Sources
) -> dict[str, list[dict[str, Any]]]:
    """The place's issues by what happened to them since `start`, and those still open."""

    def listed(chosen: Iterable[WatchedIssue]) -> list[dict[str, Any]]:
        """As the summary's job keeps them: each issue's label, title, events, hours, taker."""
        return [issue_data(issue, sources) for issue in chosen]

    return {
        "new": listed(i for i in issues if i.first_alerted_at >= start),
        "escalating": listed(i for i in issues if (i.escalated_at or 0.0) >= start),
        "regressed": listed(i for i in issues if i.first_alerted_at < start <= i.alerted_at),
        "open": listed(i for i in issues if i.status == "unresolved"),
    }
