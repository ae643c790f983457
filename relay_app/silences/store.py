"""Silences, kept in the spool: every process and every relay on the same spool honours them,
and they hold across restarts. A silence holds back, from one chat, the alerts its matchers
match (silences/matching.py) until it ends; each alert it holds is kept here (its lines) and
counted, never sent and never lost. When it ends, running out or expired early, the one
transaction that ends it queues one message saying how many it held and for what (`end`), so
the summary is written exactly once, by whichever process ends it first, and delivered as any
alert is. Times are stored on the store's clock and handed out on the caller's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..cards import records
from ..core.routing import Destination
from ..message.lines import Line
from ..message.lines import to_json as lines_to_json
from ..spool import job_rows as rows
from ..spool.model import NewJob, Precedence
from ..spool.store import Row, Store, Tx
from .matching import Matchers

# The held alerts kept for a silence's summary; past this they are only counted. A week's
# silence over a storm would otherwise keep every alert of it, and a summary shows about sixty.
MAX_KEPT_HELD = 1000
# What a silence Mute made says of itself (`relay-app silence list` shows it): Unmute ends those.
MUTED_FROM_THE_CHAT = "muted from the chat"


@dataclass(frozen=True)
class Silence:
    id: int
    chat: str  # as routing.chat_key spells it
    matchers: Matchers
    created_by: str
    comment: str
    starts_at: float
    ends_at: float
    # How the chat named the issue of an issue matcher: its short id and title, from the mute
    # button, or from the last message that showed the issue (`relay-app silence add`).
    label: str | None = None
    issue_title: str | None = None
    ended_at: float | None = None
    ended_by: str | None = None
    held: int = 0


@dataclass(frozen=True)
class Held:
    """An alert a silence held back: where it would have gone, and its lines."""

    destination: Destination
    received_at: float
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Muted:
    """What a Mute did: the issue's one silence in the chat (`made` now, or the one that held
    it already), and the messages of the chat that show the issue, all under it now."""

    silence: Silence
    made: bool
    messages: tuple[int, ...]


@dataclass(frozen=True)
class Ended:
    silence: Silence
    held: int
    summary_alert: int | None  # its id in the queue, when it held any


@dataclass(frozen=True)
class NewSilence:
    """A silence as it is asked for: in which chat, of which alerts, by whom and why, for how
    many seconds from now; its issue's label and title when the asker knows them."""

    chat: str
    matchers: Matchers
    by: str
    comment: str
    seconds: float
    label: str | None = None
    issue_title: str | None = None


class SilenceStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def add(self, new: NewSilence, *, now: float) -> Silence:
        """A silence from now. An issue matcher without a label is named as the last message
        that showed the issue named it, if the spool still keeps it."""
        matchers = new.matchers
        if not matchers:
            raise ValueError("a silence needs at least one matcher")

        def add(tx: Tx) -> Silence:
            shown_as = (new.label, new.issue_title)
            if new.label is None and matchers.issue is not None:
                shown = records.latest_shown(tx, matchers.issue)
                if shown is not None:
                    shown_as = (shown["label"], shown["title"])
            row = tx.one(
                "INSERT INTO silences (chat, issue, project, environment, title, label,"
                " issue_title, created_by, comment, starts_at, ends_at) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                (
                    new.chat,
                    matchers.issue,
                    matchers.project,
                    matchers.environment,
                    matchers.title,
                    *shown_as,
                    new.by,
                    new.comment,
                    tx.at.db,
                    tx.at.db + new.seconds,
                ),
            )
            return _silence(row, tx)

        return self._store.write(add, now=now)

    def mute(self, chat: str, key: str, *, by: str, seconds: float, now: float) -> Muted | None:
        """Mute the issue of the button `key` in `chat` (a press) for `seconds`: one silence
        per issue and chat, however many presses come at once, from whichever process or
        relay. Every button of the issue in the chat is locked first (in one order, so presses
        wait for each other, never deadlock); a silence Mute made that holds the issue already
        is the one, as it is; and every card of the issue in the chat is shown under it, so
        that Unmute on any of them ends it. None when the button is no longer kept."""

        def mute(tx: Tx) -> Muted | None:
            button = records.button(tx, key)
            if button is None:
                return None
            issue = str(button["issue_id"])
            records.lock_issue(tx, chat, issue)
            found = tx.one(
                "SELECT * FROM silences WHERE chat = ? AND issue = ? AND comment = ?"
                " AND project IS NULL AND environment IS NULL AND title IS NULL"
                " AND ended_at IS NULL AND ends_at > ? ORDER BY id LIMIT 1",
                (chat, issue, MUTED_FROM_THE_CHAT, tx.at.db),
            )
            made = found is None
            if made:
                found = tx.one(
                    "INSERT INTO silences (chat, issue, label, issue_title, created_by, comment,"
                    " starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                    (
                        chat,
                        issue,
                        button["label"],
                        button["title"],
                        by,
                        MUTED_FROM_THE_CHAT,
                        tx.at.db,
                        tx.at.db + seconds,
                    ),
                )
            # Every card of the issue in the chat is marked by it now (silences/marks.py).
            messages = records.messages_showing(tx, chat, issue)
            return Muted(_silence(found, tx), made, messages)

        return self._store.write(mute, now=now)

    def mutes_of(self, chat: str, issue: str, *, now: float) -> list[int]:
        """The silences Mute made that hold the issue in the chat now (one, but for those an
        older relay made of presses at once)."""

        def read(tx: Tx) -> list[int]:
            found = tx.all(
                "SELECT id FROM silences WHERE chat = ? AND issue = ? AND comment = ?"
                " AND project IS NULL AND environment IS NULL AND title IS NULL"
                " AND ended_at IS NULL AND ends_at > ? ORDER BY id",
                (chat, issue, MUTED_FROM_THE_CHAT, tx.at.db),
            )
            return [int(row["id"]) for row in found]

        return self._store.read(read, now=now)

    def active(self, chat: str, *, now: float) -> list[Silence]:
        """The silences that hold alerts back from this chat now, oldest first."""

        def read(tx: Tx) -> list[Silence]:
            found = tx.all(
                "SELECT * FROM silences WHERE chat = ? AND ended_at IS NULL AND ends_at > ?"
                " ORDER BY id",
                (chat, tx.at.db),
            )
            return [_silence(row, tx) for row in found]

        return self._store.read(read, now=now)

    def hold(self, silence_id: int, held: Held, *, now: float) -> bool:
        """Keep an alert the silence holds back, and count it: False when the silence ended
        meanwhile (the alert then goes as usual)."""

        def hold(tx: Tx) -> bool:
            counted = tx.one(
                "UPDATE silences SET held = held + 1"
                " WHERE id = ? AND ended_at IS NULL AND ends_at > ? RETURNING held",
                (silence_id, tx.at.db),
            )
            if counted is None:
                return False
            if int(counted["held"]) > MAX_KEPT_HELD:
                return True
            tx.execute(
                "INSERT INTO held_alerts (silence_id, chat, thread, received_at, lines)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    silence_id,
                    held.destination.chat_key,
                    held.destination.thread,
                    tx.at.db,
                    lines_to_json(held.lines) or "[]",
                ),
            )
            return True

        return self._store.write(hold, now=now)

    def listed(self, *, now: float, ended_too: bool = False) -> list[Silence]:
        """Silences not yet ended (with `ended_too`, all that are kept), newest first."""

        def read(tx: Tx) -> list[Silence]:
            where = "" if ended_too else " WHERE ended_at IS NULL"
            found = tx.all(f"SELECT * FROM silences{where} ORDER BY id DESC")  # noqa: S608 (no input)
            return [_silence(row, tx) for row in found]

        return self._store.read(read, now=now)

    def tally(self, *, now: float) -> tuple[int, int]:
        """How many silences hold now, and how many alerts they have held back so far."""

        def read(tx: Tx) -> tuple[int, int]:
            row = tx.one(
                "SELECT count(*) AS silences, coalesce(sum(held), 0) AS held FROM silences"
                " WHERE ended_at IS NULL AND ends_at > ?",
                (tx.at.db,),
            )
            return int(row["silences"]), int(row["held"])

        return self._store.read(read, now=now)

    def ended_by_now(self, *, now: float) -> list[int]:
        """The silences that ran out and are not yet ended (`end` ends them)."""

        def read(tx: Tx) -> list[int]:
            found = tx.all(
                "SELECT id FROM silences WHERE ended_at IS NULL AND ends_at <= ? ORDER BY id",
                (tx.at.db,),
            )
            return [int(row["id"]) for row in found]

        return self._store.read(read, now=now)

    def end(self, silence_id: int, *, by: str | None, now: float) -> Ended | None:
        """End the silence (when it ran out, at its end; otherwise now, `by` whom), and queue
        the summary of what it held (an alert whose data is the silence and the held alerts'
        lines, rendered when it is sent), in one transaction; None when it had ended already
        or does not exist."""

        def end(tx: Tx) -> Ended | None:
            row = tx.one(
                "UPDATE silences SET ended_at = CASE WHEN ends_at < ? THEN ends_at ELSE ? END,"
                " ended_by = ? WHERE id = ? AND ended_at IS NULL RETURNING *",
                (tx.at.db, tx.at.db, by, silence_id),
            )
            if row is None:
                return None
            silence = _silence(row, tx)
            kept = tx.all(
                "SELECT chat, thread, received_at, lines FROM held_alerts"
                " WHERE silence_id = ? ORDER BY received_at",
                (silence_id,),
            )
            tx.execute("DELETE FROM held_alerts WHERE silence_id = ?", (silence_id,))
            if not kept:
                return Ended(silence, silence.held, None)
            first = kept[0]
            destination = rows.destination_of(self._store.path, first["chat"], first["thread"])
            about = summary_data(silence, [json.loads(r["lines"]) for r in kept])
            job = rows.insert(
                tx,
                NewJob("alert", about, destination, Precedence.CALL, lane=destination.lane),
                home="spool",
            )
            tx.notify()
            return Ended(silence, silence.held, job.id)

        return self._store.write(end, now=now)

    def prune(self, *, before: float) -> int:
        """Forget silences that ended before `before`; how many."""

        def prune(tx: Tx) -> int:
            return int(
                tx.execute(
                    "DELETE FROM silences WHERE ended_at IS NOT NULL AND ended_at < ?",
                    (tx.at.to_db(before),),
                ).rowcount
            )

        return self._store.write(prune)


def summary_data(silence: Silence, held_lines: list[object]) -> dict[str, object]:
    """What the summary of an ended silence is about, as its job keeps it: the silence, and
    the lines of the alerts it held (message/lines.py's JSON), oldest first."""
    return {
        "silence_over": {
            "matchers": asdict(silence.matchers),
            "label": silence.label,
            "starts_at": silence.starts_at,
            "ended_at": silence.ended_at if silence.ended_at is not None else silence.ends_at,
            "held": silence.held,
            "lines": held_lines,
        }
    }


def _silence(row: Row, tx: Tx) -> Silence:
    ended_at = row["ended_at"]
    return Silence(
        id=int(row["id"]),
        chat=str(row["chat"]),
        matchers=Matchers(row["issue"], row["project"], row["environment"], row["title"]),
        created_by=str(row["created_by"]),
        comment=str(row["comment"]),
        starts_at=tx.at.to_local(float(row["starts_at"])),
        ends_at=tx.at.to_local(float(row["ends_at"])),
        label=row["label"],
        issue_title=row["issue_title"],
        ended_at=tx.at.to_local(float(ended_at)) if ended_at is not None else None,
        ended_by=row["ended_by"],
        held=int(row["held"]),
    )
