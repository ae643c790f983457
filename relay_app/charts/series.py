"""What a chart shows of an issue, from its source's answer (issue_api/client.py's issue_history):
its events in each of the last 24 hours and the last 7 days (the current hour and day last, as
far as they have gone), when it was first seen, and its latest event's release. Hours and days
without events, which the sources leave out, count 0. Pure data; kept in the chart's job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..core.json_values import json_count
from ..core.trackers import IssueHistory

HOUR = 3600
DAY = 86400
HOURS = 24
DAYS = 7


@dataclass(frozen=True)
class Series:
    hourly: tuple[int, ...]  # HOURS counts, oldest first; the last is the current hour's
    hour_end: int  # the current hour's start (Unix time)
    daily: tuple[int, ...]  # DAYS counts, oldest first; the last is today's (UTC days)
    day_end: int  # today's start (UTC)
    first_seen: float | None = None
    release: str | None = None

    @property
    def last_day(self) -> int:
        return sum(self.hourly)

    @property
    def last_week(self) -> int:
        return sum(self.daily)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "hourly": list(self.hourly), "daily": list(self.daily)}

    @classmethod
    def from_json(cls, raw: object) -> Series:
        """What `as_json` wrote. Raises ValueError for anything else (a person's edit)."""
        if not isinstance(raw, dict):
            raise ValueError("a chart's series is not an object")
        hourly, daily = _counts(raw.get("hourly"), HOURS), _counts(raw.get("daily"), DAYS)
        hour_end, day_end = json_count(raw.get("hour_end")), json_count(raw.get("day_end"))
        first_seen, release = raw.get("first_seen"), raw.get("release")
        if hour_end is None or day_end is None:
            raise ValueError("a chart's series has no end")
        if first_seen is not None and not isinstance(first_seen, int | float):
            raise ValueError("a chart's first seen is not a time")
        return cls(
            hourly,
            hour_end,
            daily,
            day_end,
            float(first_seen) if first_seen is not None else None,
            release if isinstance(release, str) else None,
        )


def series_of(history: IssueHistory, now: float) -> Series:
    """The issue's last 24 hours and 7 days at `now`, from its source's answer."""
    hour_end = int(now // HOUR) * HOUR
    day_end = int(now // DAY) * DAY
    return Series(
        _bucketed(history.hours, hour_end, HOUR, HOURS),
        hour_end,
        _bucketed(history.days, day_end, DAY, DAYS),
        day_end,
        history.first_seen,
        history.release,
    )


def _bucketed(pairs: Sequence[Sequence[int]], end: int, span: int, count: int) -> tuple[int, ...]:
    """`count` spans ending with the one starting at `end`: each pair's count in its span."""
    totals: dict[int, int] = {}
    for at, events in pairs:
        start = int(at) // span * span
        totals[start] = totals.get(start, 0) + int(events)
    return tuple(totals.get(end - span * back, 0) for back in range(count - 1, -1, -1))


def _counts(raw: object, length: int) -> tuple[int, ...]:
    if not isinstance(raw, list) or len(raw) != length:
        raise ValueError("a chart's counts are not as kept")
    counts = [json_count(n) for n in raw]
    if any(n is None for n in counts):
        raise ValueError("a chart's count is not a whole number")
    return tuple(int(n) for n in counts if n is not None)
