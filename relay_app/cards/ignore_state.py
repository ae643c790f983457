"""Ignore's state on a card's row of an issue, in a table of its own keyed by the row
(`issue_ignores`): whether Ignore's choices stand in place of the row (`choosing`), and the
condition an ignore lasts until (`snooze`, JSON as the card shows it). A row with neither has
no entry. It changes with the row's status, in the same unit of work: a claim, its mirror on
the issue's other cards, its undoing, a copy of a card's row, the source's own state."""

from __future__ import annotations

from collections.abc import Sequence

from ..spool.store import Tx, placeholders


def settle(tx: Tx, keys: Sequence[str], snooze: str | None) -> None:
    """These rows show no choices, and `snooze` (None: none)."""
    if not keys:
        return
    if snooze is None:
        tx.execute(f"DELETE FROM issue_ignores WHERE key IN ({placeholders(keys)})", list(keys))  # noqa: S608 (placeholders)
        return
    tx.executemany(
        "INSERT INTO issue_ignores (key, choosing, snooze) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET choosing = excluded.choosing, snooze = excluded.snooze",
        [(key, False, snooze) for key in keys],
    )


def snooze_of(tx: Tx, key: str) -> str | None:
    """The condition the row's ignore lasts until, as kept; None for none."""
    row = tx.one("SELECT snooze FROM issue_ignores WHERE key = ?", (key,))
    return str(row["snooze"]) if row is not None and row["snooze"] is not None else None


def choose(tx: Tx, key: str, *, choosing: bool) -> bool:
    """Show Ignore's choices in place of the row (or close them); False when the issue is not
    open there, or they already stand so (another press came first)."""
    # The row locked first (PostgreSQL): of presses at once, one changes it.
    row = tx.one("SELECT status FROM issue_buttons WHERE key = ? FOR UPDATE", (key,))
    if row is None or row["status"] not in (None, "unresolved"):
        return False
    found = tx.one("SELECT choosing, snooze FROM issue_ignores WHERE key = ?", (key,))
    if bool(found["choosing"] if found is not None else False) == choosing:
        return False
    if not choosing and (found is None or found["snooze"] is None):
        tx.execute("DELETE FROM issue_ignores WHERE key = ?", (key,))
        return True
    tx.execute(
        "INSERT INTO issue_ignores (key, choosing) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET choosing = excluded.choosing",
        (key, choosing),
    )
    return True
