"""What a chart of an issue shows, as the drawing process takes it (core/drawing.py): from
numbers and the catalogue's words, the issue's events by hour over 24 hours and by day over
7 days in the chat's time zone, first seen marked where it falls, the release named."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from ..core.drawing import LEVEL_COLOURS
from ..words import Words
from .series import DAY, HOUR, Series

# The image's title, at most (characters of the title).
TITLE_SHOWN = 70


def spec_of(
    series: Series,
    *,
    label: str,
    title: str,
    words: Words,
    zone: tzinfo,
    level: str | None = None,
) -> dict[str, Any]:
    """What the drawing process is given: bars, tick labels and marks, and words."""
    hour_start = series.hour_end - HOUR * (len(series.hourly) - 1)
    day_start = series.day_end - DAY * (len(series.daily) - 1)
    hours = [_local(hour_start + HOUR * n, zone).strftime("%H:%M") for n in range(24)]
    days = [_local(day_start + DAY * n, zone).strftime("%d.%m") for n in range(7)]
    heading = title if len(title) <= TITLE_SHOWN else title[: TITLE_SHOWN - 1] + "…"
    subtitle = [str(getattr(zone, "key", "") or zone.tzname(None) or "")]
    if series.release:
        subtitle.insert(0, words.word("chart_release").format(release=series.release))
    colour = LEVEL_COLOURS.get(level or "", LEVEL_COLOURS["error"])
    return {
        "title": f"{label} · {heading}",
        "panels": [
            {
                "title": words.word("chart_hours"),
                "counts": list(series.hourly),
                "labels": hours,
                "ticks": list(range(2, 24, 3)),  # every third hour, the current one last
                "marks": _marks(series.first_seen, hour_start, HOUR, 24, words),
                "colour": colour,
                "height": 3,
            },
            {
                "title": words.word("chart_days"),
                "counts": list(series.daily),
                "labels": days,
                "marks": _marks(series.first_seen, day_start, DAY, 7, words),
                "colour": colour,
                "note": " · ".join(part for part in subtitle if part),
                "height": 2,
            },
        ],
    }


def _local(at: float, zone: tzinfo) -> datetime:
    return datetime.fromtimestamp(at, zone)


def _marks(
    first_seen: float | None, start: int, span: int, count: int, words: Words
) -> Sequence[dict[str, Any]]:
    """First seen, where it falls within these bars (at its place within its bar)."""
    if first_seen is None or not start <= first_seen < start + span * count:
        return []
    return [{"at": (first_seen - start) / span - 0.5, "label": words.word("chart_first_seen")}]
