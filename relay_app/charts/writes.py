"""A chart's job as it is sent: a photo under the message that asked for it, captioned with the
issue's short id, title and counts in the chat's words and time zone, carrying the issue's row
of buttons as the card it answers shows them now (a photo with buttons is a card: its edits
change its caption, cards/edits.py). Telegram refusing the photo, its text goes instead, with
a sparkline of the 24 hours (courier.py); a chart that could not be drawn goes as that text."""

from __future__ import annotations

import base64
import binascii
import html
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, tzinfo
from typing import Any

from ..cards.card import SNOOZE_EVENTS, Button, IssueButton, SentMessage, keyboard
from ..cards.sent import SentStore
from ..core.errors import Unreadable
from ..core.routing import chat_key
from ..delivery.render import Photo, Renderer, ReplyUnder, Write, number
from ..message.spans import place_time, visible
from ..message.trend import sparkline
from ..spool.model import Job
from ..telegram.courier import Picture, Sent
from ..words import Words
from .series import HOUR, Series

# The issue's title in a caption, at most: the caption's 1,024 characters hold it and the counts.
TITLE_SHOWN = 300


def caption_of(series: Series, issue: IssueButton, words: Words, zone: tzinfo) -> str:
    """'📈 ALERT-TEST-9 ZeroDivisionError…' and its counts, as HTML: first seen by its time
    within the chart's last day, with its date before."""
    title = issue.title or ""
    title = title if len(title) <= TITLE_SHOWN else title[: TITLE_SHOWN - 1] + "…"
    counts = words.word("chart_counts").format(day=series.last_day, week=series.last_week)
    lines = [
        words.word("chart_caption").format(
            label=html.escape(issue.label, quote=False), title=html.escape(title, quote=False)
        ),
        html.escape(counts, quote=False),
    ]
    if series.first_seen is not None:
        when = place_time(series.first_seen, zone)
        if series.first_seen < series.hour_end - 23 * HOUR:
            when = f"{datetime.fromtimestamp(series.first_seen, zone):%Y-%m-%d} {when}"
        seen = words.word("chart_seen").format(time=when)
        lines.append(html.escape(seen, quote=False))
    return "\n".join(lines)


def chart_writer(
    sent: SentStore,
    *,
    theirs: Sequence[Button],
    snooze_events: int = SNOOZE_EVENTS,
    sent_to: Callable[[str, str, str | None], None] = lambda issue_id, chat, file_id: None,
    clock: Callable[[], float] = time.time,
) -> Callable[[Job, Renderer], Write | None]:
    """What a chart's job writes here: `sent` keeps the photo as a card; `theirs`: the
    capabilities' buttons its row shows; `sent_to`: told the file_id Telegram gave it."""

    def write(job: Job, renderer: Renderer) -> Write | None:
        chart, series, issue = _read(job)
        words = renderer.words
        chat = str(job.destination.chat)
        zone = renderer.zone_of(job.destination.chat)
        like = str(chart.get("like") or "")
        found = sent.pressed(like) if like else None
        row = replace(found[1], key=str(chart["key"])) if found is not None else issue
        caption = caption_of(series, row, words, zone)
        instead = _as_text(caption, series, words)
        reply_to = number(job.data)
        picture = _picture(chart)
        if picture is None:
            return ReplyUnder(
                chat, job.destination.thread, reply_to, visible(instead), html=instead
            )

        def done(where: Sent, file_id: str | None) -> None:
            kept = SentMessage(
                chat=where.chat,
                message_id=where.message_id,
                html=where.html,
                sent_at=clock(),
                buttons=(row,),
                thread=job.destination.thread,
                captioned=file_id is not None,
            )
            sent.keep_copy(kept, like)
            sent_to(issue.issue_id, where.chat, file_id)

        return Photo(
            Picture(
                picture,
                caption,
                instead,
                keyboard([row], words, snooze_events=snooze_events, theirs=theirs),
                reply_to,
                said=f"the chart of {issue.label} to {chat_key(chat)}",
            ),
            done=done,
        )

    return write


def left_behind(job: Job, renderer: Renderer) -> Write | None:
    """A chart's job found with charts off: its numbers, as text under the message."""
    _, series, issue = _read(job)
    words = renderer.words
    caption = caption_of(series, issue, words, renderer.zone_of(job.destination.chat))
    text = _as_text(caption, series, words)
    chat = str(job.destination.chat)
    return ReplyUnder(chat, job.destination.thread, number(job.data), visible(text), html=text)


def _as_text(caption: str, series: Series, words: Words) -> str:
    """The chart as text, where no picture goes: its caption, and its 24 hours as a sparkline."""
    return caption + "\n" + words.word("chart_instead").format(spark=sparkline(series.hourly))


def _read(job: Job) -> tuple[dict[str, Any], Series, IssueButton]:
    """The chart's data, as charting.py queued it. Raises Unreadable."""
    chart = job.data.get("chart")
    if not isinstance(chart, dict):
        raise Unreadable(f"chart job {job.label} holds no chart")
    raw = chart.get("issue")
    try:
        series = Series.from_json(chart.get("series"))
        if not isinstance(raw, dict) or not isinstance(chart.get("key"), str):
            raise ValueError("no issue")
        issue = IssueButton(
            str(chart["key"]),
            str(raw["issue_id"]),
            str(raw["origin"]),
            str(raw["label"]),
            title=str(raw["title"]) if raw.get("title") is not None else None,
            org=str(raw["org"]) if raw.get("org") is not None else None,
        )
    except (KeyError, ValueError) as exc:
        raise Unreadable(f"chart job {job.label} cannot be read: {exc}") from None
    return chart, series, issue


def _picture(chart: dict[str, Any]) -> bytes | str | None:
    """The file_id of a picture Telegram keeps, or the PNG's bytes; None: none was drawn."""
    file_id = chart.get("file_id")
    if isinstance(file_id, str) and file_id:
        return file_id
    png = chart.get("png")
    if not isinstance(png, str):
        return None
    try:
        return base64.b64decode(png, validate=True)
    except (binascii.Error, ValueError):
        raise Unreadable("a chart's picture is not base64") from None
