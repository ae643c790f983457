"""When GlitchTip last reached the relay: the time of the last accepted webhook, shared by every
worker and every relay on the spool, kept in the store's clock and read in this host's
(`relay-app check`, /readyz and the `relay_webhook_last_accepted_timestamp_seconds` gauge)."""

from __future__ import annotations

from .store import Store, Tx


class SpoolArrivals:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(self, now: float | None = None) -> None:
        """A webhook was accepted `now` (this host's clock; unset: time.time()). Raises
        SpoolError."""

        def record(tx: Tx) -> None:
            # The latest write wins: a clock that stepped back is corrected by the next one.
            tx.execute(
                "INSERT INTO webhook_arrivals (id, last_at) VALUES (1, ?)"
                " ON CONFLICT (id) DO UPDATE SET last_at = excluded.last_at",
                (tx.at.db,),
            )

        self._store.write(record, now=now)

    def last(self, now: float | None = None) -> float | None:
        """When a webhook was last accepted (Unix seconds, this host's clock as it reads `now`),
        or None: never. Raises SpoolError."""

        def last(tx: Tx) -> float | None:
            row = tx.one("SELECT last_at FROM webhook_arrivals")
            return None if row is None else tx.at.to_local(float(row["last_at"]))

        return self._store.read(last, now=now)
