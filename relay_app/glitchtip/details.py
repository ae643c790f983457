"""What GlitchTip's API says about an issue beyond the webhook: where the error was raised, how
often and since when, its level, and the exception's whole value. Read from two answers
(`GET /api/0/issues/<id>/` and `.../events/latest/`), as a real GlitchTip gives them:
../shared/reference/glitchtip-api.md and glitchtip-samples/ beside it.

Only the fields named here are ever read. A frame's `vars` (its local variables), the event's
request, user and tags hold passwords, tokens and personal data: nothing here looks at them, so
nothing of them can reach a message. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ..core.client_text import clean
from ..core.json_values import json_count, json_int, json_object, json_objects
from ..core.services import Key

# Longer values say nothing more in a chat; GlitchTip keeps them whole.
MAX_FIELD_LENGTH = 500
# A tracker's short id: the project's slug in capitals and the issue's number (`PAYMENTS-7`).
_SHORT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
# The frames of a stack a card holds, at most: the innermost of the app's own code.
MAX_STACK = 8


@dataclass(frozen=True)
class Frame:
    """The innermost frame of the app's own code, as `cart.py:4 in total` and its source line."""

    filename: str
    line: int | None
    function: str | None
    source: str | None  # the line's code (`context_line`), stripped


@dataclass(frozen=True)
class IssueDetails:
    frame: Frame | None
    count: int | None  # events in the issue (GlitchTip answers a string)
    first_seen: float | None  # Unix time
    level: str | None
    exception_type: str | None
    exception_value: str | None
    # Its last 24 hours' events, hour by hour, as the watcher last read them (watch/watcher.py);
    # empty when it has not.
    hourly: tuple[int, ...] = ()
    # The latest event's stack: the app's own frames, innermost first, at most MAX_STACK (all
    # frames' innermost where none is marked the app's); empty when it has none.
    stack: tuple[Frame, ...] = ()
    # Its source's short id (`PAYMENTS-7`), for an alert whose webhook does not name it (a
    # Sentry event alert's).
    short_id: str | None = None


def details_as_json(details: IssueDetails) -> dict[str, Any]:
    """As a job keeps them (spool), to be read back by `details_from_json`."""
    return asdict(details)


def filled(first: IssueDetails, more: IssueDetails) -> IssueDetails:
    """`first`, each of its fields it lacks taken from `more`: a webhook's own details of its
    issue (the event that fired it) filled in by what its source's API says."""
    return IssueDetails(
        **{
            name: value if value not in (None, ()) else getattr(more, name)
            for name, value in vars(first).items()
        }
    )


def details_from_json(raw: object) -> IssueDetails | None:
    """What `details_as_json` wrote; None for anything else (a person's edit)."""
    found = json_object(raw)
    if not found:
        return None
    try:
        frame, stack = _frames_from_json(found)
        return IssueDetails(
            frame=frame,
            count=_count(found.get("count")),
            first_seen=float(found["first_seen"]) if found.get("first_seen") is not None else None,
            level=field_text(found.get("level")),
            exception_type=field_text(found.get("exception_type")),
            exception_value=field_text(found.get("exception_value")),
            hourly=tuple(int(n) for n in found.get("hourly") or () if isinstance(n, int)),
            stack=stack,
            short_id=short_id_of(found.get("short_id")),
        )
    except (TypeError, ValueError, KeyError):
        return None


def details_by_issue(raw: object) -> dict[str, IssueDetails]:
    """A job's `details` (by issue id, as `details_as_json` wrote each), those that can be
    read; none for anything else."""
    return {
        str(issue): found
        for issue, value in (raw.items() if isinstance(raw, dict) else ())
        if (found := details_from_json(value)) is not None
    }


def _frames_from_json(found: dict[str, Any]) -> tuple[Frame | None, tuple[Frame, ...]]:
    """The frame and the stack `details_as_json` wrote. Raises TypeError on another shape."""
    frame = json_object(found.get("frame"))
    stack = tuple(Frame(**f) for f in found.get("stack") or () if isinstance(f, dict))
    return (Frame(**frame) if frame else None), stack


def details_from(issue: dict[str, Any], event: dict[str, Any] | None) -> IssueDetails:
    """The details in the issue's answer and its latest event's (None: not read)."""
    metadata = json_object(issue.get("metadata"))
    exception = _exception(event) if event is not None else {}
    return IssueDetails(
        frame=frame_of(exception) if exception else None,
        stack=stack_of(exception) if exception else (),
        count=_count(issue.get("count")),
        first_seen=iso_time(issue.get("firstSeen")),
        level=field_text(issue.get("level")),
        exception_type=field_text(exception.get("type")) or field_text(metadata.get("type")),
        exception_value=field_text(exception.get("value")) or field_text(metadata.get("value")),
        short_id=short_id_of(issue.get("shortId")),
    )


def short_id_of(value: object) -> str | None:
    """An issue's short id (its `shortId`), where it is one: letters, digits and dashes."""
    return value if isinstance(value, str) and _SHORT_ID.fullmatch(value) else None


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


def _count(value: object) -> int | None:
    """GlitchTip's counts are strings in some answers ("count": "12"), numbers in others; one
    that is neither is no count ("?" where it is shown), never an error."""
    return json_count(value)


def iso_time(value: object) -> float | None:
    """GlitchTip's ISO 8601 time ('2026-12-01T17:09:24.024Z') as a Unix time."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def field_text(value: object) -> str | None:
    """A field of an issue or event as a message may show it: cleaned, cut, None if empty."""
    # An event's text is anyone's who holds the project's DSN: cleaned as a webhook's is.
    text = clean(value).strip() if isinstance(value, str) else ""
    return text[:MAX_FIELD_LENGTH] or None


# An issue's last 24 hours, as the watcher last read them (None: not read, or no events).
# Raises SpoolError. The watcher provides it; an issue's details are looked up with them.
Hourly = Callable[[str], Sequence[int] | None]
HOURLY: Key[Hourly] = Key("hourly")
