"""Whom Sentry says each of its issues is assigned to (its `issue.assigned` webhook), kept in
Sentry's own table and shown on every card of the issue as a mark (cards/marks.py): '👤 Assigned
to Ada Lovelace in Sentry at 10:42 UTC'. Not On it: the assignee is Sentry's person, whom the
chat's calls do not know. A card sent after the assignment shows it too; the card's record
keeps nothing of it. Kept for KEPT after it was made, as long as a card that could show it."""

from __future__ import annotations

from collections.abc import Sequence

from ..cards.marks import Mark
from ..spool.store import Store, Tx, placeholders
from .source import SENTRY

ASSIGNED = "assigned"
# An assignment older than this is forgotten at the next one: the cards that showed it are
# long gone (a card's record is kept a week, RELAY_RETRY_MAX_AGE if longer).
KEPT = 90 * 86400.0


class AssignmentStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def assign(self, issue_id: str, assignee: str | None, *, now: float) -> bool:
        """Whom Sentry says the issue is assigned to now (None: nobody); whether that changed
        what its cards show (the same assignee again does not)."""

        def assign(tx: Tx) -> bool:
            tx.execute("DELETE FROM sentry_assignments WHERE assigned_at < ?", (tx.at.db - KEPT,))
            if assignee is None:
                gone = tx.all(
                    "DELETE FROM sentry_assignments WHERE issue_id = ? RETURNING issue_id",
                    (issue_id,),
                )
                return bool(gone)
            changed = tx.one(
                "INSERT INTO sentry_assignments (issue_id, assigned_to, assigned_at)"
                " VALUES (?, ?, ?) ON CONFLICT (issue_id) DO UPDATE SET"
                " assigned_to = excluded.assigned_to, assigned_at = excluded.assigned_at"
                " WHERE sentry_assignments.assigned_to != excluded.assigned_to"
                " RETURNING issue_id",
                (issue_id, assignee, tx.at.db),
            )
            return changed is not None

        return self._store.write(assign, now=now)


def assigned(tx: Tx, chat: str, issue_ids: Sequence[str]) -> dict[str, list[Mark]]:
    """The mark of each of these issues Sentry assigned to someone (in every chat alike); a
    card of GlitchTip's issues alone asks nothing."""
    sentrys = [issue_id for issue_id in issue_ids if SENTRY.holds(issue_id)]
    if not sentrys:
        return {}
    sql = (
        "SELECT issue_id, assigned_to, assigned_at FROM sentry_assignments"  # noqa: S608
        f" WHERE issue_id IN ({placeholders(sentrys)})"
    )
    return {
        str(row["issue_id"]): [
            Mark(
                ASSIGNED,
                str(row["assigned_to"]),
                tx.at.to_local(float(row["assigned_at"])),
                line="assigned_in_sentry",
                line_of_several="issue_assigned_in_sentry",
            )
        ]
        for row in tx.all(sql, sentrys)
    }
