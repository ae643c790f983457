"""What rides on the watcher's rounds (watch/): a capability that wants more issues asked about
with the watched ones, and told their states once read, joins the rounds through ROUNDS, which
the watcher provides (snoozes/: an issue ignored until a time or a count, brought back when it
comes). Where the watcher finds an issue it watches is ISSUE_PLACES. The watcher and those who
join it know each other only by these."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

from .services import Key
from .trackers import IssueState


class RoundFollower(Protocol):
    def wanted(self) -> Mapping[str, Sequence[str]]:
        """The issues to ask about too this round, by organisation."""
        ...

    def settle(
        self, org: str, states: Mapping[str, IssueState], *, unreadable: Collection[str] = ()
    ) -> int:
        """`org`'s issues' states as this round read them, but for those whose answer was
        `unreadable`: how many issues that brought back."""
        ...


class Rounds(Protocol):
    def join(self, follower: RoundFollower) -> None:
        """From the next round on, ask about `follower`'s issues too, and tell it the states."""
        ...


class IssuePlaces(Protocol):
    def place_of(self, issue_id: str) -> tuple[str, int | None] | None:
        """A watched issue's organisation and the forum topic its alert went to; None when it
        is not watched. Raises SpoolError."""
        ...


ROUNDS: Key[Rounds] = Key("rounds")
ISSUE_PLACES: Key[IssuePlaces] = Key("issue places")
