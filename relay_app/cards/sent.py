"""The sent messages the relay may change later, kept in the spool: those with issue buttons
(a press edits them), and each uptime monitor's last outage message (its recovery replies to it
and edits it). A button's callback data names only a key here; the issue it acts on, and the
chat and message it belongs to, are read from this record, never from the client.

Kept for RELAY_RETRY_MAX_AGE or a week, whichever is longer (`prune`); a press on an older
message is answered with a notice, and changes nothing.

Also kept here, as long: which of Telegram's updates were handled (`first_time`), so that an
update Telegram delivers again, or anyone replays, acts once, whichever process or relay it
reaches. Telegram keeps an update for at most 24 hours.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..core.services import Key
from ..core.trackers import ISSUE_STATUSES, IssueStatus
from ..spool.store import Row, Store, Tx, float_or_null, int_or_null, text_or_null
from . import ignore_state, records, rows
from .card import IssueButton, SentMessage
from .marks import Marks, Shown

# How a button that was never pressed stands: GlitchTip's state for a new issue.
_UNRESOLVED = "unresolved"
# The shortest the records are kept; RELAY_RETRY_MAX_AGE when longer.
KEPT_AT_LEAST = 7 * 86400.0

# The card a forum topic of the chat is about, where a topic is one issue's own (a capability
# provides it: rooms/): a message written there is about that card's issue.
ThreadCard = Callable[[str, int], int | None]
THREAD_CARD: Key[ThreadCard] = Key("thread card")


@dataclass(frozen=True)
class StatusClaim:
    """A press's change of an issue's status, recorded before GlitchTip is asked, and what the
    button showed before it (to put back if GlitchTip refuses). `at` is the store's time."""

    key: str
    status: IssueStatus
    by: str
    at: float
    before: tuple[str | None, str | None, float | None, str | None]


@dataclass(frozen=True)
class Synced:
    """A button made to show the status GlitchTip has for its issue, changed outside the chat."""

    chat: str
    message_id: int
    label: str
    status: IssueStatus


@dataclass(frozen=True)
class Outage:
    """A monitor's last "down" message in one destination (lane)."""

    lane: str
    link: str
    chat: str
    message_id: int
    name: str
    down_at: float


class SentStore:
    """The records in the spool (store.py): times stored on the store's clock, handed out on
    the caller's."""

    def __init__(self, store: Store, marks: Marks | None = None) -> None:
        """`marks`: what the capabilities that are on mark on an issue's cards (a mute), read
        with each card."""
        self._store = store
        self._marks = marks if marks is not None else Marks()

    def keep(self, message: SentMessage, outages: Sequence[Outage]) -> None:
        """Record a message just sent, with its buttons, and the outages it announced."""
        self._store.write(lambda tx: self.keep_in(tx, message, outages))

    def keep_in(self, tx: Tx, message: SentMessage, outages: Sequence[Outage]) -> bool:
        """`keep`, in a unit of work under way (a delivery's). Whether an issue it shows was
        someone's already in the chat (On it on an earlier message, the issue open since), or
        stood so with a capability otherwise: its buttons say so too, and its card is to be
        edited to show it."""
        changed = keep_in(tx, message, outages)
        rows = [Shown(b.key, b.issue_id) for b in message.buttons]
        return self._marks.carried(tx, message.chat, rows) or changed

    def pressed(self, key: str) -> tuple[SentMessage, IssueButton] | None:
        """The message a button belongs to, and the button; None when not (or no longer) kept."""

        def read(tx: Tx) -> tuple[SentMessage, IssueButton] | None:
            row = tx.one("SELECT chat, message_id FROM issue_buttons WHERE key = ?", (key,))
            message = _message(tx, row["chat"], row["message_id"], self._marks) if row else None
            if message is None:
                return None
            return message, next(b for b in message.buttons if b.key == key)

        return self._store.read(read)

    def keep_copy(self, message: SentMessage, like: str) -> None:
        """Record a message just sent that shows one issue's row as another card shows it now
        (a chart under the card): its buttons stand as the button `like` does (resolved or
        ignored, by whom, muted, assigned), and its taker is the issue's in the chat."""

        def keep(tx: Tx) -> None:
            self.keep_in(tx, message, ())
            tx.execute(
                "UPDATE sent_messages SET copies = ? WHERE chat = ? AND message_id = ?",
                (like, message.chat, message.message_id),
            )
            copied = tx.all(
                "UPDATE issue_buttons SET (status, acted_by, acted_at) = (SELECT status,"
                " acted_by, acted_at FROM issue_buttons WHERE key = ?)"
                " WHERE chat = ? AND message_id = ?"
                " AND EXISTS (SELECT 1 FROM issue_buttons WHERE key = ?) RETURNING key",
                (like, message.chat, message.message_id, like),
            )
            keys = [str(row["key"]) for row in copied]
            ignore_state.settle(tx, keys, ignore_state.snooze_of(tx, like))

        self._store.write(keep)

    def shown_in(self, chat: str, named: str) -> tuple[SentMessage, IssueButton] | None:
        """The latest card in the chat with a row for the issue `named` (its short id, any
        case; its number; `sentry:` and its number), and that row; None when the chat was
        never shown it (or no longer keeps its card)."""

        def read(tx: Tx) -> tuple[SentMessage, IssueButton] | None:
            row = tx.one(
                "SELECT key, message_id FROM issue_buttons WHERE chat = ? AND (lower(label) ="
                " lower(?) OR issue_id = ?) ORDER BY message_id DESC LIMIT 1",
                (chat, named, named),
            )
            found = _message(tx, chat, row["message_id"], self._marks) if row is not None else None
            if row is None or found is None:
                return None
            return found, next(b for b in found.buttons if b.key == row["key"])

        return self._store.read(read)

    def message(self, chat: str, message_id: int) -> SentMessage | None:
        """A kept message (a reply names it); None when not (or no longer) kept."""
        return self._store.read(lambda tx: _message(tx, chat, message_id, self._marks))

    def claim(
        self,
        key: str,
        shown: IssueStatus | None,
        status: IssueStatus,
        *,
        by: str,
        at: float,
        snooze: Mapping[str, float] | None = None,
    ) -> StatusClaim | None:
        """Record a press's change as made, while the button still shows `shown` (the state
        the press was made on): of presses at the same moment, exactly one claims it. None when
        the button is not kept or shows another state now. `snooze`: the condition an ignore
        lasts until (the card shows it); Ignore's choices close."""

        def claim(tx: Tx) -> StatusClaim | None:
            row = tx.one(
                "SELECT status, acted_by, acted_at FROM issue_buttons WHERE key = ? FOR UPDATE",
                (key,),
            )
            if row is None or (row["status"] or _UNRESOLVED) != (shown or _UNRESOLVED):
                return None
            before_snooze = ignore_state.snooze_of(tx, key)
            tx.execute(
                "UPDATE issue_buttons SET status = ?, acted_by = ?, acted_at = ? WHERE key = ?",
                (status, by, tx.at.db, key),
            )
            ignore_state.settle(tx, [key], json.dumps(snooze) if snooze else None)
            before = (row["status"], row["acted_by"], row["acted_at"], before_snooze)
            return StatusClaim(key, status, by, tx.at.db, before)

        return self._store.write(claim, now=at)

    def mirror(self, key: str) -> list[int]:
        """The button's issue now stands on every other message of its chat that shows it as on
        this one (resolved, ignored or reopened, by whom, when, until when): the ids of the
        messages changed, whose cards are to be edited."""

        def mirror(tx: Tx) -> list[int]:
            row = tx.one(
                "SELECT chat, issue_id, origin, status, acted_by, acted_at"
                " FROM issue_buttons WHERE key = ?",
                (key,),
            )
            if row is None:
                return []
            changed = tx.all(
                "UPDATE issue_buttons SET status = ?, acted_by = ?, acted_at = ?"
                " WHERE chat = ? AND issue_id = ? AND origin = ? AND key != ?"
                " RETURNING key, message_id",
                (
                    row["status"],
                    row["acted_by"],
                    row["acted_at"],
                    row["chat"],
                    row["issue_id"],
                    row["origin"],
                    key,
                ),
            )
            keys = [str(found["key"]) for found in changed]
            ignore_state.settle(tx, keys, ignore_state.snooze_of(tx, key))
            return sorted({int(found["message_id"]) for found in changed})

        return self._store.write(mirror)

    def choose(self, key: str, *, choosing: bool, at: float) -> bool:
        """Show Ignore's choices in place of the button's row (or close them); False when the
        issue is not open, or they already stand so (another press came first)."""

        return self._store.write(lambda tx: ignore_state.choose(tx, key, choosing=choosing), now=at)

    def in_step(
        self,
        origin: str,
        states: Mapping[str, IssueStatus],
        *,
        asked_at: float,
        settle: float,
        now: float,
        newer_wins: bool = False,
    ) -> list[Synced]:
        """Make the buttons of these issues (GlitchTip's at `origin`) show the status GlitchTip
        gave for each when asked at `asked_at` (the caller's clock, as `now`); by nobody in the
        chat (`acted_by` NULL), now.
        A button a press changed after `asked_at - settle` is left: GlitchTip's answer may
        predate that press's change (a press claims first, then asks GlitchTip within
        `settle`); a change that came from GlitchTip itself needs no such wait. Read first: on
        most rounds nothing changed, and nothing is written. `newer_wins`: a button changed after
        `asked_at - settle` by anyone (a press, or the source's own later state) is left."""
        # What says a button was changed since, so that it is left: a press, or any change.
        changer = "acted_at" if newer_wins else "acted_by"

        def stale(tx: Tx) -> list[Row]:
            cutoff = tx.at.to_db(asked_at - settle)
            rows = tx.all(
                "SELECT key, issue_id, status, acted_by, acted_at FROM issue_buttons"
                " WHERE origin = ?",
                (origin,),
            )
            return [row for row in rows if _behind(row, states, cutoff, by=row[changer])]

        found = self._store.read(stale, now=now)
        if not found:
            return []

        def change(tx: Tx) -> list[Synced]:
            cutoff = tx.at.to_db(asked_at - settle)
            # A webhook's state is as of its stamp, which the next one's is compared with.
            changed_at = tx.at.to_db(asked_at) if newer_wins else tx.at.db
            synced = []
            for row in found:
                status = states[str(row["issue_id"])]
                # Only while it stands as read: a press in between wins.
                done = tx.one(
                    _IN_STEP[newer_wins],
                    (status, changed_at, row["key"], row["status"] or _UNRESOLVED, cutoff),
                )
                if done is not None:
                    ignore_state.settle(tx, [str(row["key"])], None)
                    synced.append(
                        Synced(
                            str(done["chat"]),
                            int(str(done["message_id"])),
                            str(done["label"]),
                            status,
                        )
                    )
            return synced

        return self._store.write(change, now=now)

    def cards_of(self, origin: str, issue_id: str) -> list[tuple[str, int]]:
        """The kept messages, in every chat, that show the issue at `origin`: their chats and
        ids (a mark of it came or went everywhere: Sentry's assignment)."""
        rows = self._store.read(
            lambda tx: tx.all(
                "SELECT DISTINCT chat, message_id FROM issue_buttons"
                " WHERE origin = ? AND issue_id = ? ORDER BY chat, message_id",
                (origin, issue_id),
            )
        )
        return [(str(row["chat"]), int(str(row["message_id"]))) for row in rows]

    def unclaim(self, claim: StatusClaim) -> None:
        """GlitchTip refused the claimed change: the button shows what it did before, unless a
        later change has replaced the claim."""

        def unclaim(tx: Tx) -> None:
            status, acted_by, acted_at, snooze = claim.before
            undone = tx.one(
                "UPDATE issue_buttons SET status = ?, acted_by = ?, acted_at = ?"
                " WHERE key = ? AND status = ? AND acted_by = ? AND acted_at = ? RETURNING key",
                (status, acted_by, acted_at, claim.key, claim.status, claim.by, claim.at),
            )
            if undone is not None:
                ignore_state.settle(tx, [claim.key], None if snooze is None else str(snooze))

        self._store.write(unclaim)

    def messages_showing(self, chat: str, issue_id: str) -> tuple[int, ...]:
        """The kept messages of the chat that show the issue: their ids (a mark of it came or
        went: silences/marks.py)."""
        return self._store.read(lambda tx: records.messages_showing(tx, chat, issue_id))

    def outage(self, lane: str, link: str) -> Outage | None:
        """The outage a monitor's recovery in this lane ends, if one is kept."""

        def read(tx: Tx) -> Outage | None:
            row = tx.one("SELECT * FROM outages WHERE lane = ? AND link = ?", (lane, link))
            if row is None:
                return None
            outage = outage_from_row(row)
            return replace(outage, down_at=tx.at.to_local(outage.down_at))

        return self._store.read(read)

    def recovered(self, outage: Outage, note: str) -> SentMessage | None:
        """The outage is over: forgotten, and `note` added to its message; that message as it
        now stands (None when it is not kept)."""
        return self._store.write(lambda tx: recovered_in(tx, outage, note))

    def shows(self, chat: str, issue_id: str) -> bool:
        """Whether a message the relay sent to `chat`, and keeps, shows the issue."""
        row = self._store.read(
            lambda tx: tx.one(
                "SELECT 1 AS shown FROM issue_buttons WHERE chat = ? AND issue_id = ? LIMIT 1",
                (chat, issue_id),
            )
        )
        return row is not None

    def first_time(self, keys: Sequence[str], *, at: float) -> bool:
        """Record these updates (and presses) as handled: whether none of them was before."""

        def record(tx: Tx) -> bool:
            added = sum(
                tx.execute(
                    "INSERT INTO handled_updates (key, at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (key, tx.at.db),
                ).rowcount
                for key in keys
            )
            return added == len(keys)

        return self._store.write(record, now=at)

    def first_in(self, key: str, *, window: float, at: float) -> bool:
        """Record `key` (a link asked about in a chat) as handled now, unless it was within
        `window` seconds: whether this is the first time in that window, whichever process or
        relay asks."""

        def record(tx: Tx) -> bool:
            fresh = tx.one(
                "INSERT INTO handled_updates (key, at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
                " SET at = excluded.at WHERE handled_updates.at <= ? RETURNING key",
                (key, tx.at.db, tx.at.db - window),
            )
            return fresh is not None

        return self._store.write(record, now=at)

    def prune(self, *, before: float) -> int:
        """Forget messages sent, outages begun and updates handled before `before`; how many
        messages."""

        def prune(tx: Tx) -> int:
            cutoff = tx.at.to_db(before)
            tx.execute("DELETE FROM handled_updates WHERE at < ?", (cutoff,))
            tx.execute("DELETE FROM outages WHERE down_at < ?", (cutoff,))
            self._marks.forget(tx, rows.of_messages_before(tx, cutoff), cutoff)
            rows.forget_state_of_messages(tx, cutoff)
            tx.execute(
                "DELETE FROM issue_buttons WHERE (chat, message_id) IN"
                " (SELECT chat, message_id FROM sent_messages WHERE sent_at < ?)",
                (cutoff,),
            )
            return int(
                tx.execute("DELETE FROM sent_messages WHERE sent_at < ?", (cutoff,)).rowcount
            )

        return self._store.write(prune)


def keep_in(tx: Tx, message: SentMessage, outages: Sequence[Outage]) -> bool:
    """The message's record, its rows and the outages it announced, in a unit of work under
    way (`SentStore.keep_in` tells the capabilities too). Whether a state its source said
    stands on its buttons already: its card is to be edited to show it."""
    tx.execute(
        "INSERT INTO sent_messages (chat, message_id, html, notes, sent_at, replies_comment_only,"
        " take_for, thread, captioned) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (chat, message_id) DO UPDATE SET html = excluded.html,"
        " notes = excluded.notes, sent_at = excluded.sent_at,"
        " replies_comment_only = excluded.replies_comment_only,"
        " take_for = excluded.take_for, thread = excluded.thread, captioned = excluded.captioned",
        (
            message.chat,
            message.message_id,
            message.html,
            "\n".join(message.notes),
            tx.at.to_db(message.sent_at),
            not message.replies_take,
            message.take_for,
            message.thread,
            message.captioned,
        ),
    )
    tx.executemany(
        "INSERT INTO issue_buttons (key, chat, message_id, position, issue_id, origin,"
        " label, title, org, level, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (key) DO NOTHING",
        [
            (
                b.key,
                message.chat,
                message.message_id,
                n,
                b.issue_id,
                b.origin,
                b.label,
                b.title,
                b.org,
                b.level,
                b.status,
            )
            for n, b in enumerate(message.buttons)
        ],
    )
    # A state its source said when it was queued (a link's card of a resolved issue): the
    # buttons sent offered what an open issue's do, and its edit shows what it is.
    inherited = any(b.status is not None for b in message.buttons)
    tx.executemany(
        # An outage going on keeps the message that began it (a warning's, when its critical
        # follows): the thread's first, which its recovery answers.
        "INSERT INTO outages (lane, link, chat, message_id, name, down_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (lane, link) DO NOTHING",
        [(o.lane, o.link, o.chat, o.message_id, o.name, tx.at.to_db(o.down_at)) for o in outages],
    )
    return inherited


def recovered_in(tx: Tx, outage: Outage, note: str) -> SentMessage | None:
    """`SentStore.recovered`, in a unit of work under way (a delivery's)."""
    tx.execute(
        "DELETE FROM outages WHERE lane = ? AND link = ? AND message_id = ?",
        (outage.lane, outage.link, outage.message_id),
    )
    return _noted(tx, outage.chat, outage.message_id, note)


# A button made to show its source's status while it stands as read: unless a press changed it
# since (False), or anyone did (True: the status is a webhook's, as of its stamp).
_SYNCED = (
    "UPDATE issue_buttons SET status = ?, acted_by = NULL, acted_at = ?"
    " WHERE key = ? AND COALESCE(status, 'unresolved') = ?"
)
_IN_STEP = {
    False: _SYNCED + " AND (acted_by IS NULL OR acted_at < ?) RETURNING chat, message_id, label",
    True: _SYNCED + " AND (acted_at IS NULL OR acted_at < ?) RETURNING chat, message_id, label",
}


def _behind(row: Row, states: Mapping[str, IssueStatus], cutoff: float, *, by: object) -> bool:
    """Whether the button shows another status than GlitchTip's, and nobody (`by`: what says
    who changed it, or None) changed it since `cutoff` (the store's time)."""
    status = states.get(str(row["issue_id"]))
    acted_at = row["acted_at"]
    changed_lately = by is not None and float(str(acted_at)) >= cutoff
    return status is not None and (row["status"] or _UNRESOLVED) != status and not changed_lately


def _noted(tx: Tx, chat: str, message_id: int, note: str) -> SentMessage | None:
    message = _message(tx, chat, message_id)
    if message is None:
        return None
    notes = (*message.notes, *note.split("\n"))
    tx.execute(
        "UPDATE sent_messages SET notes = ? WHERE chat = ? AND message_id = ?",
        ("\n".join(notes), message.chat, message.message_id),
    )
    return replace(message, notes=notes)


def _message(tx: Tx, chat: str, message_id: int, marks: Marks | None = None) -> SentMessage | None:
    row = tx.one(
        "SELECT * FROM sent_messages WHERE chat = ? AND message_id = ?", (chat, message_id)
    )
    if row is None:
        return None
    buttons = tx.all(
        f"SELECT {rows.ROW} FROM {rows.ROWS}"  # noqa: S608 (fixed text)
        " WHERE b.chat = ? AND b.message_id = ? ORDER BY b.position",
        (chat, message_id),
    )
    message = message_from_rows(row, buttons)
    shown = [Shown(b.key, b.issue_id) for b in message.buttons]
    marked = marks.of_rows(tx, message.chat, shown) if marks is not None else {}
    return replace(
        message,
        sent_at=tx.at.to_local(message.sent_at),
        buttons=tuple(
            replace(
                b,
                acted_at=tx.at.to_local(b.acted_at) if b.acted_at is not None else None,
                marks=marked.get(b.key, ()),
            )
            for b in message.buttons
        ),
    )


def message_from_rows(row: Row, buttons: Sequence[Row]) -> SentMessage:
    notes = str(row["notes"])
    return SentMessage(
        chat=str(row["chat"]),
        message_id=int(str(row["message_id"])),
        html=str(row["html"]),
        sent_at=float(str(row["sent_at"])),
        notes=tuple(notes.split("\n")) if notes else (),
        buttons=tuple(_button(button) for button in buttons),
        replies_take=not row["replies_comment_only"],
        take_for=float_or_null(row["take_for"]),
        thread=int_or_null(row["thread"]),
        captioned=bool(row["captioned"]),
    )


def _button(row: Row) -> IssueButton:
    status = row["status"]
    return IssueButton(
        key=str(row["key"]),
        issue_id=str(row["issue_id"]),
        origin=str(row["origin"]),
        label=str(row["label"]),
        title=text_or_null(row["title"]),
        status=next((known for known in ISSUE_STATUSES if known == status), None),
        acted_by=text_or_null(row["acted_by"]),
        acted_at=float_or_null(row["acted_at"]),
        choosing=bool(row["choosing"]),
        snooze=_snooze(row["snooze"]),
        org=text_or_null(row["org"]),
        level=text_or_null(row["level"]),
    )


def _snooze(raw: object) -> dict[str, float] | None:
    """The snooze a button shows, as `claim` wrote it; None for none (or a person's edit)."""
    try:
        found = json.loads(str(raw)) if raw is not None else None
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    return {k: float(v) for k, v in found.items() if k in ("until", "events") and _number(v)}


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def outage_from_row(row: Row) -> Outage:
    return Outage(
        lane=str(row["lane"]),
        link=str(row["link"]),
        chat=str(row["chat"]),
        message_id=int(str(row["message_id"])),
        name=str(row["name"]),
        down_at=float(str(row["down_at"])),
    )
