"""The issues the relay alerted on, as the watcher of GlitchTip reads them (watch/watcher.py):
kept for WATCHED_FOR after their last alert, the newest MOST_WATCHED of them asked about; each
one's escalating post at most once in ONCE_IN, whichever relay posts it; and the fleet's rounds
of questions, each taken by one process."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cards.takers import TAKES, Takes
from ..core.json_values import json_object
from ..core.services import Lending
from ..message.open_issues import WatchedIssue
from ..spool.store import Row, Store, Tx, float_or_null, int_or_null, placeholders, text_or_null

WATCHED_FOR = 7 * 86400.0
# Bounds a round: at most 5 questions about states and 5 about counts per organisation.
MOST_WATCHED = 1000
ONCE_IN = 86400.0


@dataclass(frozen=True)
class Watched:
    issue_id: str
    org: str
    # The issue alone, as its alert is kept (core/alerts.py; a row before: its source's body).
    alert: dict[str, Any]
    chat: str
    thread: int | None


@dataclass(frozen=True)
class Seen:
    """What a round read of an issue: its status and events, and its last 24 hours' counts."""

    status: str
    events: int | None
    hourly: tuple[int, ...]


class WatchStore:
    def __init__(self, store: Store, takes: Takes | None = None) -> None:
        """`takes`: who has each issue (lent by On it's capability), which `overview` names."""
        self._store = store
        self._takes = takes

    @classmethod
    def lent(cls, store: Store, lending: Lending) -> WatchStore:
        """As it is lent (a chat's issues, for `/issues` and the summaries): with the takes."""
        return cls(store, lending.beside(TAKES, store))

    def watch(self, issues: Sequence[Watched], *, now: float) -> None:
        """These issues were alerted on now: watched for WATCHED_FOR from now."""
        self._store.write(lambda tx: watch_in(tx, issues), now=now)

    def record(self, work: Callable[[Tx], None], *, now: float) -> None:
        """Run `work` (`watch_in`'s, say) in a unit of work of its own."""
        self._store.write(work, now=now)

    def take_round(self, *, now: float, every: float) -> float | None:
        """None when this process asks GlitchTip this round: one process per `every`, across
        every relay on the spool; else how long until the next round is due (its leader
        looks again then, not every second). A read first: a round is due once a minute."""
        next_at = self._store.read(
            lambda tx: tx.at.to_local(
                float(tx.one("SELECT next_at FROM watch_round WHERE id = 1")["next_at"])
            ),
            now=now,
        )
        if next_at > now:
            return next_at - now

        def take(tx: Tx) -> bool:
            taken = tx.one(
                "UPDATE watch_round SET next_at = ? WHERE id = 1 AND next_at <= ? RETURNING id",
                (tx.at.db + every, tx.at.db),
            )
            return taken is not None

        return None if self._store.write(take, now=now) else 0.0

    def round_now(self, *, now: float) -> None:
        """The next round due at once (a person asked what the watcher read long ago): the
        fleet's leader asks within a look, as one round."""
        self._store.write(
            lambda tx: tx.execute(
                "UPDATE watch_round SET next_at = ? WHERE id = 1 AND next_at > ?",
                (tx.at.db, tx.at.db),
            ),
            now=now,
        )

    def watched(self, *, now: float) -> list[Watched]:
        """The issues alerted on within WATCHED_FOR, newest first, MOST_WATCHED at most; the
        older ones are forgotten."""

        def read(tx: Tx) -> list[Watched]:
            since = tx.at.db - WATCHED_FOR
            tx.execute("DELETE FROM watched WHERE alerted_at < ?", (since,))
            rows = tx.all(
                "SELECT issue_id, org, alert, chat, thread FROM watched"
                " ORDER BY alerted_at DESC LIMIT ?",
                (MOST_WATCHED,),
            )
            return [
                Watched(
                    str(row["issue_id"]),
                    str(row["org"]),
                    json.loads(str(row["alert"])),
                    str(row["chat"]),
                    int(row["thread"]) if row["thread"] is not None else None,
                )
                for row in rows
            ]

        return self._store.write(read, now=now)

    def seen(self, states: Mapping[str, Seen], *, now: float) -> None:
        """What the watcher read of these issues this round, kept for the chat's overviews; and
        their organizations, which the tracker's answer has now shown hold them (asked among an
        organization's issues, it answers for its own alone)."""
        if not states:
            return

        def keep(tx: Tx) -> None:
            tx.executemany(
                "UPDATE watched SET status = ?, events = ?, hourly = ?, read_at = ?"
                " WHERE issue_id = ?",
                [
                    (seen.status, seen.events, json.dumps(list(seen.hourly)), tx.at.db, issue_id)
                    for issue_id, seen in states.items()
                ],
            )
            asked = list(states)
            read = "SELECT DISTINCT org FROM watched WHERE issue_id IN ({})"
            rows = tx.all(read.format(placeholders(asked)), asked)
            orgs = {str(row["org"]) for row in rows}
            tx.executemany(
                "INSERT INTO organizations (org, alerted_at) VALUES (?, ?) ON CONFLICT (org)"
                " DO UPDATE SET alerted_at = excluded.alerted_at",
                [(org, tx.at.db) for org in sorted(orgs)],
            )

        self._store.write(keep, now=now)

    def overview(self, chat: str, *, now: float) -> list[WatchedIssue]:
        """The issues alerted on in `chat` within WATCHED_FOR, as the watcher last read them,
        most events first."""

        def read(tx: Tx) -> list[WatchedIssue]:
            rows = tx.all(
                "SELECT w.issue_id, w.alert, w.thread, w.status, w.events, w.hourly,"
                " w.alerted_at, w.first_alerted_at, w.escalated_at, w.read_at"
                " FROM watched w WHERE w.chat = ? AND w.alerted_at >= ?",
                (chat, tx.at.db - WATCHED_FOR),
            )
            ids = [str(row["issue_id"]) for row in rows]
            takers = self._takes.latest(tx, ids) if self._takes is not None else {}
            found = [_watched_issue(tx, row, takers.get(str(row["issue_id"]))) for row in rows]
            return sorted(found, key=lambda issue: -(issue.events or 0))

        return self._store.read(read, now=now)

    def hourly_of(self, issue_ids: Sequence[str], *, now: float) -> dict[str, list[int]]:
        """The last 24 hours of these issues, as the watcher last read them: those it has read
        and that had events."""
        if not issue_ids:
            return {}

        def read(tx: Tx) -> dict[str, list[int]]:
            found = {}
            for issue_id in dict.fromkeys(issue_ids):
                row = tx.one("SELECT hourly FROM watched WHERE issue_id = ?", (issue_id,))
                hourly = json.loads(str(row["hourly"])) if row and row["hourly"] else []
                if any(hourly):
                    found[issue_id] = [int(n) for n in hourly]
            return found

        return self._store.read(read, now=now)

    def alerted_in(self, chat: str, issue_id: str) -> bool:
        """Whether the issue's last alert within WATCHED_FOR went to `chat`."""
        row = self._store.read(
            lambda tx: tx.one(
                "SELECT 1 AS alerted FROM watched WHERE issue_id = ? AND chat = ?"
                " AND alerted_at >= ?",
                (issue_id, chat, tx.at.db - WATCHED_FOR),
            )
        )
        return row is not None

    def organizations(self) -> set[str]:
        """The organisations whose issues the relay was alerted on, as the tracker's own answers
        showed them (the watcher asks for each issue among its organization's): never as a
        webhook's link says, which anyone with GlitchTip's webhook URL writes. Kept for good,
        where the issues are forgotten after WATCHED_FOR."""
        rows = self._store.read(lambda tx: tx.all("SELECT org FROM organizations"))
        return {str(row["org"]) for row in rows}

    def place_of(self, issue_id: str) -> tuple[str, int | None] | None:
        """A watched issue's organisation (its alert's link said) and the forum topic its alert
        went to; None when it is not watched."""
        row = self._store.read(
            lambda tx: tx.one("SELECT org, thread FROM watched WHERE issue_id = ?", (issue_id,))
        )
        if row is None:
            return None
        return str(row["org"]), int(row["thread"]) if row["thread"] is not None else None

    def escalated(self, issue_id: str, *, now: float) -> bool:
        """Record the issue's escalating post, unless one was made within ONCE_IN: whether
        this one is to be made."""

        def mark(tx: Tx) -> bool:
            marked = tx.one(
                "UPDATE watched SET escalated_at = ? WHERE issue_id = ? AND (escalated_at IS"
                " NULL OR escalated_at <= ?) RETURNING issue_id",
                (tx.at.db, issue_id, tx.at.db - ONCE_IN),
            )
            return marked is not None

        return self._store.write(mark, now=now)


def watch_in(tx: Tx, issues: Sequence[Watched]) -> None:
    """`WatchStore.watch`, in a unit of work under way (a delivery's)."""
    tx.executemany(
        "INSERT INTO watched (issue_id, org, alert, chat, thread, alerted_at,"
        " first_alerted_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (issue_id) DO UPDATE"
        " SET org = excluded.org, alert = excluded.alert, chat = excluded.chat, thread ="
        " excluded.thread, alerted_at = excluded.alerted_at",
        [
            (i.issue_id, i.org, json.dumps(i.alert), i.chat, i.thread, tx.at.db, tx.at.db)
            for i in issues
        ],
    )


def _watched_issue(tx: Tx, row: Row, taken_by: str | None) -> WatchedIssue:
    alert = json.loads(str(row["alert"]))
    hourly = json.loads(str(row["hourly"])) if row["hourly"] is not None else []
    escalated = float_or_null(row["escalated_at"])
    return WatchedIssue(
        issue_id=str(row["issue_id"]),
        alert=json_object(alert),
        thread=int_or_null(row["thread"]),
        status=text_or_null(row["status"]),
        events=int_or_null(row["events"]),
        hourly=tuple(int(count) for count in hourly if isinstance(count, int)),
        alerted_at=tx.at.to_local(float(str(row["alerted_at"]))),
        first_alerted_at=tx.at.to_local(float(str(row["first_alerted_at"]))),
        escalated_at=tx.at.to_local(escalated) if escalated is not None else None,
        taken_by=taken_by,
        read_at=tx.at.to_local(read) if (read := float_or_null(row["read_at"])) else None,
    )
