"""The webhooks accepted lately, shared by every worker and every relay on the spool, kept in
the store's clock and read in this host's: when GlitchTip last reached the relay (`relay-app
check`, /readyz and the `relay_webhook_last_accepted_timestamp_seconds` gauge), and what each
became (`relay-app glitchtip connect --test` follows its test alert into the chat)."""

from __future__ import annotations

from dataclasses import dataclass

from .store import Store, Tx

# How many are kept: the newest, whatever their age.
RECENT_WEBHOOKS = 100
# How much of each message's text is kept: enough to find a test alert's mark in it.
TEXT_KEPT = 1000


@dataclass(frozen=True)
class SeenWebhook:
    at: float  # this host's clock
    alert_id: int | None  # its row in the spool's alerts, which says what became of it
    outcome: str | None  # for one that never had a row: silenced, failed
    text: str  # the start of its message's text


def note_arrival(tx: Tx, alert_id: int | None, text: str, outcome: str | None = None) -> None:
    """Within the transaction that takes a webhook's alert in (spool/queue.py), so the record
    costs the webhook no write of its own."""
    row = tx.one(
        "INSERT INTO webhooks_seen (at, alert_id, outcome, text) VALUES (?, ?, ?, ?) RETURNING id",
        (tx.at.db, alert_id, outcome, text[:TEXT_KEPT]),
    )
    tx.execute("DELETE FROM webhooks_seen WHERE id <= ?", (int(row["id"]) - RECENT_WEBHOOKS,))


class SpoolArrivals:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(self, outcome: str, text: str, *, now: float | None = None) -> None:
        """A webhook accepted `now` (this host's clock; unset: time.time()) whose alert the
        queue did not take in (held by a silence, or kept nowhere). Raises SpoolError."""
        self._store.write(lambda tx: note_arrival(tx, None, text, outcome), now=now)

    def last(self, now: float | None = None) -> float | None:
        """When a webhook was last accepted (Unix seconds, this host's clock as it reads `now`),
        or None: never, as far as the spool keeps. Raises SpoolError."""

        def last(tx: Tx) -> float | None:
            row = tx.one("SELECT max(at) AS at FROM webhooks_seen")
            at = row["at"] if row is not None else None
            return None if at is None else tx.at.to_local(float(at))

        return self._store.read(last, now=now)

    def since(self, after: float, now: float | None = None) -> list[SeenWebhook]:
        """The webhooks accepted after `after` (this host's clock), oldest first. Raises
        SpoolError."""

        def since(tx: Tx) -> list[SeenWebhook]:
            rows = tx.all(
                "SELECT * FROM webhooks_seen WHERE at > ? ORDER BY id", (tx.at.to_db(after),)
            )
            return [
                SeenWebhook(
                    tx.at.to_local(float(row["at"])),
                    int(row["alert_id"]) if row["alert_id"] is not None else None,
                    str(row["outcome"]) if row["outcome"] is not None else None,
                    str(row["text"]),
                )
                for row in rows
            ]

        return self._store.read(since, now=now)
