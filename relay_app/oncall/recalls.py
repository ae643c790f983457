"""A taker who goes quiet (docs/oncall.md): a route's `take_for = "1h"` lets an issue be someone's
(On it, or a reply that takes it) for that long while it stays open. Then its taker is called
first, under the message they took it on (and privately, if they started a chat with the bot);
after as long again, still open and still theirs, it is nobody's again: On it comes back on every
card of it in the chat and the alert's calls go on where they stopped (`resume_in`).

A recall is a row, one per take, due at a time of the store's clock; the dispatcher's upkeep
fires it with the escalation steps (oncall/steps.py), in one transaction that checks the take
still stands. Resolve, Ignore, Mute or Let go end it: a recall whose take no longer stands, or
whose issue was closed, is done without a word."""

from __future__ import annotations

from dataclasses import dataclass

from ..cards import records
from ..cards.marks import Marks
from ..cards.takers import Take, Takes
from ..core.routing import Destination, parse_chat_id
from ..delivery.outbox import card_edit
from ..spool import job_rows as rows
from ..spool.store import Row, Store, Tx, int_or_null
from ..words import Said
from .people import reachable_in
from .steps_store import private_call_in, reply_in, resume_in

# Recalls fired in one go; the rest in the next second's.
FIRE_AT_ONCE = 50


@dataclass(frozen=True)
class Recalled:
    called: int  # takers called
    lapsed: int  # takes ended: the issue nobody's again


class RecallStore:
    def __init__(
        self, store: Store, marks: Marks | None = None, takes: Takes | None = None
    ) -> None:
        """`marks`: what the capabilities mark on an issue's cards; a taker is not called
        about an issue one quiets in the chat (a mute). `takes`: who has each issue (lent by
        On it's capability); without them, nothing is recalled."""
        self._store = store
        self._marks = marks if marks is not None else Marks()
        self._takes = takes

    def plan(self, key: str, *, now: float) -> bool:
        """The button's issue was just taken: its recall, when a message of it in the chat has
        a `take_for` (the shortest). Whether one was planned."""
        takes = self._takes
        if takes is None:
            return False
        return self._store.write(lambda tx: _plan(tx, takes, key), now=now)

    def fire_due(self, *, now: float) -> Recalled:
        """Call the takers whose time has come, and end the takes whose second time has (the
        upkeep asks once its one read says some are: EscalationStore.calls_due)."""
        takes = self._takes
        if takes is None:
            return Recalled(0, 0)
        return self._store.write(lambda tx: _fire_due(tx, self._marks, takes), now=now)


def _plan(tx: Tx, takes: Takes, key: str) -> bool:
    taken = takes.of_row(tx, key)
    row = records.button(tx, key)
    if taken is None or row is None:
        return False
    take_for = records.shortest_take_for(tx, taken.chat, taken.issue_id)
    if take_for is None:
        return False
    taken_at = float(taken.at)
    tx.execute(
        "INSERT INTO recalls (chat, issue_id, taken_at, message_id, taker, taker_id, due_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            taken.chat,
            taken.issue_id,
            taken.at,
            row["message_id"],
            taken.by,
            taken.by_id,
            taken_at + take_for,
        ),
    )
    return True


def _fire_due(tx: Tx, marks: Marks, takes: Takes) -> Recalled:
    due = tx.all(
        "SELECT * FROM recalls WHERE state = 'waiting' AND due_at <= ? ORDER BY due_at LIMIT ?",
        (tx.at.db, FIRE_AT_ONCE),
    )
    called = lapsed = 0
    for recall in due:
        holds = _still_held(tx, recall, marks, takes)
        key = (recall["chat"], recall["issue_id"], recall["taken_at"])
        if holds is None:
            tx.execute(
                "UPDATE recalls SET state = 'done' WHERE chat = ? AND issue_id = ?"
                " AND taken_at = ?",
                key,
            )
            continue
        span = float(recall["due_at"]) - float(recall["taken_at"])
        if int(recall["round"]) == 1:
            span_said = _span(span)
            _call_taker(tx, recall, holds, span_said)
            tx.execute(
                "UPDATE recalls SET round = 2, due_at = ? WHERE chat = ? AND issue_id = ?"
                " AND taken_at = ?",
                (float(recall["due_at"]) + span, *key),
            )
            called += 1
        else:
            _lapse(tx, recall, holds, _span(span / 2), takes)
            tx.execute(
                "UPDATE recalls SET state = 'lapsed' WHERE chat = ? AND issue_id = ?"
                " AND taken_at = ?",
                key,
            )
            lapsed += 1
    if called or lapsed:
        tx.notify()
    return Recalled(called, lapsed)


def _take_of(recall: Row) -> Take:
    """The take a recall is of: the same taker (by Telegram's id; by the name shown, for a
    take kept without one) since the same moment."""
    return Take(
        str(recall["chat"]),
        str(recall["issue_id"]),
        str(recall["taker"]),
        int_or_null(recall["taker_id"]),
        recall["taken_at"],
    )


def _still_held(tx: Tx, recall: Row, marks: Marks, takes: Takes) -> str | None:
    """The issue's label while the take stands (the same taker since the same moment) and the
    issue is open and not quieted (muted) in the chat; None otherwise."""
    chat, issue_id = str(recall["chat"]), str(recall["issue_id"])
    if marks.quiet(tx, chat, [issue_id]):
        return None
    return takes.held_label(tx, _take_of(recall))


def _taker(recall: Row) -> str:
    """How a call names the taker: by the username Telegram gave with their take, or else by
    their id (`tg:<id>`, a link shown with their name); never by a name they gave themselves,
    which anyone can take (a name is never kept with an '@': cards/team.py)."""
    shown, taker_id = str(recall["taker"]), int_or_null(recall["taker_id"])
    return f"tg:{taker_id}" if taker_id is not None and not shown.startswith("@") else shown


def _call_taker(tx: Tx, recall: Row, label: str, span: Said) -> None:
    taker = _taker(recall)
    said = Said("recall_taker", {"label": label, "taker": taker, "duration": span})
    where = _where(recall)
    message_id = int(recall["message_id"])
    reply_in(tx, where, message_id, said)
    # Their private chat is found by their id: a username may have changed hands since.
    taker_id = int_or_null(recall["taker_id"])
    for user_id in reachable_in(tx, [f"tg:{taker_id}" if taker_id else taker]).values():
        private_call_in(tx, user_id, where, message_id, said)


def _lapse(tx: Tx, recall: Row, label: str, span: Said, takes: Takes) -> None:
    """The take ends: nobody has the issue on any message of the chat (each card edited in its
    turn), the calls of those messages go on, and the chat is told."""
    chat = str(recall["chat"])
    messages = takes.end(tx, _take_of(recall))
    for message_id in messages:
        # Edits of one card waiting together make one write (delivery/render.py).
        rows.insert(tx, card_edit(chat, message_id), home="spool")
    resume_in(tx, chat, messages)
    said = Said("recall_lapsed", {"label": label, "taker": _taker(recall), "duration": span})
    reply_in(tx, _where(recall), int(recall["message_id"]), said)


def _span(seconds: float) -> Said:
    if seconds >= 3600 and seconds % 3600 == 0:
        return Said("span_hours", {"n": str(int(seconds // 3600))})
    if seconds < 60:
        return Said("span_seconds", {"n": str(round(seconds))})
    return Said("span_minutes", {"n": str(round(seconds / 60))})


def _where(recall: Row) -> Destination:
    chat = str(recall["chat"])
    thread = recall["thread"]
    return Destination(parse_chat_id(chat) or chat, int(thread) if thread is not None else None)
