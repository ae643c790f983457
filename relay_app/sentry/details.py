"""An issue's details (core/issue_details.py's `IssueDetails`: the frame, the line, the count,
the level, the exception) from what Sentry's webhook itself carries: the event of an issue
alert, in Sentry's own event form (`exception.values[].stacktrace.frames[]`, snake_case), and
the issue of an issue webhook. No look-up is needed, so none is made.

Only the fields named here are read: a frame's `vars`, the event's request, user and tags hold
passwords, tokens and personal data."""

from __future__ import annotations

from typing import Any

from ..core.issue_details import IssueDetails
from ..core.issue_details import field_text as _text
from ..core.json_values import json_object, json_objects
from ..issue_api.details import EVENT_FRAMES, details_from, frame_of, frames_of, stack_of


def details_of(event: dict[str, Any] | None, issue: dict[str, Any]) -> IssueDetails:
    """The details of `issue` (Sentry's issue JSON, or what is known of it) and of `event`
    (None: none came)."""
    found = details_from(issue, None)
    if not event:
        return found
    exception = _exception(event)
    metadata = json_object(event.get("metadata"))
    return IssueDetails(
        frame=frame_of(exception, EVENT_FRAMES),
        stack=stack_of(exception, EVENT_FRAMES),
        count=found.count,
        first_seen=found.first_seen,
        level=found.level,
        exception_type=_text(exception.get("type")) or _text(metadata.get("type")),
        exception_value=_text(exception.get("value")) or _text(metadata.get("value")),
    )


def _exception(event: dict[str, Any]) -> dict[str, Any]:
    """Of a chain, the last exception with frames (Sentry's order runs from the first cause to
    the exception caught)."""
    values = json_objects(json_object(event.get("exception")).get("values"))
    with_frames = [value for value in values if frames_of(value)]
    return (with_frames or values or [{}])[-1]
