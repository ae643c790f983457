"""A route's `summary = "09:00"`: when, each day, the chat it sends to gets its daily summary
(summaries/daily.py), in the route's `timezone` or RELAY_TIMEZONE's. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import time as clock_time
from typing import Any
from zoneinfo import ZoneInfo

_HOUR = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class SummaryAt:
    """A daily summary's time of day, in a zone (None: RELAY_TIMEZONE's)."""

    at: clock_time
    timezone: str | None = None
    # The weekday (0: Monday) its summary also says what on call cost over the week (a
    # route's `report = "monday"`); None: never.
    report_on: int | None = None

    def reports(self, now: float, default_zone: ZoneInfo) -> bool:
        """Whether the summary made at `now` has the week's report: it is its day there."""
        zone = ZoneInfo(self.timezone) if self.timezone else default_zone
        return self.report_on is not None and datetime.fromtimestamp(now, zone).weekday() == (
            self.report_on
        )

    def next_after(self, now: float, default_zone: ZoneInfo) -> float:
        """The first time after `now` (Unix) that the clock in the zone shows `at`: a day's
        length from the one before, whatever a change of daylight saving time does to it."""
        zone = ZoneInfo(self.timezone) if self.timezone else default_zone
        local = datetime.fromtimestamp(now, zone)
        candidate = datetime.combine(local.date(), self.at, tzinfo=zone)
        while candidate.timestamp() <= now:
            candidate = datetime.combine(candidate.date() + timedelta(days=1), self.at, zone)
        return candidate.timestamp()

    def __str__(self) -> str:
        return f"{self.at:%H:%M}" + (f" {self.timezone}" if self.timezone else "")


def summary_of(table: Mapping[str, Any], problem: Any) -> SummaryAt | None:
    """A route's `summary` key, checked (with its `timezone`, already checked by sound.py)."""
    raw = table.get("summary")
    if raw is None:
        return None
    found = _HOUR.match(raw) if isinstance(raw, str) else None
    if found is None:
        raise problem("summary", 'must be a time of day, HH:MM: summary = "09:00"')
    zone = table.get("timezone")
    return SummaryAt(
        clock_time(int(found.group(1)), int(found.group(2))), zone, _report(table, problem)
    )


def _report(table: Mapping[str, Any], problem: Any) -> int | None:
    """A route's `report`: the day of the week its summary says what on call cost."""
    raw = table.get("report")
    if raw is None:
        return None
    day = raw.strip().casefold() if isinstance(raw, str) else None
    if day not in WEEKDAYS:
        raise problem("report", f"must be a day of the week: {', '.join(WEEKDAYS)}")
    return WEEKDAYS.index(day)
