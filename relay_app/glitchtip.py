"""GlitchTip's general ("Slack-compatible") webhook payload, read into plain data.

`parse_alert` accepts any JSON object and never raises: a payload it does not recognise comes
back as `UnrecognizedPayload`, to be forwarded as it is, because an alert we cannot read must
still reach the chat. Shapes: ../shared/reference/glitchtip-webhooks.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

_ISSUE_TOTAL = re.compile(r"\((\d+) issues?\)")
_SHORT_ID = re.compile(r"\[View Issue ([^\]]+)\]")

MonitorState = Literal["down", "up", "unknown"]


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


@dataclass(frozen=True)
class IssueAlert:
    heading: str
    issues: tuple[Issue, ...]
    # GlitchTip attaches at most MAX_ISSUES_PER_ALERT issues but counts all of them here.
    total: int


@dataclass(frozen=True)
class MonitorChange:
    name: str
    link: str | None
    sentence: str
    state: MonitorState


@dataclass(frozen=True)
class UptimeAlert:
    heading: str
    monitors: tuple[MonitorChange, ...]


@dataclass(frozen=True)
class UnrecognizedPayload:
    payload: dict[str, Any]


Alert = IssueAlert | UptimeAlert | UnrecognizedPayload


# GlitchTip's payloads nest four deep; anything past this is not an alert.
MAX_JSON_DEPTH = 64
_TOO_DEEP = f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels; GlitchTip's payloads do not"


class PayloadError(ValueError):
    """The webhook's body is not a JSON object: nothing the relay can forward."""


def payload_from_json(body: bytes) -> dict[str, Any]:
    """The webhook's body as a JSON object (GlitchTip always posts one)."""
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
    return payload


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
    if (
        not isinstance(attachments, list)
        or not attachments
        or not all(isinstance(item, dict) for item in attachments)
        or not isinstance(heading, str | None)
    ):
        return UnrecognizedPayload(payload)
    heading = heading or ""
    if "uptime" in heading.lower():
        return UptimeAlert(heading, tuple(_monitor_change(item) for item in attachments))
    sections = _sections(payload.get("sections"))
    issues = tuple(_issue(item, index, sections) for index, item in enumerate(attachments))
    total_match = _ISSUE_TOTAL.search(heading)
    total = max(int(total_match.group(1)), len(issues)) if total_match else len(issues)
    return IssueAlert(heading, issues, total)


def _issue(item: dict[str, Any], index: int, sections: list[dict[str, Any]]) -> Issue:
    title = _text(item.get("title"))
    return Issue(
        title=title,
        link=_text(item.get("title_link")) or None,
        culprit=_text(item.get("text")) or None,
        color=_text(item.get("color")).lower() or None,
        short_id=_short_id_for(title, index, sections),
        fields=_fields(item.get("fields")),
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


def _sections(raw: object) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        return []
    return [section for section in raw if isinstance(section, dict)]


def _short_id(section: dict[str, Any]) -> str | None:
    match = _SHORT_ID.search(_text(section.get("activitySubtitle")))
    return match.group(1) if match else None


def _short_id_for(title: str, index: int, sections: list[dict[str, Any]]) -> str | None:
    # GlitchTip writes one section per attachment, in the same order; the title check guards
    # against payloads where the two lists do not line up.
    candidates = sections[index : index + 1] + sections
    for section in candidates:
        if _text(section.get("activityTitle")) == title:
            return _short_id(section)
    return None


def _text(value: object) -> str:
    """User data as a string: None becomes empty, numbers and the like their JSON-ish form."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
