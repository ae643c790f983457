"""Sentry's deliveries already taken in, by their `Request-ID` header, kept in the spool for
KEPT seconds: the same delivery again (a retry from Sentry, or a replay) is answered and does
nothing. A delivery is claimed before its alert is queued, and given back when the alert could
not be, so that the next try of it is taken."""

from __future__ import annotations

from ..spool.store import Store, Tx

# Sentry sends a delivery again within minutes if at all; a day covers any replay by hand.
KEPT = 86400.0
# What a Request-ID may be (Sentry's are 32 hex characters): longer ones are not kept.
MAX_ID = 128


class DeliveryStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def claim(self, request_id: str, *, now: float) -> bool:
        """Whether this delivery is new: then it is kept as taken in, until `release`."""

        def claim(tx: Tx) -> bool:
            tx.execute("DELETE FROM sentry_deliveries WHERE received_at < ?", (now - KEPT,))
            inserted = tx.execute(
                "INSERT INTO sentry_deliveries (request_id, received_at) VALUES (?, ?)"
                " ON CONFLICT (request_id) DO NOTHING",
                (request_id, now),
            )
            return bool(inserted.rowcount)

        return self._store.write(claim, now=now)

    def release(self, request_id: str, *, now: float) -> None:
        """Its alert could not be queued: the next delivery of it is taken in."""
        self._store.write(
            lambda tx: tx.execute(
                "DELETE FROM sentry_deliveries WHERE request_id = ?", (request_id,)
            ),
            now=now,
        )
