"""An issue's events over the last day, from GlitchTip's hourly counts (its `issues-stats`
answer: `[unix_hour, count]` for the hours that had events): the 24 hours as a sparkline of
`▁▂▃▄▅▆▇█`, and whether the issue is escalating. Pure functions.

Escalating: its events in the last hour reach `min_events`, and at least ten times its hourly
average over the hours before. "The last hour" is the current hour's events so far and the
share of the previous hour's that falls within the last 60 minutes (GlitchTip counts by whole
hours); the average is over the 22 hours before those two.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BARS = "▁▂▃▄▅▆▇█"
HOURS = 24
# How many times its hourly average an issue's last hour must be.
TIMES_THE_AVERAGE = 10.0


@dataclass(frozen=True)
class Trend:
    counts: tuple[int, ...]  # the last HOURS hours, oldest first; the last is the current hour
    last_hour: int
    average_before: float

    def escalating(self, min_events: int) -> bool:
        return self.last_hour >= min_events and (
            self.last_hour >= TIMES_THE_AVERAGE * self.average_before
        )

    @property
    def sparkline(self) -> str:
        return sparkline(self.counts)


def trend(stats: Iterable[Sequence[float]], now: float) -> Trend:
    """The trend of `stats` (GlitchTip's `[unix_hour, count]` pairs) at `now`."""
    current = int(now // 3600) * 3600
    by_hour = {int(pair[0]) // 3600 * 3600: int(pair[1]) for pair in stats if len(pair) == 2}
    counts = tuple(by_hour.get(current - 3600 * back, 0) for back in range(HOURS - 1, -1, -1))
    previous_share = 1.0 - (now - current) / 3600
    last_hour = counts[-1] + round(counts[-2] * previous_share)
    before = counts[:-2]
    return Trend(counts, last_hour, sum(before) / len(before))


def sparkline(counts: Sequence[int]) -> str:
    """One bar a count, its height against the largest: '▁▁▂▁▃▇█'."""
    top = max(counts, default=0)
    if top == 0:
        return BARS[0] * len(counts)
    highest = len(BARS) - 1
    return "".join(BARS[round(count * highest / top)] for count in counts)
