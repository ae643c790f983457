"""An issue's card for a link to it pasted in the chat (chat/links.py): the issue as
GlitchTip's API answered, written as GlitchTip's own webhook would carry it, so that it becomes
a message like an alert's (its title, where, its fields, its buttons), with a first line that
says what it is now. The data is kept by the card's job, and made text when it is sent. Pure
functions, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..core.json_values import json_count
from ..delivery.render import Renderer, Shape, Unreadable, number
from ..glitchtip.webhook import SOURCE_KEY
from ..message.formatting import Message, with_first_line
from ..spool.model import Job
from ..words import Words

# GlitchTip's webhook colours by level (Issue.get_hex_color): none for warning and below.
_COLOURS = {"fatal": "#e52b50", "error": "#e52b50", "info": "#4b60b4"}


def link_card_data(
    issue: Mapping[str, Any], link: str, *, source: str = "glitchtip"
) -> dict[str, Any]:
    """What a link's card is about, from its source's answer for the issue at `link`."""
    short_id = str(issue.get("shortId") or "")
    title = str(issue.get("title") or "")
    name = _project_name(issue.get("project"))
    attachment: dict[str, Any] = {
        "title": title,
        "title_link": link,
        "text": issue.get("culprit"),
        "color": _COLOURS.get(str(issue.get("level") or "")),
        "fields": [{"title": "Project", "value": name, "short": True}] if name else [],
    }
    payload: dict[str, Any] = {
        "alias": "GlitchTip",
        "text": "GlitchTip",
        "attachments": [attachment],
    }
    if source != "glitchtip":  # another source's, read into GlitchTip's shape
        payload.update({SOURCE_KEY: source, "text": ""})
    if short_id:  # where GlitchTip's webhook names it
        subtitle = f"[View Issue {short_id}]({link})"
        payload["sections"] = [{"activityTitle": title, "activitySubtitle": subtitle}]
    return {
        "payload": payload,
        "status": str(issue.get("status") or "unresolved"),
        "events": str(count) if (count := json_count(issue.get("count"))) is not None else "?",
        "label": short_id or f"#{issue.get('id')}",
    }


def _project_name(project: object) -> str | None:
    if not isinstance(project, dict):
        return None
    name = project.get("name") or project.get("slug")
    return str(name) if name else None


def link_card_line(about: Mapping[str, Any], words: Words) -> str:
    """The card's first line: '🔗 BACKEND-1A · unresolved · seen 120 times'."""
    status = {
        "resolved": words.link_card_resolved,
        "ignored": words.link_card_ignored,
    }.get(str(about.get("status")), words.link_card_unresolved)
    count = json_count(about.get("events"))
    events = (
        words.count(words.seen_times, count)
        if count is not None
        else words.seen_times.forms[-1].format(n="?")  # its source did not say, or not a count
    )
    return words.link_card.format(
        label=str(about.get("label") or "?"), status=status, events=events
    )


def link_card(job: Job, renderer: Renderer) -> Message:
    """A link's card: the issue as an alert's message would show it, its state first, in
    reply to the message that held the link."""
    about = job.data["link_card"]
    if not isinstance(about, dict) or not isinstance(about.get("payload"), dict):
        raise Unreadable(f"alert {job.label}'s link card is not a JSON object")
    message = renderer.webhook(about["payload"], received_at=job.received_at)
    line = link_card_line(about, renderer.words)
    message = replace(with_first_line(message, line), subjects=message.subjects)
    return replace(message, reply_to=number(job.data))


# Each the answer to its own link: never in a digest.
SHAPE = Shape("link_card", link_card, alone=True)
