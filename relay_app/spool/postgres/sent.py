"""The sent messages the relay may change later (spool/sent.py), in PostgreSQL: shared by every
relay on the database, so a press reaches the record whichever relay sent the message. Times are
stored on the database's clock and handed out on the caller's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..sent import IssueButton, IssueStatus, Outage, SentMessage, message_from_rows, outage_from_row
from .database import Cursor, Now, PgDatabase


class PgSentStore:
    def __init__(self, database: PgDatabase) -> None:
        self._database = database

    def keep(self, message: SentMessage, outages: Sequence[Outage]) -> None:
        def keep(cursor: Cursor, at: Now) -> None:
            cursor.execute(
                "INSERT INTO sent_messages (chat, message_id, html, notes, sent_at)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (chat, message_id) DO UPDATE"
                " SET html = excluded.html, notes = excluded.notes, sent_at = excluded.sent_at",
                (
                    message.chat,
                    message.message_id,
                    message.html,
                    "\n".join(message.notes),
                    at.to_db(message.sent_at),
                ),
            )
            cursor.executemany(
                "INSERT INTO issue_buttons (key, chat, message_id, position, issue_id, origin,"
                " label) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                [
                    (b.key, message.chat, message.message_id, n, b.issue_id, b.origin, b.label)
                    for n, b in enumerate(message.buttons)
                ],
            )
            cursor.executemany(
                "INSERT INTO outages (lane, link, chat, message_id, name, down_at)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (lane, link) DO UPDATE"
                " SET chat = excluded.chat, message_id = excluded.message_id,"
                " name = excluded.name, down_at = excluded.down_at",
                [
                    (o.lane, o.link, o.chat, o.message_id, o.name, at.to_db(o.down_at))
                    for o in outages
                ],
            )

        self._database.write(keep)

    def pressed(self, key: str) -> tuple[SentMessage, IssueButton] | None:
        def read(cursor: Cursor, at: Now) -> tuple[SentMessage, IssueButton] | None:
            row = cursor.execute(
                "SELECT chat, message_id FROM issue_buttons WHERE key = %s", (key,)
            ).fetchone()
            message = _message(cursor, at, row["chat"], row["message_id"]) if row else None
            if message is None:
                return None
            return message, next(b for b in message.buttons if b.key == key)

        return self._database.read(read)

    def acted(self, key: str, status: IssueStatus, *, by: str, at: float) -> SentMessage | None:
        def act(cursor: Cursor, now: Now) -> SentMessage | None:
            row = cursor.execute(
                "UPDATE issue_buttons SET status = %s, acted_by = %s, acted_at = %s"
                " WHERE key = %s RETURNING chat, message_id",
                (status, by, now.to_db(at), key),
            ).fetchone()
            return _message(cursor, now, row["chat"], row["message_id"]) if row else None

        return self._database.write(act, now=at)

    def outage(self, lane: str, link: str) -> Outage | None:
        def read(cursor: Cursor, at: Now) -> Outage | None:
            row = cursor.execute(
                "SELECT * FROM outages WHERE lane = %s AND link = %s", (lane, link)
            ).fetchone()
            if row is None:
                return None
            outage = outage_from_row(row)
            return replace(outage, down_at=at.to_local(outage.down_at))

        return self._database.read(read)

    def recovered(self, outage: Outage, note: str) -> SentMessage | None:
        def recover(cursor: Cursor, at: Now) -> SentMessage | None:
            cursor.execute(
                "DELETE FROM outages WHERE lane = %s AND link = %s AND message_id = %s",
                (outage.lane, outage.link, outage.message_id),
            )
            message = _message(cursor, at, outage.chat, outage.message_id)
            if message is None:
                return None
            cursor.execute(
                "UPDATE sent_messages SET notes = %s WHERE chat = %s AND message_id = %s",
                ("\n".join((*message.notes, note)), message.chat, message.message_id),
            )
            return replace(message, notes=(*message.notes, note))

        return self._database.write(recover)

    def first_time(self, keys: Sequence[str], *, at: float) -> bool:
        def record(cursor: Cursor, now: Now) -> bool:
            added = sum(
                cursor.execute(
                    "INSERT INTO handled_updates (key, at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (key, now.to_db(at)),
                ).rowcount
                for key in keys
            )
            return added == len(keys)

        return self._database.write(record, now=at)

    def prune(self, *, before: float) -> int:
        def prune(cursor: Cursor, at: Now) -> int:
            cutoff = at.to_db(before)
            cursor.execute("DELETE FROM handled_updates WHERE at < %s", (cutoff,))
            cursor.execute("DELETE FROM outages WHERE down_at < %s", (cutoff,))
            cursor.execute(
                "DELETE FROM issue_buttons b USING sent_messages m WHERE b.chat = m.chat"
                " AND b.message_id = m.message_id AND m.sent_at < %s",
                (cutoff,),
            )
            return cursor.execute(
                "DELETE FROM sent_messages WHERE sent_at < %s", (cutoff,)
            ).rowcount

        return self._database.write(prune)


def _message(cursor: Cursor, at: Now, chat: str, message_id: int) -> SentMessage | None:
    row = cursor.execute(
        "SELECT * FROM sent_messages WHERE chat = %s AND message_id = %s", (chat, message_id)
    ).fetchone()
    if row is None:
        return None
    buttons = cursor.execute(
        "SELECT * FROM issue_buttons WHERE chat = %s AND message_id = %s ORDER BY position",
        (chat, message_id),
    ).fetchall()
    message = message_from_rows(row, buttons)
    return replace(
        message,
        sent_at=at.to_local(message.sent_at),
        buttons=tuple(
            replace(b, acted_at=at.to_local(b.acted_at) if b.acted_at is not None else None)
            for b in message.buttons
        ),
    )
