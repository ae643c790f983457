"""The message that says what a silence held when it ended: "🔊 Silence over (issue BACKEND-1A,
12:04 to 13:04 UTC): 3 alerts held meanwhile", then the held alerts' lines, each linked to its
issue. Made from the summary's data (silences/store.py queues it when the silence ends) when it
is sent, in the chat's language. Pure functions, no I/O."""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import UTC, tzinfo
from typing import Any

from ..delivery.render import Shape
from ..message.digest import backlog, time_span
from ..message.formatting import PARAGRAPH, Message
from ..message.lines import Line, from_data
from ..words import Words
from .matching import Matchers


def silence_summary(about: Mapping[str, Any], words: Words, zone: tzinfo = UTC) -> Message:
    """The message a silence's end posts: what it held, its times in `zone` (the chat's)."""
    matchers = Matchers(**{k: v for k, v in about.get("matchers", {}).items() if v})
    held = [from_data(lines) for lines in about.get("lines", [])]
    start, end = time_span(float(about["starts_at"]), float(about["ended_at"]), zone)
    count = int(about.get("held", len(held)))
    # An issue silenced by its id is named as the chat knows it: by its short id.
    label = about.get("label") or (_first_label(held) if matchers.issue else None)
    head = words.silence_over.format(
        what=matchers.describe(words, label=label),
        start=start,
        end=end,
        alerts=words.count(words.alerts, count),
    )
    if count > len(held):
        head += words.silence_listed_first.format(count=len(held))
    lines = backlog(held, words)
    text = f"{head}{PARAGRAPH}{lines.text}"
    return Message(
        html=f"<b>{html.escape(head, quote=False)}</b>{PARAGRAPH}{lines.html}",
        text=text,
        fallback=text,
    )


def _first_label(held: list[tuple[Line, ...]]) -> str | None:
    return held[0][0].label if held and held[0] else None


# A silence's summary, as its job holds it when the silence ends: one alert of the chat's.
SHAPE = Shape(
    "silence_over",
    lambda job, renderer: silence_summary(
        job.data["silence_over"], renderer.words, renderer.zone_of(job.destination.chat)
    ),
)
