"""An issue's card for a link to it pasted in the chat (chat/links.py): the issue as its
source's API answered, written as an alert of it (core/alerts.py), so that it becomes a
message like an alert's (its title, where, its fields, its buttons), with a first line that
says what it is now. The data is kept by the card's job, and made text when it is sent. Pure
functions, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..core.alerts import OWN_LEVELS, Field, Issue, IssueAlert, alert_as_json, shade_of_level
from ..core.errors import Unreadable
from ..core.json_values import json_count
from ..core.sources import Source
from ..delivery.render import Renderer, Shape, number
from ..message.formatting import Message, with_first_line
from ..spool.model import Job
from ..words import Words


def link_card_data(issue: Mapping[str, Any], link: str, *, source: Source) -> dict[str, Any]:
    """What a link's card is about, from its source's answer for the issue at `link`, headed
    as the source heads an alert of it."""
    short_id = str(issue.get("shortId") or "")
    alert = IssueAlert(source.card_heading, (_shown(issue, link, short_id),), 1, source.name)
    return {
        "alert": alert_as_json(alert),
        "status": str(issue.get("status") or "unresolved"),
        "events": str(count) if (count := json_count(issue.get("count"))) is not None else "?",
        "label": short_id or f"#{issue.get('id')}",
    }


def _shown(issue: Mapping[str, Any], link: str, short_id: str) -> Issue:
    """The issue as an alert shows it: its title, where, its project, how grave."""
    name = _project_name(issue.get("project"))
    level = str(issue.get("level") or "")
    culprit = issue.get("culprit")
    return Issue(
        title=str(issue.get("title") or ""),
        link=link,
        culprit=str(culprit) if culprit else None,
        shade=shade_of_level(level),
        short_id=short_id or None,
        fields=(Field("Project", name),) if name else (),
        level=level if level in OWN_LEVELS else None,
    )


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
    # "payload": the issue as its source's webhook body, where a relay before kept it so.
    kept = about.get("alert", about.get("payload")) if isinstance(about, dict) else None
    if not isinstance(about, dict) or not isinstance(kept, dict):
        raise Unreadable(f"alert {job.label}'s link card is not a JSON object")
    try:
        alert = renderer.sources.alert_kept_as(kept)
    except Unreadable as exc:
        raise Unreadable(f"alert {job.label}'s link card: {exc}") from None
    message = renderer.webhook(alert, received_at=job.received_at)
    line = link_card_line(about, renderer.words)
    message = replace(with_first_line(message, line), subjects=message.subjects)
    return replace(message, reply_to=number(job.data))


# Each the answer to its own link: never in a digest.
SHAPE = Shape("link_card", link_card, alone=True)
