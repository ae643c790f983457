"""GlitchTip webhook payloads as GlitchTip builds them (apps/alerts/webhooks.py and
apps/uptime/webhooks.py; see ../shared/reference/glitchtip-webhooks.md)."""

from __future__ import annotations

from typing import Any

from relay_app.core.alerts import Alert, IssueAlert, UnrecognizedPayload, UptimeAlert
from relay_app.glitchtip.webhook import read_kept
from relay_app.message.formatting import Message
from relay_app.message.formatting import message_for as formatted_message_for
from relay_app.words import Words

ERROR_COLOR = "#e52b50"
INFO_COLOR = "#4b60b4"


def issue(
    number: int = 1,
    *,
    title: str | None = None,
    culprit: str | None = "app.views.divide",
    color: str | None = ERROR_COLOR,
    fields: list[dict[str, Any]] | None = None,
    link: str | None = None,
) -> dict[str, Any]:
    return {
        "title": title if title is not None else f"ZeroDivisionError: division by zero #{number}",
        "title_link": link
        if link is not None
        else f"https://glitchtip.example.org/acme/issues/{number}",
        "text": culprit,
        "image_url": None,
        "color": color,
        "fields": fields
        if fields is not None
        else [
            {"title": "Project", "value": "backend", "short": True},
            {"title": "Environment", "value": "production", "short": True},
            {"title": "Server Name", "value": "web-1", "short": True},
            {"title": "Release", "value": "1.4.2", "short": False},
        ],
        "mrkdown_in": ["text"],
    }


def issue_alert(*attachments: dict[str, Any], total: int | None = None) -> dict[str, Any]:
    if not attachments:
        attachments = (issue(1),)
    count = total if total is not None else len(attachments)
    return {
        "alias": "GlitchTip",
        "text": "GlitchTip Alert" + (f" ({count} issues)" if count > 1 else ""),
        "attachments": list(attachments),
        "sections": [
            {
                "activityTitle": a["title"],
                "activitySubtitle": f"[View Issue BACKEND-{index + 1}A]({a['title_link']})",
            }
            for index, a in enumerate(attachments)
        ],
    }


def uptime_alert(*, down: bool, name: str = "My API") -> dict[str, Any]:
    sentence = "The monitored site has gone down." if down else "The monitored site is back up."
    return {
        "alias": "GlitchTip",
        "text": "GlitchTip Uptime Alert",
        "attachments": [
            {
                "title": name,
                "title_link": "https://glitchtip.example.org/acme/uptime-monitors/42",
                "text": sentence,
                "image_url": None,
                "color": None,
                "fields": None,
                "mrkdown_in": None,
            }
        ],
        "sections": [{"activityTitle": name, "activitySubtitle": sentence}],
    }


def read(body: dict[str, Any] | Alert) -> Alert:
    """The alert the relay reads from a body: as GlitchTip's page reads it, or, for a body
    marked as another source's (as relays before kept them), as that source's; an alert is
    itself."""
    if isinstance(body, IssueAlert | UptimeAlert | UnrecognizedPayload):
        return body
    return read_kept(body)


def message_for(body: dict[str, Any] | Alert, words: Words, **given: Any) -> Message:
    """The message for a body, as a job renders its alert (message/formatting.py)."""
    return formatted_message_for(read(body), words, **given)
