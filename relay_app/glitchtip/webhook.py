"""GlitchTip's general ("Slack-compatible") webhook payload, read into the relay's alert
(core/alerts.py).

`read_webhook` accepts any JSON object and never raises: a payload it does not recognise comes
back as `UnrecognizedPayload`, to be forwarded as it is, because an alert we cannot read must
still reach the chat. Shapes: ../shared/reference/glitchtip-webhooks.md.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, TypeGuard

from ..core.alerts import (
    MAX_ITEMS_READ,
    OWN_LEVELS,
    Alert,
    Field,
    Issue,
    IssueAlert,
    Level,
    MonitorChange,
    MonitorState,
    UnrecognizedPayload,
    UptimeAlert,
)
from ..core.json_values import json_objects

_ISSUE_TOTAL = re.compile(r"\((\d+) issues?\)")
# GlitchTip's own headings, which the chat reads in its language (read_heading).
_OWN_HEADING = "GlitchTip Alert"
_COUNTED_HEADING = re.compile(r"GlitchTip Alert \((\d+) issues?\)")
_SHORT_ID = re.compile(r"\[View Issue ([^\]]+)\]")

_STATED = ("down", "warning", "up")
# An issue's shade, as GlitchTip's webhook tells it: only by the attachment's colour, #e52b50
# for error and fatal, #4b60b4 for info, none for warning and the other levels.
_SHADE_BY_COLOR: dict[str, Level] = {"#e52b50": "error", "#4b60b4": "info"}
# The marks a relay before the alert was kept whole (core/alerts.py) put in another source's
# alert, kept in GlitchTip's shape: which source ("sentry"), and what it was where GlitchTip's
# shape cannot say it ("created": an issue just created; "monitor": a change of state each
# attachment names in its "state"). GlitchTip's own webhooks never carry them, and a webhook
# posted to GlitchTip's URL is read without them.
SOURCE_KEY = "relay_source"
KIND_KEY = "relay_kind"
# The sources an alert kept that way may be from.
_MARKED_SOURCES = ("glitchtip", "sentry")


def shade_of(color: str | None) -> Level:
    """An issue's shade from its attachment's colour; 'other' for a colour GlitchTip never
    sends."""
    if not color:
        return "warning"
    return _SHADE_BY_COLOR.get(color.lower(), "other")


def read_webhook(payload: dict[str, Any]) -> Alert:
    """A webhook posted to GlitchTip's URL, read: GlitchTip's, whatever marks it claims."""
    return _read(payload, marked=False)


def read_heading(heading: str) -> int | None:
    """A heading GlitchTip writes in its own words: the issues it counts ('GlitchTip Alert (5
    issues)': 5; 'GlitchTip Alert': 0); None for any other, shown as it came."""
    if heading == _OWN_HEADING:
        return 0
    counted = _COUNTED_HEADING.fullmatch(heading)
    return int(counted.group(1)) if counted else None


def read_kept(payload: dict[str, Any]) -> Alert:
    """An alert a relay before this one kept as GlitchTip's webhook, another source's marked
    in it (SOURCE_KEY, KIND_KEY): the reader the sources declare for such jobs."""
    return _read(payload, marked=True)


def _read(payload: dict[str, Any], *, marked: bool) -> Alert:
    source, kind = _marks(payload) if marked else ("glitchtip", None)
    attachments = payload.get("attachments")
    heading = payload.get("text")
    if not _items(attachments) or not isinstance(heading, str | None):
        return UnrecognizedPayload(payload, source)
    heading = heading or ""
    if kind == "monitor" or "uptime" in heading.lower():
        read_change = _stated_change if kind == "monitor" else _monitor_change
        monitors = tuple(read_change(item) for item in attachments[:MAX_ITEMS_READ])
        return UptimeAlert(heading, monitors, len(attachments), source)
    return _issue_alert(payload, heading, attachments, source, created=kind == "created")


def _issue_alert(
    payload: dict[str, Any],
    heading: str,
    attachments: list[dict[str, Any]],
    source: str,
    *,
    created: bool,
) -> IssueAlert:
    short_ids = _ShortIds(payload.get("sections"))
    read = attachments[:MAX_ITEMS_READ]
    issues = tuple(_issue(item, index, short_ids) for index, item in enumerate(read))
    # GlitchTip attaches at most MAX_ISSUES_PER_ALERT issues but counts all of them here.
    counted = _ISSUE_TOTAL.search(heading)
    total = max(int(counted.group(1)) if counted else 0, len(attachments))
    return IssueAlert(heading, issues, total, source, "created" if created else "issue")


def _marks(payload: dict[str, Any]) -> tuple[str, object]:
    """The source and the kind a relay before marked a body it kept with."""
    said = payload.get(SOURCE_KEY)
    source = said if isinstance(said, str) and said in _MARKED_SOURCES else "glitchtip"
    return source, payload.get(KIND_KEY)


def _items(attachments: object) -> TypeGuard[list[dict[str, Any]]]:
    """Whether GlitchTip's attachments are as it sends them: a list of objects, not empty."""
    return (
        isinstance(attachments, list)
        and bool(attachments)
        and all(isinstance(item, dict) for item in attachments)
    )


def _issue(item: dict[str, Any], index: int, short_ids: _ShortIds) -> Issue:
    title = _text(item.get("title"))
    return Issue(
        title=title,
        link=_text(item.get("title_link")) or None,
        culprit=_text(item.get("text")) or None,
        shade=shade_of(_text(item.get("color")) or None),
        short_id=short_ids.of(title, index),
        fields=_fields(item.get("fields")),
        level=level if (level := item.get("level")) in OWN_LEVELS else None,
    )


def _monitor_change(item: dict[str, Any]) -> MonitorChange:
    sentence = _text(item.get("text"))
    lowered = sentence.lower()
    state: MonitorState = "unknown"
    if "down" in lowered:
        state = "down"
    elif "back up" in lowered or lowered.rstrip(".").endswith(" up"):
        state = "up"
    return MonitorChange(
        name=_text(item.get("title")),
        link=_text(item.get("title_link")) or None,
        sentence=sentence,
        state=state,
    )


def _stated_change(item: dict[str, Any]) -> MonitorChange:
    """A change of state whose attachment names it ("down", "warning", "up")."""
    state = item.get("state")
    return replace(_monitor_change(item), state=state if state in _STATED else "unknown")


def _fields(raw: object) -> tuple[Field, ...]:
    if not isinstance(raw, list):
        return ()
    fields = []
    for item in raw:
        if isinstance(item, dict):
            fields.append(Field(_text(item.get("title")), _text(item.get("value"))))
        elif item is not None:
            fields.append(Field("", _text(item)))
    return tuple(field for field in fields if field.title or field.value)


class _ShortIds:
    """Each issue's short id, from the `sections` GlitchTip writes for Microsoft Teams: one per
    attachment, in the same order; the title check guards against payloads where the two lists
    do not line up, and then the first section with the issue's title is used."""

    def __init__(self, raw: object) -> None:
        self._sections = json_objects(raw)
        self._by_title: dict[str, dict[str, Any]] | None = None

    def of(self, title: str, index: int) -> str | None:
        if index < len(self._sections):
            aligned = self._sections[index]
            if _text(aligned.get("activityTitle")) == title:
                return self._short_id(aligned)
        if self._by_title is None:  # built once, and only for payloads that need it
            self._by_title = {}
            for section in self._sections:
                self._by_title.setdefault(_text(section.get("activityTitle")), section)
        found = self._by_title.get(title)
        return self._short_id(found) if found is not None else None

    @staticmethod
    def _short_id(section: dict[str, Any]) -> str | None:
        match = _SHORT_ID.search(_text(section.get("activitySubtitle")))
        return match.group(1) if match else None


def _text(value: object) -> str:
    """User data as a string: None becomes empty, numbers and the like their JSON-ish form."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
