"""The daily summary's message (summaries/daily.py composes its data): what happened in a
chat since the last one, new, escalating and regressed issues, those still unresolved with their
events and a sparkline of their last 24 hours (most events first), who has which, and how many
alerts were delivered, went in digests and were held by silences. Made from the data its job
keeps when it is sent, in the chat's language. Pure functions, no I/O."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from ..delivery.render import Shape
from ..message.formatting import PARAGRAPH, TELEGRAM_TEXT_LIMIT, Message
from ..message.open_issues import open_issue_lines
from ..words import Words
from .report import Report
from .report_text import report_lines

# The unresolved issues listed by name; the rest are counted.
MOST_LISTED = 15


def summary_message(about: Mapping[str, Any], words: Words) -> Message:
    zone = ZoneInfo(str(about.get("zone") or "UTC"))
    head = words.summary_head.format(
        start=_when(float(about["from"]), zone),
        end=f"{_when(float(about['to']), zone)} ({zone.key})",
    )
    lines = _what_happened(about, words) + _still_open(about, words)
    if not lines:
        lines = [words.summary_quiet]
    lines.append(
        words.summary_counts.format(
            delivered=int(about.get("delivered", 0)),
            digested=int(about.get("digested", 0)),
            silenced=int(about.get("silenced", 0)),
        )
    )
    if isinstance(about.get("report"), dict):  # the route's weekly part
        lines += ["", *report_lines(Report.from_json(about["report"]), words, zone)]
    body = _fitting(lines, len(head) + len(PARAGRAPH))
    text = f"{head}{PARAGRAPH}{body}"
    return Message(
        html=f"<b>{html.escape(head, quote=False)}</b>{PARAGRAPH}{html.escape(body, quote=False)}",
        text=text,
        fallback=text,
    )


def _what_happened(about: Mapping[str, Any], words: Words) -> list[str]:
    lines = []
    for key, template in (
        ("new", words.summary_new),
        ("escalating", words.summary_escalating),
        ("regressed", words.summary_regressed),
    ):
        issues = _issues(about.get(key))
        if issues:
            lines.append(template.format(labels=", ".join(i["label"] for i in issues)))
    return lines


def _still_open(about: Mapping[str, Any], words: Words) -> list[str]:
    issues = _issues(about.get("open"))
    if not issues:
        return []
    head = words.summary_open.format(count=len(issues))
    return ["", head, *open_issue_lines(issues, words, most=MOST_LISTED), ""]


def _fitting(lines: Sequence[str], taken: int) -> str:
    """The lines, the last of the list of issues given up first, within Telegram's limit."""
    kept = list(lines)
    while len("\n".join(kept)) + taken > TELEGRAM_TEXT_LIMIT and len(kept) > 2:
        del kept[-3]  # the counts line stays last; the list's last entries go first
    return "\n".join(kept).strip("\n")


def _issues(raw: object) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        return []
    return [issue for issue in raw if isinstance(issue, dict) and issue.get("label")]


def _when(at: float, zone: ZoneInfo) -> str:
    return datetime.fromtimestamp(at, zone).strftime("%d.%m %H:%M")


# A place's daily summary, as its job holds it: one alert of the place's.
SHAPE = Shape("summary", lambda job, renderer: summary_message(job.data["summary"], renderer.words))
