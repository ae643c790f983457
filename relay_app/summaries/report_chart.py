"""What on call cost, as a picture (summaries/report.py gathers it): alerts per day stacked by
level, time to take and to resolve (median and worst), calls made in the title, and, where the
report covers several places, alerts by route; in the chat's language and zone. The spec the
drawing process takes (core/drawing.py). Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date, datetime, tzinfo
from typing import Any

from ..core.drawing import LEVEL_COLOURS
from ..words import Words
from .report import LEVELS, Report

# Places named in the picture, at most: the rest are left out (the text lists them all).
PLACES_SHOWN = 8
# The picture's words, the summaries' own (the capability registers them with the catalogue's).
CHART_WORDS: dict[str, dict[str, str]] = {
    "en": {
        "report_chart_title": "On call {start} – {end}: {alerts} alerts, {calls} calls",
        "report_chart_days": "Alerts per day, by level",
        "report_chart_times": "Time to take and to resolve",
        "report_chart_places": "Alerts by route",
        "report_chart_take_median": "take, median",
        "report_chart_take_worst": "take, worst",
        "report_chart_resolve_median": "resolve, median",
        "report_chart_resolve_worst": "resolve, worst",
        "report_level_fatal": "fatal",
        "report_level_error": "error",
        "report_level_warning": "warning",
        "report_level_info": "info",
        "report_level_other": "other",
    },
    "ru": {
        "report_chart_title": "Дежурство {start} – {end}: алертов {alerts}, вызовов {calls}",
        "report_chart_days": "Алерты по дням и уровням",
        "report_chart_times": "Время до «Беру» и до закрытия",
        "report_chart_places": "Алерты по маршрутам",
        "report_chart_take_median": "взяли, медиана",
        "report_chart_take_worst": "взяли, худшее",
        "report_chart_resolve_median": "закрыли, медиана",
        "report_chart_resolve_worst": "закрыли, худшее",
        "report_level_fatal": "фатальные",
        "report_level_error": "ошибки",
        "report_level_warning": "предупреждения",
        "report_level_info": "инфо",
        "report_level_other": "прочие",
    },
}


def with_chart_words(words: Words) -> Words:
    """The catalogue's words with the picture's, in their language (a tool's: the relay's
    assembly registers them itself)."""
    theirs = CHART_WORDS.get(words.language, CHART_WORDS["en"])
    return replace(words, theirs=(*words.theirs, *theirs.items()))


def report_spec(
    report: Report, words: Words, zone: tzinfo, names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """`names`: a place's route name by its key ('-100123', '-100123/42'), where known."""
    start = datetime.fromtimestamp(report.start, zone).strftime("%d.%m")
    end = datetime.fromtimestamp(report.end, zone).strftime("%d.%m")
    title = words.word("report_chart_title").format(
        start=start, end=end, alerts=report.alerts, calls=report.calls
    )
    panels = [_days(report, words), _times(report, words)]
    if len(report.by_place) > 1:
        panels.append(_places(report, words, names or {}))
    return {"title": title, "panels": panels}


def _days(report: Report, words: Words) -> dict[str, Any]:
    days = list(report.by_day)
    present = [level for level in LEVELS if any(level in c for c in report.by_day.values())]
    return {
        "title": words.word("report_chart_days"),
        "labels": [date.fromisoformat(day).strftime("%d.%m") for day in days],
        "stacks": [
            {
                "name": words.word(f"report_level_{level}"),
                "colour": LEVEL_COLOURS[level],
                "counts": [report.by_day[day].get(level, 0) for day in days],
            }
            for level in present
        ],
        "height": 3,
    }


def _times(report: Report, words: Words) -> dict[str, Any]:
    """Time to take and to resolve, median and worst, in minutes; said in words beside."""
    spans = [
        ("report_chart_take_median", report.take_median),
        ("report_chart_take_worst", report.take_worst),
        ("report_chart_resolve_median", report.resolve_median),
        ("report_chart_resolve_worst", report.resolve_worst),
    ]
    return {
        "kind": "horizontal",
        "title": words.word("report_chart_times"),
        "names": [words.word(name) for name, _ in spans],
        "values": [(seconds or 0) / 60 for _, seconds in spans],
        "shown": [words.duration(s) if s is not None else "—" for _, s in spans],
        "colour": "#5bc0de",
        "height": 2,
    }


def _places(report: Report, words: Words, names: Mapping[str, str]) -> dict[str, Any]:
    ranked = sorted(report.by_place.items(), key=lambda kv: (-kv[1], kv[0]))[:PLACES_SHOWN]
    return {
        "kind": "horizontal",
        "title": words.word("report_chart_places"),
        "names": [names.get(place, place) for place, _ in ranked],
        "values": [count for _, count in ranked],
        "shown": [str(count) for _, count in ranked],
        "colour": "#777777",
        "height": max(1.0, len(ranked) / 3),
    }
