"""Sentry's deliveries already taken in, kept in the spool for KEPT seconds by their
`Request-ID` header and by what each is about (sentry/webhook.py: an event and its rule, an
incident and its state, an issue and its change): the same delivery again is answered and does
nothing. Sentry gives each request it builds a fresh Request-ID, and a task of its that timed
out builds another (getsentry/sentry's sentry_apps/tasks/sentry_apps.py retries three times,
five minutes apart); what it is about catches that copy. A delivery is claimed before its alert
is queued, and given back when the alert could not be, so that the next try of it is taken."""

from __future__ import annotations

from collections.abc import Sequence

from ..spool.store import Store, Tx

# Sentry sends a delivery again within minutes if at all (its retries, fifteen minutes); a week
# covers a relay down for days while Sentry's queue held its deliveries, and any replay by hand.
# One stamped before it is refused (sentry/webhook.py), so a key is never needed longer.
KEPT = 7 * 86400.0
# What a Request-ID may be (Sentry's are 32 hex characters): longer ones are not kept.
MAX_ID = 128


class DeliveryStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def claim(self, keys: Sequence[str], *, now: float) -> bool:
        """Whether a delivery known by `keys` is new (none of them was taken in): then they
        are kept, until `release`."""

        def claim(tx: Tx) -> bool:
            tx.execute("DELETE FROM sentry_deliveries WHERE received_at < ?", (now - KEPT,))
            for key in keys:
                if tx.one("SELECT 1 FROM sentry_deliveries WHERE request_id = ?", (key,)):
                    return False
            tx.executemany(
                "INSERT INTO sentry_deliveries (request_id, received_at) VALUES (?, ?)"
                " ON CONFLICT (request_id) DO NOTHING",
                [(key, now) for key in keys],
            )
            return True

        return self._store.write(claim, now=now)

    def last(self, *, now: float) -> float | None:
        """When Sentry's last delivery was taken in (within KEPT), Unix seconds; None when
        none was."""
        row = self._store.read(
            lambda tx: tx.one("SELECT max(received_at) AS last FROM sentry_deliveries"), now=now
        )
        return float(row["last"]) if row is not None and row["last"] is not None else None

    def release(self, keys: Sequence[str], *, now: float) -> None:
        """Its alert could not be queued: the next delivery of it is taken in."""
        self._store.write(
            lambda tx: tx.executemany(
                "DELETE FROM sentry_deliveries WHERE request_id = ?", [(key,) for key in keys]
            ),
            now=now,
        )
