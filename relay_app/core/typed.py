"""What people type that names a person or a moment, read here once and bounded here: the chat's
commands, `relay-app`'s options and the routes file all call these, so a value any of them takes
is one every other part can store, compare and show (docs/security.md).

- A person: `@username` (Telegram's: a letter, then 4 to 31 letters, digits or `_`), or
  `tg:<user id>` for someone without one; a user id is positive and at most 2^52, as Telegram
  promises ("at most 52 significant bits"), so it fits every integer column the spool has.
- A moment: a Unix time whose date is between 1970 and 9998 in every zone, so that it can be
  stored, shown on any wall clock, and have a cover's 92 days added without leaving the
  calendar `datetime` knows (year 9999 at most).
- A span: `2h`, `90m`, `3d`, `1w`, a whole number of minutes at least, at most a year.

What cannot be read is None: the caller says why, in its own words."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

# Telegram: "User identifiers have at most 52 significant bits".
MAX_USER_ID = 2**52
USERNAME = r"@[A-Za-z][A-Za-z0-9_]{3,31}"
# At most 16 digits (2^52 has 16); the bound itself is checked as a number.
TG_USER = r"tg:[1-9][0-9]{0,15}"
_PERSON = re.compile(rf"{USERNAME}|{TG_USER}")
_TG = re.compile(r"tg:([1-9][0-9]{0,15})(?![0-9])")

# The first and last moments taken: a day inside the calendar on either side, so that a moment's
# wall-clock time in any zone (at most a day away) and a cover's 92 days after it are dates too.
FIRST_MOMENT = datetime(1970, 1, 2, tzinfo=UTC).timestamp()
LAST_MOMENT = datetime(9998, 12, 31, tzinfo=UTC).timestamp()
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})")
_DAY = re.compile(r"(\d{1,2})\.(\d{1,2}) (\d{1,2}):(\d{2})")
# An ISO date and time as people type it: a four-digit year, nothing longer.
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?([+-]\d{2}:?\d{2}|Z)?)?")
_SPAN = re.compile(r"(\d{1,6})\s*([mhdw])")
_SPAN_UNIT = {"m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
MAX_SPAN = 366 * 86400.0


def user_id_of(raw: object) -> int | None:
    """A Telegram user id within its range (a number or its digits); None for anything else."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        raw = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 16 else None
    if isinstance(raw, int) and 0 < raw <= MAX_USER_ID:
        return raw
    return None


def is_person(text: str) -> bool:
    """Whether `text` names one person: `@username`, or `tg:<user id>` within Telegram's range."""
    if _PERSON.fullmatch(text) is None:
        return False
    return not text.startswith("tg:") or tg_user(text) is not None


def tg_user(mention: str) -> int | None:
    """The user id a `tg:<user id>` mention names; None for any other mention."""
    found = _TG.fullmatch(mention)
    return user_id_of(found.group(1)) if found else None


def tg_users_in(text: str) -> list[str]:
    """The `tg:<user id>` mentions in a text that name a user id, once each, in order."""
    found = (match.group(0) for match in _TG.finditer(text))
    return list(dict.fromkeys(m for m in found if tg_user(m) is not None))


def shown_name(name: str) -> str:
    """A name a person gave themselves, as the relay shows it: one line, and never a mention it
    is not. Telegram turns `@handle` in a message into a link to whoever has that username, so
    a first name `@vera_lead` would read as the lead: each `@` of a name is shown as `＠`, which
    Telegram links to nobody. A username is shown as `@username` only where Telegram said it is
    that person's."""
    return " ".join(name.split()).replace("@", "\uff20")


def within_calendar(at: float) -> bool:
    """Whether a Unix time is a moment the relay keeps (FIRST_MOMENT to LAST_MOMENT)."""
    return FIRST_MOMENT <= at <= LAST_MOMENT


def moment_of(text: str, zone: ZoneInfo, now: float) -> float | None:
    """A time as people write it, on `zone`'s wall clock: `18:00` (the next one to come),
    `2026-12-10 18:00` (or with `T`), `10.12 18:00` (this year's, or next year's once it has
    passed), or with its offset (`2026-12-10T18:00+03:00`); None for anything else, and for a
    moment outside the calendar the relay keeps."""
    text = " ".join(text.split())
    try:
        found = _read_moment(text, zone, now)
    except (ValueError, OverflowError):
        return None
    return found if found is not None and within_calendar(found) else None


def _read_moment(text: str, zone: ZoneInfo, now: float) -> float | None:
    today = datetime.fromtimestamp(now, zone)
    if (clock := _CLOCK.fullmatch(text)) is not None:
        moment = today.replace(hour=int(clock[1]), minute=int(clock[2]), second=0, microsecond=0)
        if moment.timestamp() <= now:
            moment = (moment.replace(tzinfo=None) + timedelta(days=1)).replace(tzinfo=zone)
        return moment.timestamp()
    if (day := _DAY.fullmatch(text)) is not None:
        wall = datetime(today.year, int(day[2]), int(day[1]), int(day[3]), int(day[4]))
        if wall.replace(tzinfo=zone).timestamp() <= now:
            wall = wall.replace(year=today.year + 1)
        return wall.replace(tzinfo=zone).timestamp()
    if _ISO.fullmatch(text) is None:
        return None
    found = datetime.fromisoformat(text)
    return (found if found.tzinfo else found.replace(tzinfo=zone)).timestamp()


def wall_clock_of(text: str) -> datetime | None:
    """A wall-clock time with no zone (`2026-01-01T09:00`), as a rotation's start; None for
    anything else, one with an offset, or one outside the calendar the relay keeps."""
    if _ISO.fullmatch(text.strip()) is None:
        return None
    try:
        found = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if found.tzinfo is not None or not within_calendar(found.replace(tzinfo=UTC).timestamp()):
        return None
    return found


def span_of(text: str) -> float | None:
    """`2h`, `90m`, `3d`, `1w` in seconds, at most MAX_SPAN; None for anything else."""
    found = _SPAN.fullmatch(text.strip())
    if found is None:
        return None
    seconds = int(found[1]) * _SPAN_UNIT[found[2]]
    return seconds if 0 < seconds <= MAX_SPAN else None
