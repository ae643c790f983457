"""The alert, as every stage after a webhook's page reads it and as a job keeps it: one value,
read from the webhook's body once, by its source's page (each source's package reads its own
webhooks into it), and written into the job whole (`alert_as_json`), so that what renders it
when it is sent reads back exactly what was written (`alert_from_json`), never a source's body.

Its shapes: the issues an alert names (`IssueAlert`), the changes of state of monitors or of
metric alerts (`UptimeAlert`), and a body no source's page could read (`UnrecognizedPayload`),
forwarded as it came, because an alert the relay cannot read must still reach the chat.

A job written before the alert was kept this way keeps its source's body (the first source's
webhook shape, another source's marked in it), under another key: `kept_alert` reads either,
the older through the one reader the first source declares (core/sources.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .errors import Unreadable

# "warning": a source's state short of down (a metric alert's), which opens the same thread an
# outage does.
MonitorState = Literal["down", "warning", "up", "unknown"]
MONITOR_STATES: tuple[MonitorState, ...] = ("down", "warning", "up", "unknown")
# How grave an issue looks as its source marks it (by a colour): "error" may be an error or a
# fatal one, "warning" any level a source does not colour; "other" a mark no source is known
# to use.
Level = Literal["error", "warning", "info", "other"]
LEVELS: tuple[Level, ...] = ("error", "warning", "info", "other")
# An issue's own level, where its source says it.
OWN_LEVELS = ("fatal", "error", "warning", "info", "debug")
# How grave each level looks, as the trackers colour them: fatal as error, warning and below
# alike (uncoloured).
_SHADE_OF_LEVEL: dict[str, Level] = {"fatal": "error", "error": "error", "info": "info"}
# What an alert of issues is: their alert ("issue"), or issues just created, which the routes
# send only where a route asks for that kind (routes/table.py).
IssueKind = Literal["issue", "created"]
ISSUE_KINDS: tuple[IssueKind, ...] = ("issue", "created")
# Issues (or monitors) an alert holds. A source may count more ("(1900 issues)"); a message
# shows a few dozen at most and counts the rest, so a huge webhook costs no more than this.
MAX_ITEMS_READ = 100


@dataclass(frozen=True)
class Field:
    title: str
    value: str


@dataclass(frozen=True)
class Issue:
    title: str
    link: str | None
    culprit: str | None
    # How grave it looks, as its source marked it: what routes and markers read where its own
    # level is not known.
    shade: Level
    short_id: str | None
    fields: tuple[Field, ...]
    # Its own level, where its source says it.
    level: str | None = None


@dataclass(frozen=True)
class IssueAlert:
    heading: str
    issues: tuple[Issue, ...]  # the first MAX_ITEMS_READ of the webhook's
    # How many issues its source counted: at least as many as it lists.
    total: int
    # Its source's name (core/sources.py).
    source: str
    kind: IssueKind = "issue"


@dataclass(frozen=True)
class MonitorChange:
    name: str
    link: str | None
    sentence: str
    state: MonitorState


@dataclass(frozen=True)
class UptimeAlert:
    heading: str
    monitors: tuple[MonitorChange, ...]  # the first MAX_ITEMS_READ of the webhook's
    total: int
    source: str


@dataclass(frozen=True)
class UnrecognizedPayload:
    payload: dict[str, Any]
    source: str


Alert = IssueAlert | UptimeAlert | UnrecognizedPayload

# The key of a job's data that holds its alert as `alert_as_json` wrote it.
ALERT_KEY = "alert"
# The key that held, before, its source's webhook body: read by the first source's reader.
KEPT_BODY_KEY = "webhook"

# The words of a payload the relay does not know, at most: a log line's worth.
PLAIN_TEXT_CHARS = 1000


def shade_of_level(level: str | None) -> Level:
    """How an issue of its own `level` looks (an alert made from a tracker's answer, which says
    the level rather than a colour): as its webhook would have coloured it."""
    return _SHADE_OF_LEVEL.get(level or "", "warning")


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


def alert_as_json(alert: Alert) -> dict[str, Any]:
    """The alert as a job keeps it: every field, by name."""
    if isinstance(alert, IssueAlert):
        return {
            "shape": "issues",
            "source": alert.source,
            "kind": alert.kind,
            "heading": alert.heading,
            "total": alert.total,
            "issues": [_issue_as_json(issue) for issue in alert.issues],
        }
    if isinstance(alert, UptimeAlert):
        return {
            "shape": "monitors",
            "source": alert.source,
            "heading": alert.heading,
            "total": alert.total,
            "monitors": [
                {"name": m.name, "link": m.link, "sentence": m.sentence, "state": m.state}
                for m in alert.monitors
            ],
        }
    return {"shape": "unrecognized", "source": alert.source, "payload": alert.payload}


def _issue_as_json(issue: Issue) -> dict[str, Any]:
    return {
        "title": issue.title,
        "link": issue.link,
        "culprit": issue.culprit,
        "shade": issue.shade,
        "short_id": issue.short_id,
        "fields": [[field.title, field.value] for field in issue.fields],
        "level": issue.level,
    }


def alert_from_json(raw: object) -> Alert:
    """The alert `alert_as_json` wrote. Anything else (a shape, a field or a value this relay
    does not know) is `Unreadable`, saying what: never read as another alert."""
    data = _object(raw, "the alert")
    shape, source = data.get("shape"), _text(data, "source")
    if shape == "issues":
        kind = data.get("kind")
        if kind not in ISSUE_KINDS:
            raise Unreadable(f"the alert's kind {kind!r} is none this relay knows")
        issues = tuple(_issue_from_json(each) for each in _list(data, "issues"))
        return IssueAlert(_text(data, "heading"), issues, _count(data), source, kind)
    if shape == "monitors":
        monitors = tuple(_monitor_from_json(each) for each in _list(data, "monitors"))
        return UptimeAlert(_text(data, "heading"), monitors, _count(data), source)
    if shape == "unrecognized":
        return UnrecognizedPayload(_object(data.get("payload"), "its payload"), source)
    raise Unreadable(f"the alert's shape {shape!r} is none this relay knows")


def kept_alert(
    data: Mapping[str, Any], read_body: Callable[[dict[str, Any]], Alert] | None
) -> Alert | None:
    """The alert a job's data keeps: as this relay writes it, or as a relay before it did (its
    source's body, read by `read_body`, the first source's reader); None when it keeps neither.
    Unreadable when what it keeps cannot be read back."""
    if ALERT_KEY in data:
        return alert_from_json(data[ALERT_KEY])
    if KEPT_BODY_KEY in data:
        return alert_or_body(data[KEPT_BODY_KEY], read_body)
    return None


def alert_or_body(raw: object, read_body: Callable[[dict[str, Any]], Alert] | None) -> Alert:
    """An alert kept whole (`alert_as_json`'s), or, where a relay before kept its source's body
    instead (a watched issue's row, say), that body read by `read_body`."""
    if isinstance(raw, dict) and "shape" not in raw:
        if read_body is None:
            raise Unreadable("it keeps a webhook's body, and no source reads one")
        return read_body(raw)
    return alert_from_json(raw)


def _issue_from_json(raw: object) -> Issue:
    data = _object(raw, "an issue")
    shade = data.get("shade")
    if shade not in LEVELS:
        raise Unreadable(f"an issue's shade {shade!r} is none this relay knows")
    fields = []
    for pair in _list(data, "fields"):
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise Unreadable(f"an issue's field {pair!r} is not a title and a value")
        fields.append(Field(pair[0], pair[1]))
    return Issue(
        title=_text(data, "title"),
        link=_optional_text(data, "link"),
        culprit=_optional_text(data, "culprit"),
        shade=shade,
        short_id=_optional_text(data, "short_id"),
        fields=tuple(fields),
        level=_optional_text(data, "level"),
    )


def _monitor_from_json(raw: object) -> MonitorChange:
    data = _object(raw, "a monitor")
    state = data.get("state")
    if state not in MONITOR_STATES:
        raise Unreadable(f"a monitor's state {state!r} is none this relay knows")
    return MonitorChange(
        _text(data, "name"), _optional_text(data, "link"), _text(data, "sentence"), state
    )


def _object(raw: object, what: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Unreadable(f"{what} is not a JSON object")
    return raw


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise Unreadable(f"the alert's {key} is not a list")
    return value


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise Unreadable(f"the alert's {key} is not a string")
    return value


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise Unreadable(f"the alert's {key} is not a string")
    return value


def _count(data: Mapping[str, Any]) -> int:
    value = data.get("total")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Unreadable("the alert's total is not a count")
    return value
