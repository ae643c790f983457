"""GlitchTip's general ("Slack-compatible") webhook payload, read into plain data.

`parse_alert` accepts any JSON object and never raises: a payload it does not recognise comes
back as `UnrecognizedPayload`, to be forwarded as it is, because an alert we cannot read must
still reach the chat. Shapes: ../shared/reference/glitchtip-webhooks.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeGuard

from ..core.client_text import cleaned
from ..core.json_values import json_objects

_ISSUE_TOTAL = re.compile(r"\((\d+) issues?\)")
_SHORT_ID = re.compile(r"\[View Issue ([^\]]+)\]")

# "warning": a source's state short of down (Sentry's metric alert), which opens the same
# thread an outage does.
MonitorState = Literal["down", "warning", "up", "unknown"]
_STATED = ("down", "warning", "up")
# The issue's level, as the webhook tells it: only by the attachment's colour, #e52b50 for error
# and fatal, #4b60b4 for info, none for warning and the other levels.
Level = Literal["error", "warning", "info", "other"]
_LEVEL_BY_COLOR: dict[str, Level] = {"#e52b50": "error", "#4b60b4": "info"}
# An issue's own level, where a payload says it (Sentry's, read into this shape: sentry/hooks.py).
OWN_LEVELS = ("fatal", "error", "warning", "info", "debug")
# The key that marks a payload read from another source into GlitchTip's shape, and names it
# ("sentry"). GlitchTip's own webhooks never carry it; the view takes it out of theirs.
SOURCE_KEY = "relay_source"
# The key that marks what another source's alert is, where GlitchTip's shape cannot say it:
# "created", an issue just created (Sentry's `issue.created`), which the routes send only where
# a route asks for that kind (routes/table.py); "monitor", a change of state each attachment
# names in its "state" (Sentry's metric alerts: critical is down, resolved up).
KIND_KEY = "relay_kind"
# The sources an alert may come from, as the routes' `source` names them.
SOURCES = ("glitchtip", "sentry")


def as_glitchtips(payload: dict[str, Any]) -> dict[str, Any]:
    """A webhook posted to GlitchTip's URL, as GlitchTip's: whatever marks it claims are taken
    out, so that it cannot pass for another source's."""
    if SOURCE_KEY not in payload and KIND_KEY not in payload:
        return payload  # GlitchTip's own, as every one of them is: no copy on its way in
    return {key: value for key, value in payload.items() if key not in (SOURCE_KEY, KIND_KEY)}


def source_of(payload: dict[str, Any]) -> str:
    """Which source a payload is from: GlitchTip's, unless it is marked as another's."""
    said = payload.get(SOURCE_KEY)
    return said if isinstance(said, str) and said in SOURCES else "glitchtip"


def level_of(color: str | None) -> Level:
    """An issue's level from its attachment's colour; 'other' for a colour GlitchTip never
    sends."""
    if not color:
        return "warning"
    return _LEVEL_BY_COLOR.get(color.lower(), "other")


@dataclass(frozen=True)
class Field:
    title: str
    value: str


@dataclass(frozen=True)
class Issue:
    title: str
    link: str | None
    culprit: str | None
    color: str | None
    short_id: str | None
    fields: tuple[Field, ...]
    # Its own level, where the payload says it (GlitchTip's webhook says only a colour).
    level: str | None = None


@dataclass(frozen=True)
class IssueAlert:
    heading: str
    issues: tuple[Issue, ...]  # the first MAX_ITEMS_READ of the payload's
    # GlitchTip attaches at most MAX_ISSUES_PER_ALERT issues but counts all of them here; so
    # does the relay, for those past MAX_ITEMS_READ.
    total: int
    # Where it came from (SOURCES): GlitchTip, or another source read into its shape.
    source: str = "glitchtip"


@dataclass(frozen=True)
class MonitorChange:
    name: str
    link: str | None
    sentence: str
    state: MonitorState


@dataclass(frozen=True)
class UptimeAlert:
    heading: str
    monitors: tuple[MonitorChange, ...]  # the first MAX_ITEMS_READ of the payload's
    total: int


@dataclass(frozen=True)
class UnrecognizedPayload:
    payload: dict[str, Any]


Alert = IssueAlert | UptimeAlert | UnrecognizedPayload


# GlitchTip's payloads are a few kilobytes; anything near this is not an alert (nor one of
# Telegram's updates). Larger bodies are answered 413, however they are sent.
MAX_BODY_BYTES = 1024 * 1024
# Issues (or monitors) read from one webhook. GlitchTip sends 3 by default (its
# MAX_ISSUES_PER_ALERT) and a message shows a few dozen at most; the rest are counted ("…and
# 1900 more issues not shown here"), so a huge webhook costs no more than this many.
MAX_ITEMS_READ = 100
# GlitchTip's payloads nest four deep; anything past this is not an alert.
MAX_JSON_DEPTH = 64
_TOO_DEEP = f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels; GlitchTip's payloads do not"


class PayloadError(ValueError):
    """The webhook's body is not a JSON object: nothing the relay can forward."""


def payload_from_json(body: bytes) -> dict[str, Any]:
    """The webhook's body as a JSON object (GlitchTip always posts one), its strings cleaned
    (core/client_text.py)."""
    if not body.strip():
        raise PayloadError("the body is empty; expected a JSON object from GlitchTip")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError(f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise PayloadError(_TOO_DEEP) from None
    if not isinstance(payload, dict):
        raise PayloadError(f"expected a JSON object, got a JSON {_json_kind(payload)}")
    if _depth_over(payload, MAX_JSON_DEPTH):
        # Shallow enough for the parser, still too deep for what renders a payload it does
        # not know (recursive, as json.dumps is): refused here, with a reason, not a crash.
        raise PayloadError(_TOO_DEEP)
    # Every string, once: no lone surrogate, control or bidirectional character goes further.
    return dict(cleaned(payload))


def _depth_over(value: dict[str, Any], limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` deep (without recursion)."""
    level: list[Any] = [value]
    for _ in range(limit):
        children: list[Any] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            children += [item for item in items if isinstance(item, dict | list)]
        if not children:
            return False
        level = children
    return True


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool) or value is None:
        return "literal"
    return "number"


def parse_alert(payload: dict[str, Any]) -> Alert:
    attachments = payload.get("attachments")
    heading = payload.get("text")
    if not _items(attachments) or not isinstance(heading, str | None):
        return UnrecognizedPayload(payload)
    heading = heading or ""
    read = attachments[:MAX_ITEMS_READ]
    if payload.get(KIND_KEY) == "monitor":
        changes = tuple(_stated_change(item) for item in read)
        return UptimeAlert(heading, changes, len(attachments))
    if "uptime" in heading.lower():
        return UptimeAlert(heading, tuple(_monitor_change(item) for item in read), len(attachments))
    short_ids = _ShortIds(payload.get("sections"))
    issues = tuple(_issue(item, index, short_ids) for index, item in enumerate(read))
    total_match = _ISSUE_TOTAL.search(heading)
    total = len(attachments)
    if total_match:
        total = max(int(total_match.group(1)), total)
    return IssueAlert(heading, issues, total, source=source_of(payload))


# The words of a payload the relay does not know, at most: a log line's worth.
PLAIN_TEXT_CHARS = 1000


def plain_text(alert: Alert) -> str:
    """The alert's words without a message's markup or layout: its heading, then each issue's
    title and culprit, or each monitor's name and sentence; a payload the relay does not know,
    as its JSON. What its arrival's note keeps (`relay-app glitchtip connect --test` looks for
    its mark there), made without rendering its message."""
    if isinstance(alert, IssueAlert):
        said = [
            "\n".join(part for part in (issue.title, issue.culprit) if part)
            for issue in alert.issues
        ]
    elif isinstance(alert, UptimeAlert):
        said = [f"{monitor.name}: {monitor.sentence}" for monitor in alert.monitors]
    else:
        return json.dumps(alert.payload, ensure_ascii=False)[:PLAIN_TEXT_CHARS]
    return "\n\n".join([alert.heading, *said]) if alert.heading else "\n\n".join(said)


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
        color=_text(item.get("color")).lower() or None,
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


def with_short_ids(
    payload: dict[str, Any], short_id_of: Callable[[str], str | None]
) -> dict[str, Any]:
    """The payload naming its issues' short ids where `short_id_of` knows them (by the
    issue's link), as GlitchTip's own webhook does in its `sections`; as it was when it has
    sections already (GlitchTip's) or none is known."""
    if payload.get("sections"):
        return payload
    sections: list[dict[str, Any]] = []
    for item in json_objects(payload.get("attachments")):
        link, title = item.get("title_link"), _text(item.get("title"))
        short_id = short_id_of(link) if isinstance(link, str) and link else None
        section: dict[str, Any] = {"activityTitle": title}
        if short_id:
            section["activitySubtitle"] = f"[View Issue {short_id}]({link})"
        sections.append(section)
    if not any("activitySubtitle" in section for section in sections):
        return payload
    return {**payload, "sections": sections}


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
