"""The board's tables: `boards`, each board's message in its place (chat, and topic: 0 for the
chat's main thread), the text it last showed (a digest of it) and when; `board_issues`, the
issues alerted in each place, as their alerts named them. An issue leaves its board when its
latest card in the chat says it is resolved or ignored (cards/records.py), or, with no card
there to say (no buttons), when it has not alerted for FORGET_AFTER."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..cards import records
from ..cards.takers import Takes
from ..core.routing import Destination
from ..message.subjects import Alerted
from ..spool.store import Row, Store, Tx

T = TypeVar("T")
FORGET_AFTER = 86400.0
CLOSED = ("resolved", "ignored")


@dataclass(frozen=True)
class Listed:
    """An open issue as the board lists it."""

    issue_id: str
    label: str
    title: str
    link: str
    level: str
    first_at: float  # when it was first alerted here (this process's clock)
    taken_by: str | None = None


@dataclass(frozen=True)
class Board:
    """A board's message as kept: None before it is posted."""

    message_id: int | None
    shown: str  # a digest of the text it last showed
    edited_at: float | None  # this process's clock
    clear_since: float | None  # when its list last became empty
    pinned: bool = False  # the relay pinned this message (and may tell when it is unpinned)
    # Telegram refused its last write: none is queued before this (this process's clock).
    held_until: float | None = None


def _key(place: Destination) -> tuple[str, int]:
    return place.chat_key, place.thread or 0


class BoardStore:
    def __init__(self, store: Store, takes: Takes | None = None) -> None:
        """`takes`: who has each issue (lent by On it's capability), which the board names."""
        self._store = store
        self._takes = takes

    def _write(self, work: Callable[[Tx], T], now: float) -> T:
        result: T = self._store.write(work, now=now)
        return result

    def note(self, tx: Tx, place: Destination, alerted: Sequence[Alerted]) -> None:
        """Issues alerted in the place (in the delivery's unit of work): first alerted now, or
        kept as first alerted before, and their label, title, link and level as now said."""
        chat, thread = _key(place)
        for each in alerted:
            shown = (each.issue.label, each.issue.title or "", each.link, each.level)
            tx.execute(
                "INSERT INTO board_issues (chat, thread, issue_id, label, title, link, level,"
                " first_at, last_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (chat, thread, issue_id) DO UPDATE SET label = ?, title = ?,"
                " link = ?, level = ?, last_at = ?",
                (chat, thread, each.issue.id, *shown, tx.at.db, tx.at.db, *shown, tx.at.db),
            )

    def _taker(self, tx: Tx, state: Row | None) -> str | None:
        """Who has the issue on its latest card in the chat (`state`), if anyone."""
        if state is None or self._takes is None:
            return None
        take = self._takes.of_row(tx, str(state["key"]))
        return take.by if take is not None else None

    def open_issues(self, place: Destination, *, now: float) -> list[Listed]:
        """The place's open issues, those that closed or were forgotten taken off."""
        chat, thread = _key(place)

        def read(tx: Tx) -> tuple[list[Listed], list[tuple[str, float]]]:
            rows = tx.all(
                "SELECT * FROM board_issues WHERE chat = ? AND thread = ?", (chat, thread)
            )
            states = records.latest_in_chat(tx, chat, [str(row["issue_id"]) for row in rows])
            listed: list[Listed] = []
            gone: list[tuple[str, float]] = []  # and when each last alerted, as read
            for row in rows:
                state = states.get(str(row["issue_id"]))
                if _off(state, float(row["last_at"]), tx.at.db):
                    gone.append((str(row["issue_id"]), float(row["last_at"])))
                else:
                    taken = self._taker(tx, state)
                    listed.append(_listed(row, tx, taken))
            return listed, gone

        listed, gone = self._store.read(read, now=now)
        if gone:

            def forget(tx: Tx) -> None:
                # Not one that alerted again since it was read (a regression): it stays.
                tx.executemany(
                    "DELETE FROM board_issues WHERE chat = ? AND thread = ? AND issue_id = ?"
                    " AND last_at = ?",
                    [(chat, thread, issue_id, last_at) for issue_id, last_at in gone],
                )

            self._write(forget, now)
        return listed

    def board(self, place: Destination, *, now: float) -> Board:
        chat, thread = _key(place)

        def read(tx: Tx) -> Board:
            row = tx.one("SELECT * FROM boards WHERE chat = ? AND thread = ?", (chat, thread))
            if row is None:
                return Board(None, "", None, None)
            return Board(
                int(row["message_id"]) if row["message_id"] is not None else None,
                str(row["shown"]),
                _local(tx, row["edited_at"]),
                _local(tx, row["clear_since"]),
                bool(row["pinned"]),
                _local(tx, row["held_until"]),
            )

        result: Board = self._store.read(read, now=now)
        return result

    def shown(
        self, place: Destination, message_id: int, shown: str, *, clear: bool, now: float
    ) -> None:
        """The board's message shows this now (`clear`: no issue is open)."""
        chat, thread = _key(place)

        def write(tx: Tx) -> None:
            tx.execute(
                "INSERT INTO boards (chat, thread, message_id, shown, edited_at, clear_since)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (chat, thread) DO UPDATE SET"
                " pinned = CASE WHEN boards.message_id = ? THEN boards.pinned ELSE ? END,"
                " message_id = ?, shown = ?, edited_at = ?",
                (
                    chat,
                    thread,
                    message_id,
                    shown,
                    tx.at.db,
                    None,
                    message_id,
                    False,
                    message_id,
                    shown,
                    tx.at.db,
                ),
            )
            tx.execute(
                "UPDATE boards SET clear_since = CASE WHEN ? = 1 THEN COALESCE(clear_since, ?)"
                " END WHERE chat = ? AND thread = ?",
                (int(clear), tx.at.db, chat, thread),
            )

        self._write(write, now)

    def hold(self, place: Destination, seconds: float, *, now: float) -> None:
        """Telegram refused the board's write: no other is queued for `seconds`."""
        chat, thread = _key(place)

        def write(tx: Tx) -> None:
            tx.execute(
                "INSERT INTO boards (chat, thread, held_until) VALUES (?, ?, ?)"
                " ON CONFLICT (chat, thread) DO UPDATE SET held_until = ?",
                (chat, thread, tx.at.db + seconds, tx.at.db + seconds),
            )

        self._write(write, now)

    def pinned(self, place: Destination, message_id: int, *, now: float) -> None:
        """The relay pinned the board's message."""
        chat, thread = _key(place)

        def write(tx: Tx) -> None:
            tx.execute(
                "UPDATE boards SET pinned = ? WHERE chat = ? AND thread = ? AND message_id = ?",
                (True, chat, thread, message_id),
            )

        self._write(write, now)

    def lost(self, place: Destination, *, now: float) -> None:
        """The board's message is gone (deleted, or unpinned): the next write posts anew."""
        chat, thread = _key(place)

        def write(tx: Tx) -> None:
            tx.execute(
                "UPDATE boards SET message_id = NULL, shown = '', pinned = ?"
                " WHERE chat = ? AND thread = ?",
                (False, chat, thread),
            )

        self._write(write, now)


def _off(state: Row | None, last_at: float, now: float) -> bool:
    """Whether an issue leaves the board: its latest card says it closed, or it has none and
    has not alerted for FORGET_AFTER."""
    if state is not None:
        return state["status"] in CLOSED
    return last_at < now - FORGET_AFTER


def _local(tx: Tx, value: object) -> float | None:
    return tx.at.to_local(float(value)) if isinstance(value, int | float) else None


def _listed(row: Row, tx: Tx, taken_by: object) -> Listed:
    return Listed(
        issue_id=str(row["issue_id"]),
        label=str(row["label"]),
        title=str(row["title"]),
        link=str(row["link"]),
        level=str(row["level"]),
        first_at=tx.at.to_local(float(row["first_at"])),
        taken_by=str(taken_by) if taken_by else None,
    )
