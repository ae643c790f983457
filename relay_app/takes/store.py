"""Who has an issue in a chat (On it): every statement on a take. A take is kept on each card
of the chat that shows the issue, so each says who has it and none offers On it again; a card
sent later of an issue someone has takes it too; Let go, or a recall that ends it, clears it on
each; and every take is kept after it ends, for the weekly report (`takes`). A take is a row of
its own (`issue_takes`), keyed by the card's row of the issue, never a column of the card's
record, which the cards keep (cards/records.py reads it for this module). A person is their
Telegram user id; the name is only what a card shows. Each function takes the caller's `Tx`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..cards import records
from ..cards.marks import Mark, Shown
from ..cards.takers import TAKEN, Take
from ..core.routing import Destination
from ..spool.store import Row, Tx, int_or_null, placeholders


def take(tx: Tx, key: str, *, by: str, by_id: int | None) -> list[int]:
    """Record "On it" for the button's issue, in its chat, by the person `by_id` (Telegram's
    id: who they are) shown as `by`: on every message there that shows it, so each card
    says who has it and none offers On it again. Of presses at the same moment, one takes
    it. The messages now showing the taker (the pressed one first); none when it is not
    kept, someone has it already, or it is resolved or ignored."""
    pressed = records.button(tx, key)
    if pressed is None:
        return []
    chat, issue_id = str(pressed["chat"]), str(pressed["issue_id"])
    # Every row of the issue in the chat locked before it is read, in one order (PostgreSQL):
    # a press that closes the issue meanwhile waits, or is waited for, and two takes of its
    # cards at once never deadlock.
    rows = records.rows_of_issue(tx, chat, issue_id, str(pressed["origin"]), open_only=True)
    if key not in {str(row["key"]) for row in rows} or not _taken(tx, [key], by, by_id):
        return []
    others = [row for row in rows if str(row["key"]) != key]
    taken_too = _taken(tx, [str(row["key"]) for row in others], by, by_id)
    # Kept after a Let go: who took what, and how soon (summaries/report.py).
    tx.execute(
        "INSERT INTO takes (chat, issue_id, taken_by, taker_id, taken_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (chat, issue_id, by, by_id, tx.at.db),
    )
    shown = [int(pressed["message_id"])]
    also = {int(row["message_id"]) for row in others if str(row["key"]) in taken_too}
    return shown + sorted(also - set(shown))


def _taken(tx: Tx, keys: list[str], by: str, by_id: int | None) -> set[str]:
    """The take recorded on each of these rows that nobody has yet: the keys it was."""
    taken: set[str] = set()
    for key in keys:
        row = tx.one(
            "INSERT INTO issue_takes (key, taken_by, taker_id, taken_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (key) DO NOTHING RETURNING key",
            (key, by, by_id, tx.at.db),
        )
        if row is not None:
            taken.add(key)
    return taken


def let_go(tx: Tx, key: str, *, by_id: int | None) -> list[int] | None:
    """Let go of the button's issue in its chat (the person `by_id` had it): nobody has it
    on any of its messages there, each offering On it again. The messages changed; None
    when they do not have it (nobody does, or another person: compared by Telegram's id,
    never by a name, which anyone can take). A take kept with no id (before ids were kept)
    may be let go by anyone allowed to act."""
    row = records.button(tx, key)
    held = _takes_of(tx, [key]).get(key)
    if row is None or held is None or by_id is None:
        return None
    taker = int_or_null(held["taker_id"])
    if taker is not None and taker != by_id:
        return None
    rows = records.rows_of_issue(tx, str(row["chat"]), str(row["issue_id"]), str(row["origin"]))
    takes = _takes_of(tx, [str(each["key"]) for each in rows])
    mine = [
        each
        for each in rows
        if (found := takes.get(str(each["key"]))) is not None
        and int_or_null(found["taker_id"]) in (by_id, None)
    ]
    return _ended(tx, mine)


def _takes_of(tx: Tx, keys: Sequence[str]) -> dict[str, Row]:
    """The takes standing on these rows, by key."""
    if not keys:
        return {}
    rows = tx.all(
        "SELECT key, taken_by, taker_id, taken_at FROM issue_takes"  # noqa: S608 (placeholders)
        f" WHERE key IN ({placeholders(keys)})",
        list(keys),
    )
    return {str(row["key"]): row for row in rows}


def _ended(tx: Tx, held: Sequence[Row]) -> list[int]:
    """These rows' takes ended: their messages' ids."""
    keys = [str(found["key"]) for found in held]
    if keys:
        tx.execute(f"DELETE FROM issue_takes WHERE key IN ({placeholders(keys)})", keys)  # noqa: S608 (placeholders)
    return sorted({int(found["message_id"]) for found in held})


def carried(tx: Tx, chat: str, rows: Sequence[Shown]) -> bool:
    """A card's rows just kept in the chat: each issue someone has there, taken on another of
    its cards and open since, marked as theirs here too (by its first taker, since the first
    take). Whether there were any. Two reads however many rows: it runs as each card is kept."""
    others = records.open_others(tx, chat, [shown.key for shown in rows])
    takes = _takes_of(tx, sorted({key for found in others.values() for key in found}))
    carried = False
    for key, found in others.items() if takes else ():
        held = sorted(
            (takes[other] for other in found if other in takes),
            key=lambda take: float(take["taken_at"]),
        )
        if not held:
            continue
        first = held[0]
        inherited = tx.one(
            "INSERT INTO issue_takes (key, taken_by, taker_id, taken_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (key) DO NOTHING RETURNING key",
            (key, first["taken_by"], first["taker_id"], first["taken_at"]),
        )
        carried = carried or inherited is not None
    return carried


def marks(tx: Tx, keys: Sequence[str]) -> dict[str, list[Mark]]:
    """The take standing on each of these rows, as its mark."""
    return {
        key: [
            taken_mark(
                str(row["taken_by"]),
                int_or_null(row["taker_id"]),
                tx.at.to_local(float(row["taken_at"])),
            )
        ]
        for key, row in _takes_of(tx, keys).items()
    }


def taken_mark(by: str, by_id: int | None, at: float) -> Mark:
    """A take as a card's row shows it, '👀 @ada is on it since 10:42 UTC': by whom, their
    Telegram user id (its `ref`), since when (the caller's clock). Nobody is called about
    the row's issue meanwhile."""
    return Mark(
        TAKEN, by, at, line="taken_by", line_of_several="issue_taken_by", ref=by_id, quiets=True
    )


def forget(tx: Tx, keys: Sequence[str], before: float) -> None:
    """These rows are forgotten with their messages: their takes too, and the takes kept for
    the report from before then."""
    for start in range(0, len(keys), 500):
        batch = list(keys[start : start + 500])
        tx.execute(f"DELETE FROM issue_takes WHERE key IN ({placeholders(batch)})", batch)  # noqa: S608 (placeholders)
    tx.execute("DELETE FROM takes WHERE taken_at < ?", (before,))


class TakesStore:
    """The takes as the others read them (cards/takers.py's `Takes`): each read in the caller's
    unit of work, on whichever spool that is, so it keeps no store of its own."""

    def of_row(self, tx: Tx, key: str) -> Take | None:
        row = records.button(tx, key)
        held = _takes_of(tx, [key]).get(key)
        if row is None or held is None:
            return None
        return _take(str(row["chat"]), str(row["issue_id"]), held)

    def latest(self, tx: Tx, issue_ids: Sequence[str]) -> dict[str, str]:
        rows = records.rows_anywhere(tx, issue_ids)
        takes = _takes_of(tx, [str(row["key"]) for row in rows])
        found: dict[str, tuple[float, str]] = {}
        for row in rows:
            take = takes.get(str(row["key"]))
            if take is None:
                continue
            issue_id, at = str(row["issue_id"]), float(take["taken_at"])
            if issue_id not in found or at > found[issue_id][0]:
                found[issue_id] = (at, str(take["taken_by"]))
        return {issue_id: by for issue_id, (_, by) in found.items()}

    def since(self, tx: Tx, place: Destination | None, since: float) -> list[Take]:
        if place is None:
            rows = tx.all("SELECT * FROM takes WHERE taken_at >= ? ORDER BY taken_at", (since,))
        else:
            rows = tx.all(
                "SELECT * FROM takes WHERE taken_at >= ? AND chat = ? ORDER BY taken_at",
                (since, place.chat_key),
            )
        found = [_take(str(row["chat"]), str(row["issue_id"]), row) for row in rows]
        if place is None:
            return found
        shown = {take.issue_id for take in found}
        shown = {issue_id for issue_id in shown if records.shown_in(tx, place, issue_id)}
        return [take for take in found if take.issue_id in shown]

    def held_label(self, tx: Tx, take: Take) -> str | None:
        rows = records.rows_of_issue(tx, take.chat, take.issue_id, open_only=True)
        held = _same(take, _takes_of(tx, [str(row["key"]) for row in rows]))
        return next((str(row["label"]) for row in rows if str(row["key"]) in held), None)

    def end(self, tx: Tx, take: Take) -> list[int]:
        rows = records.rows_of_issue(tx, take.chat, take.issue_id)
        held = _same(take, _takes_of(tx, [str(row["key"]) for row in rows]))
        return _ended(tx, [row for row in rows if str(row["key"]) in held])


def _take(chat: str, issue_id: str, row: Row) -> Take:
    return Take(chat, issue_id, str(row["taken_by"]), int_or_null(row["taker_id"]), row["taken_at"])


def _same(take: Take, takes: dict[str, Row]) -> set[str]:
    """The rows of these whose take is this one: the same taker (by Telegram's id; by the name
    shown, for a take kept without one) since the same moment."""
    return {
        key
        for key, row in takes.items()
        if _at(row["taken_at"]) == _at(take.at)
        and int_or_null(row["taker_id"]) == take.by_id
        and (take.by_id is not None or str(row["taken_by"]) == take.by)
    }


def _at(value: Any) -> float:
    return float(value)
