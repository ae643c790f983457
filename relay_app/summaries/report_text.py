"""What on call cost, in words (summaries/report.py gathers it): alerts, time to take and to
resolve (median and worst), calls made, who took what, and the issues still open with who has
each, in the chat's language (the command line's: English). Pure functions, no I/O."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from ..message.open_issues import open_lines
from ..words import Words
from .report import Report


def report_lines(report: Report, words: Words, zone: ZoneInfo) -> list[str]:
    head = words.report_head.format(
        start=_when(report.start, zone), end=f"{_when(report.end, zone)} ({zone.key})"
    )
    lines = [head, words.report_alerts.format(alerts=report.alerts, issues=report.issues)]
    taken = _spread(report.take_median, report.take_worst, words)
    resolved = _spread(report.resolve_median, report.resolve_worst, words)
    lines += [
        words.report_take.format(**taken, taken=report.taken) if taken else words.report_take_none,
        words.report_resolve.format(**resolved, resolved=report.resolved)
        if resolved
        else words.report_resolve_none,
    ]
    lines.append(words.report_calls.format(calls=report.calls))
    if report.takers:
        takers = ", ".join(f"{who} {count}" for who, count in report.takers.items())
        lines.append(words.report_takers.format(takers=takers))
    return lines + open_lines(report.open_count, report.open, words)


def _spread(median: float | None, worst: float | None, words: Words) -> dict[str, str]:
    """A time's median and worst, in words; none when nothing was timed."""
    if median is None or worst is None:
        return {}
    return {"median": words.duration(median), "worst": words.duration(worst)}


def _when(at: float, zone: ZoneInfo) -> str:
    return datetime.fromtimestamp(at, zone).strftime("%d.%m %H:%M")
