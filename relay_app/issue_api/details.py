"""What the issue API (GlitchTip's, Sentry's) says about an issue beyond the webhook, read into
the core's details of an issue (core/issue_details.py): where the error was raised, how often
and since when, its level, and the exception's whole value. Read from two answers
(`GET /api/0/issues/<id>/` and `.../events/latest/`), as a real GlitchTip gives them:
../shared/reference/glitchtip-api.md and glitchtip-samples/ beside it.

Only the fields named here are ever read. A frame's `vars` (its local variables), the event's
request, user and tags hold passwords, tokens and personal data: nothing here looks at them, so
nothing of them can reach a message. Pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.issue_details import (
    MAX_STACK,
    Frame,
    IssueDetails,
    count_of,
    field_text,
    short_id_of,
)
from ..core.json_values import json_int, json_object, json_objects


def details_from(issue: dict[str, Any], event: dict[str, Any] | None) -> IssueDetails:
    """The details in the issue's answer and its latest event's (None: not read)."""
    metadata = json_object(issue.get("metadata"))
    exception = _exception(event) if event is not None else {}
    return IssueDetails(
        frame=frame_of(exception) if exception else None,
        stack=stack_of(exception) if exception else (),
        count=count_of(issue.get("count")),
        first_seen=iso_time(issue.get("firstSeen")),
        level=field_text(issue.get("level")),
        exception_type=field_text(exception.get("type")) or field_text(metadata.get("type")),
        exception_value=field_text(exception.get("value")) or field_text(metadata.get("value")),
        short_id=short_id_of(issue.get("shortId")),
    )


def _exception(event: dict[str, Any]) -> dict[str, Any]:
    """The exception that was raised: of a chain, the last one with a stack trace (Sentry's
    order runs from the first cause to the exception caught)."""
    for entry in json_objects(event.get("entries")):
        if entry.get("type") != "exception":
            continue
        values = json_objects(json_object(entry.get("data")).get("values"))
        with_frames = [v for v in values if frames_of(v)]
        if with_frames or values:
            return (with_frames or values)[-1]
    return {}


@dataclass(frozen=True)
class FrameKeys:
    """How a frame's fields are spelt: as GlitchTip's (and Sentry's) API answers an event
    (`inApp`, `lineNo`, `absPath`), or as an event itself has them, in Sentry's webhook."""

    in_app: str = "inApp"
    line: str = "lineNo"
    abs_path: str = "absPath"


API_FRAMES = FrameKeys()
EVENT_FRAMES = FrameKeys("in_app", "lineno", "abs_path")


def frame_of(exception: dict[str, Any], keys: FrameKeys = API_FRAMES) -> Frame | None:
    """The innermost frame marked as the app's own code, else the innermost of all: frames
    run from the outermost call to the innermost."""
    frames = frames_of(exception)
    own = [frame for frame in frames if frame.get(keys.in_app) is True]
    if not frames or (name := _file_name(chosen := (own or frames)[-1], keys)) is None:
        return None
    return Frame(
        filename=name,
        line=json_int(chosen.get(keys.line)),
        function=field_text(chosen.get("function")),
        source=field_text(chosen.get("context_line")),
    )


def stack_of(exception: dict[str, Any], keys: FrameKeys = API_FRAMES) -> tuple[Frame, ...]:
    """The frames of the app's own code, innermost first, at most MAX_STACK (where none is
    marked the app's, the innermost of all); a frame without a file's name is left out."""
    frames = frames_of(exception)
    own = [frame for frame in frames if frame.get(keys.in_app) is True] or frames
    stack = []
    for frame in reversed(own):
        name = _file_name(frame, keys)
        if name is None:
            continue
        line = json_int(frame.get(keys.line))
        stack.append(Frame(name, line, field_text(frame.get("function")), None))
        if len(stack) == MAX_STACK:
            break
    return tuple(stack)


def frames_of(exception: dict[str, Any]) -> list[dict[str, Any]]:
    return json_objects(json_object(exception.get("stacktrace")).get("frames"))


def _file_name(frame: dict[str, Any], keys: FrameKeys) -> str | None:
    name = field_text(frame.get("filename")) or field_text(frame.get("module"))
    if name is None:
        path = field_text(frame.get(keys.abs_path))
        name = path.rsplit("/", 1)[-1] if path else None
    return name


def iso_time(value: object) -> float | None:
    """GlitchTip's ISO 8601 time ('2026-12-01T17:09:24.024Z') as a Unix time."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None
