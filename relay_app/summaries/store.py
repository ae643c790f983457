"""Daily summaries (summaries/daily.py) kept in the spool: for each place that gets one
(a chat, or a topic of it), when the next is due, when the last was posted, and the alerts
delivered there since (and of those, how many went in digests). A summary is posted once a day
per place whichever process of the fleet finds it due: its job is queued in the very
transaction that moves the place's next time on, and only while it is still due. An on-call
handoff (oncall/handoffs.py) is kept the same way, as a place of its own (`of`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.routing import Destination
from ..spool import job_rows
from ..spool.model import Home, NewJob, Precedence
from ..spool.store import Store, Tx


@dataclass(frozen=True)
class Since:
    """What a place's summary covers: since when, and the alerts delivered there meanwhile."""

    last_at: float  # the caller's clock
    delivered: int
    digested: int
    silenced: int


# How much later than the routes file says a kept time may be before it is moved to the file's:
# more than the clocks' drift between the relays of a fleet, less than any period a file sets.
SOONER_SLACK = 60.0


def place_key(destination: Destination, of: str = "") -> str:
    """The place's row: `of` names what else than the daily summary is posted there on time."""
    return f"{of}{destination.chat_key}:{destination.thread or ''}"


class SummaryStore:
    def __init__(self, store: Store, *, home: Home = "spool") -> None:
        self._store = store
        self._home = home

    def due(
        self, destination: Destination, *, next_at: float, now: float, of: str = ""
    ) -> Since | None:
        """What the place's summary covers when it is due now; None when it is not. A place
        seen for the first time is due first at `next_at`, covering from now."""
        place = place_key(destination, of)
        found = self._store.read(lambda tx: _read(tx, place), now=now)
        if found is None:
            self._store.write(
                lambda tx: tx.execute(
                    "INSERT INTO summaries (place, next_at, last_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (place) DO NOTHING",
                    (place, tx.at.to_db(next_at), tx.at.db),
                ),
                now=now,
            )
            return None
        kept_next_at, since = found
        if kept_next_at > next_at + SOONER_SLACK:
            # The routes file now says sooner (a time or a rotation changed): its time, not
            # the old one, lest a handoff or a day go unsaid.
            self._store.write(
                lambda tx: tx.execute(
                    "UPDATE summaries SET next_at = ? WHERE place = ? AND next_at > ?",
                    (tx.at.to_db(next_at), place, tx.at.to_db(next_at + SOONER_SLACK)),
                ),
                now=now,
            )
            return None
        return since if kept_next_at <= now else None

    def since(self, destination: Destination, *, now: float) -> Since | None:
        """What the place's next summary covers so far; None for a place that has had none."""
        found = self._store.read(lambda tx: _read(tx, place_key(destination)), now=now)
        return found[1] if found is not None else None

    def post(
        self,
        destination: Destination,
        data: Mapping[str, Any],
        *,
        next_at: float,
        now: float,
        of: str = "",
        due_in: float = 0.0,
    ) -> bool:
        """Queue the place's summary (an alert job holding `data`, due `due_in` seconds from
        now), and move its next time to `next_at`, while it is still due; False when another
        process posted it first."""
        place = place_key(destination, of)

        def post(tx: Tx) -> bool:
            moved = tx.one(
                "UPDATE summaries SET next_at = ?, last_at = ?, delivered = 0, digested = 0,"
                " silenced = 0 WHERE place = ? AND next_at <= ? RETURNING place",
                (tx.at.to_db(next_at), tx.at.db, place, tx.at.db),
            )
            if moved is None:
                return False
            _queue(tx, destination, data, self._home, due_in)
            return True

        return self._store.write(post, now=now)

    def queue_now(self, destination: Destination, data: Mapping[str, Any], *, now: float) -> None:
        """Queue a summary made on request (`relay-app summary --send`): the day's stays due."""

        self._store.write(lambda tx: _queue(tx, destination, data, self._home), now=now)

    def counted(
        self, destination: Destination, *, delivered: int = 0, silenced: int = 0, now: float
    ) -> None:
        """Alerts of the place: `delivered` in one message (a digest when more than one), or
        `silenced` (held back by a silence)."""
        self._store.write(
            lambda tx: counted_in(tx, destination, delivered=delivered, silenced=silenced),
            now=now,
        )


def counted_in(tx: Tx, destination: Destination, *, delivered: int = 0, silenced: int = 0) -> None:
    """`SummaryStore.counted`, in a unit of work under way (a delivery's)."""
    digested = delivered if delivered > 1 else 0
    tx.execute(
        "UPDATE summaries SET delivered = delivered + ?, digested = digested + ?,"
        " silenced = silenced + ? WHERE place = ?",
        (delivered, digested, silenced, place_key(destination)),
    )


def _queue(
    tx: Tx, destination: Destination, data: Mapping[str, Any], home: Home, due_in: float = 0.0
) -> None:
    """A summary or a handoff, in its place's lane: after the alerts waiting there."""
    lane, precedence = destination.lane, Precedence.CALL
    job = NewJob("alert", data, destination, precedence, lane=lane, due_in=due_in)
    job_rows.insert(tx, job, home=home)


def _read(tx: Tx, place: str) -> tuple[float, Since] | None:
    """When the place's next post is due (the caller's clock), and what a summary covers; None
    for a new place."""
    row = tx.one(
        "SELECT next_at, last_at, delivered, digested, silenced FROM summaries WHERE place = ?",
        (place,),
    )
    if row is None:
        return None
    counts = (int(row["delivered"]), int(row["digested"]), int(row["silenced"]))
    since = Since(tx.at.to_local(float(row["last_at"])), *counts)
    return tx.at.to_local(float(row["next_at"])), since
