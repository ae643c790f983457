"""On-call handoffs said in the chat (docs/oncall.md): a rotation with `announce = true` posts,
at each handoff, who is on call now, until when and who comes next, where the routes that name
it (`oncall:NAME`) send their alerts; the person now on call is called by name.

The dispatcher's upkeep looks each second, a read per rotation and place; a handoff is posted
once for the whole fleet, as a daily summary is (delivery/posted_once.py: the job is queued in
the transaction that moves the next handoff on). A place seen for the first time waits for the next
handoff: a relay that starts says nothing. After a relay was down through handoffs, one message
says who is on call now. The job holds the handoff's data; its text is made when it is sent
(oncall/handoff_text.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ..core.errors import SpoolError
from ..core.routing import Destination
from ..delivery.posted_once import PostedOnce
from ..message.open_issues import StillOpen
from ..routes.rotation import Roster, Rotation

log = logging.getLogger(__name__)

# How far back a handoff looks for what is still open: as long as the cards are kept.
OPEN_SINCE = 7 * 86400.0


class Handoffs:
    def __init__(
        self,
        places: Mapping[Destination, Sequence[Rotation]],
        store: PostedOnce,
        *,
        roster: Roster,
        reports: StillOpen | None = None,
        posted: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`places`: where each rotation's handoffs are said (RouteTable.handoffs); `store`:
        the posts made once for the fleet (the summaries lend theirs); `roster`: who is on
        duty, covers applied, and the zone of a rotation that names none; `reports`: what is
        still open in a place (None: not said)."""
        self._places = {place: tuple(rotations) for place, rotations in places.items()}
        self._store = store
        self._roster = roster
        self._reports = reports
        self._zone = roster.zone
        self._posted = posted
        self._clock = clock

    def upkeep(self) -> int:
        """Post the handoffs that have come (the dispatcher's upkeep); how many."""
        posted = 0
        now = self._clock()
        for destination, rotations in self._places.items():
            for rotation in rotations:
                try:
                    posted += self._post_if_due(destination, rotation, now)
                except SpoolError as exc:
                    log.debug(
                        "the handoff of rotation %s in %s could not be looked at now: %s",
                        rotation.name,
                        destination,
                        exc,
                    )
        return posted

    def _still_open(self, destination: Destination, now: float) -> dict[str, Any]:
        """What the person taking over finds open in the place: the issues shown there in the
        last week not resolved or ignored, each with who has it (the first ten)."""
        if self._reports is None:
            return {}
        count, issues = self._reports.still_open(destination, since=now - OPEN_SINCE, now=now)
        return {"open_count": count, "open": [asdict(issue) for issue in issues]}

    def _post_if_due(self, destination: Destination, rotation: Rotation, now: float) -> bool:
        # Handoffs come at the rotation's turns; who takes over, and until when, is the
        # roster's: a cover shows, with whose turn it takes.
        next_at = rotation.on_duty(now, self._zone).until.timestamp()
        of = f"handoff:{rotation.name}@"
        if self._store.due(destination, next_at=next_at, now=now, of=of) is None:
            return False
        duty = self._roster.on_duty(rotation, now)
        handoff = {
            "rotation": rotation.name,
            "person": duty.person,
            "next": duty.next_person,
            "until": duty.until.timestamp(),
            "zone": rotation.zone(self._zone).key,
            "covering": duty.covering,
            **self._still_open(destination, now),
        }
        if not self._store.post(destination, {"handoff": handoff}, next_at=next_at, now=now, of=of):
            return False  # another process of the fleet posted it
        log.info(
            "on-call handoff of rotation %s posted to %s: %s until %s",
            rotation.name,
            destination,
            duty.person,
            duty.until.isoformat(timespec="minutes"),
        )
        self._posted()
        return True
