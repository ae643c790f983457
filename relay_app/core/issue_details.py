"""What a source's API says of an issue beyond its webhook, as the core reads it whichever
source said it: where the error was raised, how often and since when, its level, the exception's
whole value, its stack; and as a job keeps it (`details_as_json`, read back by
`details_from_json`). Each source's package reads its own API's answers into it
(issue_api/details.py, sentry/details.py). Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .client_text import clean
from .json_values import json_count, json_object
from .services import Key

# Longer values say nothing more in a chat; a tracker keeps them whole.
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
    count: int | None  # events in the issue (some answers say it as a string)
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
            count=count_of(found.get("count")),
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


def short_id_of(value: object) -> str | None:
    """An issue's short id (its `shortId`), where it is one: letters, digits and dashes."""
    return value if isinstance(value, str) and _SHORT_ID.fullmatch(value) else None


def count_of(value: object) -> int | None:
    """A tracker's counts are strings in some answers ("count": "12"), numbers in others; one
    that is neither is no count ("?" where it is shown), never an error."""
    return json_count(value)


def field_text(value: object) -> str | None:
    """A field of an issue or event as a message may show it: cleaned, cut, None if empty."""
    # An event's text is anyone's who holds the project's DSN: cleaned as a webhook's is.
    text = clean(value).strip() if isinstance(value, str) else ""
    return text[:MAX_FIELD_LENGTH] or None


# An issue's last 24 hours, as the watcher last read them (None: not read, or no events).
# Raises SpoolError. The watcher provides it; an issue's details are looked up with them.
Hourly = Callable[[str], Sequence[int] | None]
HOURLY: Key[Hourly] = Key("hourly")
