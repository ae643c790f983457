"""Covers (docs/oncall.md): someone on duty in a rotation for an interval, whoever the rotation
says, kept in the spool for the whole fleet (`CoverStore`), made from the command line (`relay-app
oncall cover`, oncall/cli.py) or the chat (`/cover`, oncall/command.py), and applied by the
roster (routes/rotation.py) to every `oncall:NAME` from the moment each starts. A swap is two
covers.

A cover is checked before it is kept (`checked_cover`): it must name a rotation of the routes
file, a person as a mention names one, and an interval that ends after it starts and after now
(one that began earlier starts now). What is wrong is said as a `Refused`, with the words of the
catalogue, so the chat and the command line say the same.

Every process reads the covers through `KeptCovers`: one read of the spool every few seconds at
most, so a message that names `oncall:NAME` costs no read of its own; a cover made in this
process is seen at once, one made elsewhere within KEPT_FOR seconds."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..core.errors import SpoolError
from ..core.typed import FIRST_MOMENT, LAST_MOMENT, is_person, within_calendar
from ..routes.rotation import Cover, Roster
from ..spool.store import Row, Store, Tx
from ..words import Said

log = logging.getLogger(__name__)

Clock = Callable[[], float]

# The longest a cover may last: a quarter. Longer is a change of the rotation: the routes file.
MAX_COVER = 92 * 86400.0
# Covers kept in force at once, at most (the current and the coming ones).
MAX_COVERS = 500
# How long a process keeps what it read of the covers before it reads them again.
KEPT_FOR = 5.0


@dataclass(frozen=True)
class Refused(Exception):
    """A cover that cannot be kept: why, in the catalogue's words."""

    said: Said


@dataclass(frozen=True)
class AskedCover:
    """A cover as it is asked for: times are Unix times; `until` None: the turn's end."""

    rotation: str
    person: str
    starts_at: float
    until: float | None
    by: str


def checked_cover(asked: AskedCover, roster: Roster, now: float) -> AskedCover:
    """The cover to keep: the rotation known, the person one, the interval to come (one begun
    already starts now; one without an end lasts to the turn's end then). Raises Refused."""
    rotation = roster.rotations.get(asked.rotation)
    if rotation is None:
        known = ", ".join(sorted(roster.rotations)) or "-"
        raise Refused(Said("cover_no_rotation", {"rotation": asked.rotation, "known": known}))
    if not is_person(asked.person):
        raise Refused(Said("cover_no_person", {"person": asked.person}))
    starts_at = max(asked.starts_at, now)
    until = asked.until
    if until is None:
        until = rotation.on_duty(starts_at, roster.zone).until.timestamp()
    if until <= now:
        raise Refused(Said("cover_past", {}))
    if until <= starts_at:
        raise Refused(Said("cover_backwards", {}))
    if until - starts_at > MAX_COVER:
        raise Refused(Said("cover_too_long", {"days": str(int(MAX_COVER // 86400))}))
    if not (within_calendar(starts_at) and within_calendar(until)):
        last = datetime.fromtimestamp(LAST_MOMENT, UTC).date().isoformat()
        raise Refused(Said("cover_too_far", {"last": last}))
    return AskedCover(asked.rotation, asked.person, starts_at, until, asked.by)


class CoverStore:
    def __init__(self, store: Store) -> None:
        self._store = store
        # The unreadable covers this process has named at ERROR: once each.
        self._named: set[int] = set()
        self._lock = threading.Lock()

    def add(self, cover: AskedCover, *, now: float) -> Cover:
        """Keep a cover checked with `checked_cover`; numbered by the spool."""
        until = cover.until
        assert until is not None  # checked_cover gave it its end

        def add(tx: Tx) -> Cover:
            row = tx.one(
                "INSERT INTO covers (rotation, person, starts_at, ends_at, made_by, made_at)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
                (
                    cover.rotation,
                    cover.person,
                    tx.at.to_db(cover.starts_at),
                    tx.at.to_db(until),
                    cover.by,
                    tx.at.db,
                ),
            )
            return _cover(row, tx) or _as_kept(row)

        return self._store.write(add, now=now)

    def remove(self, cover_id: int, *, now: float) -> Cover | None:
        """Remove a cover (it no longer holds), readable or not; None for no cover of that
        number."""

        def remove(tx: Tx) -> Cover | None:
            row = tx.one("DELETE FROM covers WHERE id = ? RETURNING *", (cover_id,))
            return (_cover(row, tx) or _as_kept(row)) if row is not None else None

        return self._store.write(remove, now=now)

    def in_force(self, *, now: float) -> list[Cover]:
        """The covers that have not ended: holding now, or to come; soonest first. One that
        cannot be read (kept by an older relay, or by hand) is left out, and named."""

        def read(tx: Tx) -> list[Cover | int]:
            rows = tx.all(
                "SELECT * FROM covers WHERE ends_at > ? ORDER BY starts_at, id LIMIT ?",
                (tx.at.db, MAX_COVERS),
            )
            return [_cover(row, tx) or int(row["id"]) for row in rows]

        found = self._store.read(read, now=now)
        self._name_unreadable([cover for cover in found if isinstance(cover, int)])
        return [cover for cover in found if isinstance(cover, Cover)]

    def tidy(self, *, now: float) -> int:
        """Forget the covers that ended more than a week ago; how many."""

        def tidy(tx: Tx) -> int:
            gone = tx.all(
                "DELETE FROM covers WHERE ends_at < ? RETURNING id", (tx.at.db - 7 * 86400,)
            )
            return len(gone)

        return self._store.write(tidy, now=now)

    def _name_unreadable(self, ids: list[int]) -> None:
        """Each cover that cannot be read, at ERROR once in this process, with its fix: it
        never stops /oncall, the command line or an alert, but nobody is called by it."""
        with self._lock:
            new = [cover_id for cover_id in ids if cover_id not in self._named]
            self._named.update(new)
        for cover_id in new:
            log.error(
                "cover %d in the spool cannot be read (its person or its times are out of "
                "range): it is left out, and nobody is on duty by it. Remove it with "
                "'relay-app oncall cover --remove %d'",
                cover_id,
                cover_id,
            )


def _cover(row: Row, tx: Tx) -> Cover | None:
    """The cover a row keeps; None when it cannot be one (a person or a time out of range)."""
    try:
        person = str(row["person"])
        starts_at = tx.at.to_local(float(row["starts_at"]))
        ends_at = tx.at.to_local(float(row["ends_at"]))
    except (TypeError, ValueError, OverflowError):
        return None
    if not is_person(person) or not (within_calendar(starts_at) and within_calendar(ends_at)):
        return None
    return Cover(
        int(row["id"]), str(row["rotation"]), person, starts_at, ends_at, str(row["made_by"])
    )


def _as_kept(row: Row) -> Cover:
    """A row as it is kept, for saying what was removed: its times only as far as they read."""

    def moment(raw: object) -> float:
        try:
            return min(max(float(str(raw)), FIRST_MOMENT), LAST_MOMENT)
        except ValueError:
            return FIRST_MOMENT

    return Cover(
        int(row["id"]),
        str(row["rotation"]),
        str(row["person"]),
        moment(row["starts_at"]),
        moment(row["ends_at"]),
        str(row["made_by"]),
    )


class KeptCovers:
    """The covers in force as this process last read them, read again once they are KEPT_FOR
    seconds old (monotonic), or at once after this process made or removed one. When the spool
    cannot be read, what was read last holds, and the next look asks again."""

    def __init__(self, store: CoverStore, *, clock: Clock = time.time) -> None:
        self._store = store
        self._clock = clock
        self._lock = threading.Lock()
        self._covers: tuple[Cover, ...] = ()
        self._read_at: float | None = None

    def __call__(self, at: float) -> Sequence[Cover]:
        """The covers not ended by `at` (the roster's source)."""
        with self._lock:
            stale = self._read_at is None or time.monotonic() - self._read_at >= KEPT_FOR
        if stale:
            self._read()
        with self._lock:
            return [cover for cover in self._covers if cover.ends_at > at]

    def changed(self) -> None:
        """A cover was made or removed in this process: the next look reads them again."""
        with self._lock:
            self._read_at = None

    def _read(self) -> None:
        try:
            covers = tuple(self._store.in_force(now=self._clock()))
        except SpoolError as exc:
            log.debug("the covers could not be read now; the last read holds: %s", exc)
            covers = None
        with self._lock:
            self._read_at = time.monotonic()
            if covers is not None:
                self._covers = covers
