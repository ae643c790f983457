"""A post made once for the whole fleet, at its time, in a place: due when its time has come,
and queued by the one process whose unit of work moves its next time on (the others find it
moved). The summaries keep these times for their daily summaries and lend them (POSTED_ONCE:
summaries/store.py); on call's handoffs post that way too, each under a name of its own (`of`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..core.routing import Destination
from ..core.services import Key


class PostedOnce(Protocol):
    def due(
        self, destination: Destination, *, next_at: float, now: float, of: str
    ) -> object | None:
        """Something when the post named `of` is due in `destination` now; None when it is
        not. A place seen for the first time is due first at `next_at`. Raises SpoolError."""
        ...

    def post(
        self,
        destination: Destination,
        data: Mapping[str, Any],
        *,
        next_at: float,
        now: float,
        of: str,
    ) -> bool:
        """Queue the post (a job holding `data`) and move its next time to `next_at`, while it
        is still due; False when another process posted it first. Raises SpoolError."""
        ...


POSTED_ONCE: Key[PostedOnce] = Key("posted once")
