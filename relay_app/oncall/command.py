"""`/oncall` and `/cover` in the chat. `/oncall`: who is on duty in each rotation (covers
applied, and whose turn a cover takes), until when, who is next, and the covers to come, on the
rotations' wall clock. `/cover ROTATION [@person] [from TIME] [until TIME | for 2h]`: a cover
(oncall/covers.py) by someone allowed to act, the asker unless they name another; without an
end it lasts to the end of the turn it starts in. Registered with the chat's commands when the
relay is assembled."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from ..core.errors import SpoolError
from ..core.typed import moment_of, span_of
from ..message.spans import place_time
from ..routes.rotation import Roster
from ..telegram.bot_commands import Asked, BotCommand
from ..words import Said, Words
from .covers import AskedCover, CoverStore, Refused, checked_cover
from .people import Met, PeopleStore

# The covers to come /oncall lists, at most.
COVERS_LISTED = 10
# The words that begin a cover's times, in the relay's languages.
_FROM, _FOR = ("from", "с"), ("for", "на")
_KEYWORD = re.compile(r"\s+(from|until|till|for|с|до|на)\s+", re.IGNORECASE)


def oncall_command(roster: Roster, *, clock: Callable[[], float] = time.time) -> BotCommand:
    """`/oncall`: who is on duty now, until when, who is next, and the covers to come."""

    def answer(asked: Asked, words: Words) -> Said:
        if not roster:
            return Said("oncall_none")
        now = clock()
        lines = []
        for rotation in roster.rotations.values():
            duty = roster.on_duty(rotation, now)
            covering = words.oncall_covering.format(person=duty.covering) if duty.covering else ""
            lines.append(
                words.oncall_line.format(
                    name=rotation.name,
                    person=duty.person + covering,
                    until=_when(duty.until),
                    next=duty.next_person,
                )
            )
        coming = [cover for cover in roster.covers(now) if cover.starts_at > now]
        if coming:
            listed = [
                words.oncall_cover_line.format(
                    name=cover.rotation,
                    person=cover.person,
                    start=_when(_in_zone(cover.starts_at, roster, cover.rotation)),
                    until=_when(_in_zone(cover.ends_at, roster, cover.rotation)),
                )
                for cover in coming[:COVERS_LISTED]
            ]
            lines.append(words.oncall_covers.format(lines="\n".join(listed)))
        return Said("oncall_answer", {"lines": "\n".join(lines)})

    return BotCommand("oncall", lambda words: words.command_oncall, answer)


@dataclass(frozen=True)
class Covering:
    """What `/cover` keeps covers with: the roster it checks them against, the store, and what
    learns of a new one at once (this process's KeptCovers)."""

    roster: Roster
    store: CoverStore
    changed: Callable[[], None] = lambda: None


def cover_command(covering: Covering, *, clock: Callable[[], float] = time.time) -> BotCommand:
    """`/cover ROTATION [@person] [from TIME] [until TIME | for SPAN]`."""
    roster = covering.roster

    def answer(asked: Asked, words: Words) -> Said:
        if not asked.may_act:
            return Said("cover_not_allowed")
        now = clock()
        try:
            wanted = _read(asked, roster, now)
            cover = checked_cover(wanted, roster, now)
            instead = roster.person(cover.rotation, cover.starts_at)
            kept = covering.store.add(cover, now=now)
        except Refused as refused:
            return refused.said
        except SpoolError:
            return Said("cover_not_kept")
        covering.changed()
        return Said(
            "cover_made",
            {
                "person": kept.person,
                "rotation": kept.rotation,
                "start": _when(_in_zone(kept.starts_at, roster, kept.rotation)),
                "until": _when(_in_zone(kept.ends_at, roster, kept.rotation)),
                "instead": instead or "-",
            },
        )

    return BotCommand("cover", lambda words: words.command_cover, answer)


def _read(asked: Asked, roster: Roster, now: float) -> AskedCover:
    """The cover the command's words ask for. Raises Refused."""
    head, *said = _KEYWORD.split(" " + asked.args.strip() + " ")
    names = head.split()
    if not names or len(names) > 2 or len(said) % 2:
        raise Refused(Said("cover_usage"))
    rotation = roster.rotations.get(names[0])
    zone = rotation.zone(roster.zone) if rotation is not None else roster.zone
    person = names[1] if len(names) == 2 else asked.person
    if person is None:
        raise Refused(Said("cover_usage"))
    starts_at, until = _times(said, zone, now)
    return AskedCover(names[0], person, starts_at, until, asked.person or asked.name)


def _times(said: list[str], zone: ZoneInfo, now: float) -> tuple[float, float | None]:
    """When a cover starts (now, unless `from` says) and ends (None: at the turn's end), from
    its words in pairs: `from 10.12 09:00`, `until 18:00`, `for 2h`. Raises Refused."""
    starts_at, until = now, None
    for keyword, value in zip(said[::2], said[1::2], strict=True):
        word, value = keyword.casefold(), value.strip()
        if word in _FOR:
            span = span_of(value)
            if span is None:
                raise Refused(Said("cover_unreadable_time", {"time": value}))
            until = starts_at + span
            continue
        moment = moment_of(value, zone, now)
        if moment is None:
            raise Refused(Said("cover_unreadable_time", {"time": value}))
        if word in _FROM:
            starts_at = moment
        else:
            until = moment
    return starts_at, until


def _in_zone(at: float, roster: Roster, rotation: str) -> datetime:
    found = roster.rotations.get(rotation)
    zone: ZoneInfo = found.zone(roster.zone) if found is not None else roster.zone
    return datetime.fromtimestamp(at, zone)


def _when(moment: datetime) -> str:
    """'10.12 18:00 MSK': a day and time as the chat reads them, with the zone's name."""
    return f"{moment:%d.%m} {place_time(moment.timestamp(), moment.tzinfo or ZoneInfo('UTC'))}"


def start_command(people: PeopleStore, *, clock: Callable[[], float] = time.time) -> BotCommand:
    """`/start` in a person's private chat with the bot: they may be called there from now on
    (`direct = true` on a step or a route)."""

    def answer(asked: Asked, words: Words) -> Said:
        if asked.user_id is None:
            return Said("start_unknown")
        username = asked.person[1:] if asked.person and asked.person.startswith("@") else None
        try:
            people.started(Met(asked.user_id, username, asked.name), now=clock())
        except SpoolError:
            return Said("start_not_kept")
        return Said("start_answer")

    return BotCommand("start", lambda words: words.command_start, answer, private=True)
