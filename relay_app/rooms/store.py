"""The rooms' tables: `rooms`, each issue's forum topic in a chat (its thread, whether it is
open, closed or gone, its name's parts, the latest card in it), and `room_refusals`, the chats
where Telegram refused a topic (not a forum, no right to manage topics) and since when.

One topic per issue and chat whatever the race: a relay makes a topic only once its row says
`making` for it (an insert only one relay wins); a row left `making` by a relay that stopped
is taken over after MAKING_FOR seconds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from ..cards import records
from ..spool.store import Row, Store, Tx

T = TypeVar("T")
OPEN = "open"  # an issue's card that shows no change since its alert
RoomState = Literal["making", "open", "closed", "gone"]
# How long a closed room is kept: a new alert of its issue reopens it till then.
KEPT_CLOSED = 30 * 86400.0
# How long a relay may take to make a topic (one request, its deadline, the settle) before
# another may try: far longer than an attempt lasts.
MAKING_FOR = 120.0


@dataclass(frozen=True)
class Room:
    """An issue's topic in a chat, as kept."""

    chat: str
    issue_id: str
    thread: int | None
    state: RoomState
    label: str
    title: str
    level: str
    # Where its route sends (a topic of its own, or None: the chat's main thread), where the
    # line pointing to the room goes.
    home: int | None
    card: int | None  # the latest card posted in it: what a message there is about
    # Why it is closed ('resolved', 'ignored'), as its name says.
    why: str | None = None


class RoomStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def _write(self, work: Callable[[Tx], T], now: float) -> T:
        result: T = self._store.write(work, now=now)
        return result

    def _read(self, work: Callable[[Tx], T], now: float) -> T:
        result: T = self._store.read(work, now=now)
        return result

    def room(self, chat: str, issue_id: str, *, now: float) -> Room | None:
        def read(tx: Tx) -> Room | None:
            row = tx.one("SELECT * FROM rooms WHERE chat = ? AND issue_id = ?", (chat, issue_id))
            return _room(row) if row is not None else None

        return self._read(read, now)

    def in_thread(self, chat: str, thread: int, *, now: float) -> Room | None:
        """The room that is this topic of the chat, if it is one."""

        def read(tx: Tx) -> Room | None:
            row = tx.one("SELECT * FROM rooms WHERE chat = ? AND thread = ?", (chat, thread))
            return _room(row) if row is not None else None

        return self._read(read, now)

    def start_making(self, room: Room, maker: str, *, now: float) -> bool:
        """Whether `maker` (an alert) is the one to make the room's topic: no other has it, it
        had it already (its attempt is tried again), or the one that had it is gone (it has
        been `making` for MAKING_FOR seconds)."""

        def claim(tx: Tx) -> bool:
            parts = (room.label, room.title, room.level, room.home)
            made = tx.all(
                "INSERT INTO rooms (chat, issue_id, state, label, title, level, home, maker,"
                " changed_at) VALUES (?, ?, 'making', ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
                " RETURNING issue_id",
                (room.chat, room.issue_id, *parts, maker, tx.at.db),
            )
            if made:
                return True
            taken = tx.all(
                "UPDATE rooms SET label = ?, title = ?, level = ?, home = ?, maker = ?,"
                " changed_at = ? WHERE chat = ? AND issue_id = ? AND state = 'making'"
                " AND (maker = ? OR changed_at < ?) RETURNING issue_id",
                (*parts, maker, tx.at.db, room.chat, room.issue_id, maker, tx.at.db - MAKING_FOR),
            )
            return bool(taken)

        return self._write(claim, now)

    def made(self, chat: str, issue_id: str, thread: int, *, now: float) -> None:
        self._set(chat, issue_id, "open", now, thread=thread)

    def not_made(self, chat: str, issue_id: str, *, now: float) -> None:
        """The topic could not be made: the next alert tries again."""

        def forget(tx: Tx) -> None:
            tx.execute(
                "DELETE FROM rooms WHERE chat = ? AND issue_id = ? AND state = 'making'",
                (chat, issue_id),
            )

        self._write(forget, now)

    def opened(self, chat: str, issue_id: str, *, now: float) -> None:
        self._set(chat, issue_id, "open", now, why=None)

    def closed(self, chat: str, issue_id: str, why: str, *, now: float) -> None:
        self._set(chat, issue_id, "closed", now, why=why)

    def gone(self, chat: str, thread: int, *, now: float) -> Room | None:
        """The topic was deleted by hand: the issue's alerts go to its route's place."""

        def forget(tx: Tx) -> Room | None:
            row = tx.one(
                "UPDATE rooms SET state = 'gone', changed_at = ? WHERE chat = ? AND thread = ?"
                " AND state != 'gone' RETURNING *",
                (tx.at.db, chat, thread),
            )
            return _room(row) if row is not None else None

        return self._write(forget, now)

    def carded(self, tx: Tx, chat: str, thread: int, message_id: int) -> None:
        """A card was posted in the topic (in the delivery's unit of work)."""
        tx.execute(
            "UPDATE rooms SET card = ? WHERE chat = ? AND thread = ?", (message_id, chat, thread)
        )

    def kept(self, *, now: float) -> list[tuple[Room, str | None]]:
        """Every room whose topic is open or closed, with its issue's state as its latest card
        in the chat shows it (`open`: as alerted; None: no card of it is kept any more, which
        says nothing), in one read."""

        def read(tx: Tx) -> list[tuple[Room, str | None]]:
            rooms = [
                _room(row)
                for row in tx.all("SELECT * FROM rooms WHERE state IN ('open', 'closed')")
            ]
            found: list[tuple[Room, str | None]] = []
            for room in rooms:
                row = records.latest_in_chat(tx, room.chat, [room.issue_id]).get(room.issue_id)
                if row is None:
                    found.append((room, None))
                else:
                    found.append((room, str(row["status"]) if row["status"] else OPEN))
            return found

        return self._read(read, now)

    def forget_old(self, *, now: float) -> int:
        """Rooms closed or gone for KEPT_CLOSED forgotten (a new alert of their issue makes a
        new topic): how many."""

        def forget(tx: Tx) -> int:
            gone = tx.all(
                "DELETE FROM rooms WHERE state IN ('closed', 'gone') AND changed_at < ?"
                " RETURNING issue_id",
                (tx.at.db - KEPT_CLOSED,),
            )
            return len(gone)

        return self._write(forget, now)

    def refused(self, chat: str, reason: str, *, now: float) -> bool:
        """Telegram refused a topic in the chat: whether this is news (it was not refused
        there already, for this reason)."""

        def note(tx: Tx) -> bool:
            was = tx.one("SELECT reason FROM room_refusals WHERE chat = ?", (chat,))
            tx.execute("DELETE FROM room_refusals WHERE chat = ?", (chat,))
            tx.execute(
                "INSERT INTO room_refusals (chat, reason, at) VALUES (?, ?, ?)",
                (chat, reason, tx.at.db),
            )
            return was is None or str(was["reason"]) != reason

        return self._write(note, now)

    def refusal(self, chat: str, *, since: float, now: float) -> str | None:
        """Why topics were refused in the chat, when that was said after `since` (a time of
        the store's clock, as `now`)."""

        def read(tx: Tx) -> str | None:
            row = tx.one(
                "SELECT reason FROM room_refusals WHERE chat = ? AND at >= ?",
                (chat, tx.at.to_db(since)),
            )
            return str(row["reason"]) if row is not None else None

        return self._read(read, now)

    def allowed(self, chat: str, *, now: float) -> None:
        """A topic was made in the chat: whatever was refused there is no longer."""

        def forget(tx: Tx) -> None:
            tx.execute("DELETE FROM room_refusals WHERE chat = ?", (chat,))

        self._write(forget, now)

    def _set(
        self,
        chat: str,
        issue_id: str,
        state: RoomState,
        now: float,
        *,
        thread: int | None = None,
        why: str | None = None,
    ) -> None:
        def change(tx: Tx) -> None:
            tx.execute(
                "UPDATE rooms SET state = ?, thread = COALESCE(?, thread), why = ?,"
                " changed_at = ? WHERE chat = ? AND issue_id = ?",
                (state, thread, why, tx.at.db, chat, issue_id),
            )

        self._write(change, now)


def _room(row: Row) -> Room:
    return Room(
        chat=str(row["chat"]),
        issue_id=str(row["issue_id"]),
        thread=int(row["thread"]) if row["thread"] is not None else None,
        state=row["state"],
        label=str(row["label"]),
        title=str(row["title"]),
        level=str(row["level"]),
        home=int(row["home"]) if row["home"] is not None else None,
        card=int(row["card"]) if row["card"] is not None else None,
        why=row["why"],
    )
