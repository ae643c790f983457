"""The people the relay has met in the chats it serves, kept in the spool (docs/oncall.md): by
Telegram's user id, with their username and the name Telegram gives them (a `tg:<id>` mention
shows that name, as a link Telegram notifies), and, once they sent `/start` in a private chat
with the bot, that they may be called there (`direct = true` on a step or a route). A private
call queued is kept (`direct_calls`), so that a press on the buttons of the private message acts
on the alert it is about, and on nothing else.

Met when they send `/start`, type a command, press a button or reply in a chat the relay serves;
nothing they send decides anything but their own name. One who blocks the bot (Telegram says so
in a `my_chat_member` update) is called privately no more (`PrivateChats`). At most MAX_PEOPLE
are kept: the longest unseen go first, whether they sent /start or not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import SpoolError
from ..core.json_values import json_int, json_object
from ..core.typed import tg_user
from ..spool.store import Store, Tx

log = logging.getLogger(__name__)

MAX_PEOPLE = 10_000
# A private call is honoured (its buttons act) this long after it was made: a week, as long as
# the alert's own record is kept.
CALL_KEPT = 7 * 86400.0


@dataclass(frozen=True)
class Met:
    """Someone as Telegram names them in an update: id, username (without '@'), name."""

    user_id: int
    username: str | None
    name: str


class PeopleStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def started(self, person: Met, *, now: float) -> None:
        """They sent /start in their private chat with the bot: they may be called there."""
        self._store.write(lambda tx: _met(tx, person, started=True), now=now)

    def stopped(self, user_id: int, *, now: float) -> None:
        """They blocked the bot: no private calls until they send /start again."""
        self._store.write(
            lambda tx: tx.execute(
                "UPDATE people SET started_at = NULL WHERE user_id = ?", (user_id,)
            ),
            now=now,
        )

    def seen(self, person: Met, *, now: float) -> None:
        """They acted or asked in a chat the relay serves: their name and username kept."""
        self._store.write(lambda tx: _met(tx, person, started=False), now=now)

    def names(self, mentions: Sequence[str], *, now: float) -> dict[str, str]:
        """The names of the `tg:<id>` people among `mentions`, where the relay met them."""
        ids = {user: m for m in mentions if (user := tg_user(m)) is not None}
        if not ids:
            return {}

        def read(tx: Tx) -> dict[str, str]:
            # One look-up a person: a message calls six at most.
            found = {
                mention: tx.one("SELECT name FROM people WHERE user_id = ?", (user_id,))
                for user_id, mention in ids.items()
            }
            return {m: str(row["name"]) for m, row in found.items() if row and row["name"]}

        return self._store.read(read, now=now)

    def called_directly(self, user_id: int, chat: str, message_id: int, *, now: float) -> bool:
        """Whether the relay called this person privately for that message (lately)."""
        found = self._store.read(
            lambda tx: tx.one(
                "SELECT user_id FROM direct_calls WHERE user_id = ? AND chat = ?"
                " AND message_id = ? AND called_at > ?",
                (user_id, chat, message_id, tx.at.db - CALL_KEPT),
            ),
            now=now,
        )
        return found is not None

    def tidy(self, *, now: float) -> int:
        """Forget the private calls whose buttons act no more; how many."""
        gone = self._store.write(
            lambda tx: tx.all(
                "DELETE FROM direct_calls WHERE called_at < ? RETURNING user_id",
                (tx.at.db - CALL_KEPT,),
            ),
            now=now,
        )
        return len(gone)

    def reachable(self, *, now: float) -> list[Met]:
        """Everyone who sent /start, for the operator (`relay-app check`, docs)."""
        rows = self._store.read(
            lambda tx: tx.all(
                "SELECT user_id, username, name FROM people WHERE started_at IS NOT NULL"
                " ORDER BY user_id"
            ),
            now=now,
        )
        return [Met(int(r["user_id"]), r["username"], str(r["name"])) for r in rows]


class KnownPeople:
    """The people kept, as the core asks for them (telegram/people.py's `People`), on the
    relay's clock."""

    def __init__(self, store: PeopleStore, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    def met(self, user_id: int, username: str | None, name: str) -> None:
        self._store.seen(Met(user_id, username, name), now=self._clock())

    def names(self, mentions: Sequence[str]) -> Mapping[str, str]:
        return self._store.names(mentions, now=self._clock())

    def pressed_privately(self, user_id: int, chat: str, message_id: int) -> bool:
        return self._store.called_directly(user_id, chat, message_id, now=self._clock())


class PrivateChats:
    """Telegram's word that a person blocked the bot in their private chat with it (a
    `my_chat_member` update, status `kicked`): they are called there no more, until they send
    /start again. It changes only that person's own record, once whichever way it comes."""

    def __init__(self, people: PeopleStore, *, clock: Callable[[], float] = time.time) -> None:
        self._people = people
        self._clock = clock

    def handle_update(self, update: Mapping[str, Any]) -> None:
        change = json_object(update.get("my_chat_member"))
        chat = json_object(change.get("chat"))
        by = json_int(json_object(change.get("from")).get("id"))
        status = json_object(change.get("new_chat_member")).get("status")
        if chat.get("type") != "private" or by is None or json_int(chat.get("id")) != by:
            return
        if status not in ("kicked", "left"):
            return  # a person who starts the bot sends /start, which is kept
        try:
            self._people.stopped(by, now=self._clock())
        except SpoolError as exc:
            log.warning("that user %d blocked the bot could not be kept now: %s", by, exc)
            return
        log.info("user %d blocked the bot: no more private calls to them", by)


def _met(tx: Tx, person: Met, *, started: bool) -> None:
    username = person.username.casefold() if person.username else None
    name = person.name[:64]
    tx.execute(
        "INSERT INTO people (user_id, username, name, started_at, seen_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id) DO UPDATE SET username = ?, name = ?,"
        " seen_at = ?",
        (person.user_id, username, name, None, tx.at.db, username, name, tx.at.db),
    )
    if started:
        tx.execute("UPDATE people SET started_at = ? WHERE user_id = ?", (tx.at.db, person.user_id))
    # The username is one person's at a time: whoever had it before has another now.
    if username is not None:
        tx.execute(
            "UPDATE people SET username = NULL WHERE username = ? AND user_id <> ?",
            (username, person.user_id),
        )
    _bounded(tx)


def _bounded(tx: Tx) -> None:
    """At most MAX_PEOPLE: the longest unseen go first, whether they sent /start or not (those
    who had were never let go, and 10,500 of them held the cap past its bound). One let go
    who sends /start again, or acts, is kept again."""
    over = tx.one("SELECT COUNT(*) AS n FROM people")
    if over is None or int(over["n"]) <= MAX_PEOPLE:
        return
    tx.execute(
        "DELETE FROM people WHERE user_id IN (SELECT user_id FROM people"
        " ORDER BY seen_at, user_id LIMIT ?)",
        (int(over["n"]) - MAX_PEOPLE,),
    )


def reachable_in(tx: Tx, people: Sequence[str]) -> Mapping[str, int]:
    """Of these mentions (`@username`, `tg:<id>`), those who sent /start: their private chat."""
    found: dict[str, int] = {}
    for person in dict.fromkeys(people):  # a step calls six at most: one look-up each
        if person.startswith("@"):
            row = tx.one(
                "SELECT user_id FROM people WHERE username = ? AND started_at IS NOT NULL",
                (person[1:].casefold(),),
            )
        elif (user := tg_user(person)) is not None:
            row = tx.one(
                "SELECT user_id FROM people WHERE user_id = ? AND started_at IS NOT NULL", (user,)
            )
        else:
            row = None
        if row is not None:
            found[person] = int(row["user_id"])
    return found


def called_in(tx: Tx, user_id: int, chat: str, message_id: int) -> None:
    """A private call queued for that message: its buttons may act on it."""
    tx.execute(
        "INSERT INTO direct_calls (user_id, chat, message_id, called_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (user_id, chat, message_id) DO UPDATE SET called_at = ?",
        (user_id, chat, message_id, tx.at.db, tx.at.db),
    )
