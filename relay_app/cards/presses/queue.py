"""The fourth stage of a press: its change claimed on the card's row before any tracker is
asked. Of presses at the same moment (Resolve and Ignore, or the same button by two people),
one acts: each claims the change compared and set on the state it was pressed on, and one
that finds it changed since does nothing. Opening Ignore's choices or putting them away is
claimed the same way."""

from __future__ import annotations

from ...core.errors import SpoolError
from ...core.trackers import IssueStatus
from ..card import IssueButton
from ..sent import StatusClaim
from ..team import Team
from .receive import Press
from .told import Told


class Claims:
    def __init__(self, team: Team, told: Told) -> None:
        self._team = team
        self._told = told

    def claim(
        self,
        press: Press,
        verb: str,
        key: str,
        button: IssueButton,
        status: IssueStatus,
        snooze: dict[str, float] | None = None,
    ) -> StatusClaim | None:
        """The press's claim on the change; None (answered) when another press made a change
        since the button was read, or the claim cannot be recorded."""
        store = self._team.store
        try:
            claim = store.claim(
                key, button.status, status, by=press.by.handle, at=self._team.clock(), snooze=snooze
            )
        except SpoolError as exc:
            self._told.unavailable(press, "could not be recorded", exc)
            return None
        if claim is None:
            self._told.out_of_date(press, verb, button, "came as another changed it")
        return claim

    def choose(self, press: Press, verb: str, key: str, button: IssueButton) -> bool:
        """Ignore's choices shown in place of the issue's row (`snooze`), or put away (`back`);
        False (answered) when another press changed the row first or the spool failed."""
        try:
            changed = self._team.store.choose(key, choosing=verb == "snooze", at=self._team.clock())
        except SpoolError as exc:
            self._told.unavailable(press, "could not be recorded", exc)
            return False
        if not changed:
            self._told.out_of_date(press, verb, button, "came as another changed it")
        return changed
