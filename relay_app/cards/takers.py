"""Who has an issue in a chat (On it), as the core names it for the capabilities that ask: the
mark a take puts on each card's row of the issue it stands on (`TAKEN`, read with the card:
marks.py), what the others read of the takes in their own units of work (`Takes`, lent by the
capability that keeps them: takes/), and On it said otherwise than by its button (`OnIt`: a
reply under the alert). None of them imports the capability that keeps the takes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.routing import Destination
from ..core.services import Key
from ..spool.store import Tx
from .card import IssueButton, SentMessage
from .marks import Mark

# The name of a take's mark on a card's row: by whom (as shown), since when, and the taker's
# Telegram user id as its `ref` (None for a take kept without one). It quiets the row's calls.
TAKEN = "taken"


def taken(button: IssueButton) -> Mark | None:
    """The take on this row of a card, if someone has its issue there."""
    return button.marked(TAKEN)


@dataclass(frozen=True)
class Take:
    """A take of an issue in a chat: by whom (`by`, as shown; `by_id`, Telegram's user id, None
    for a take kept without one), and since when (`at`, the store's time, as kept: a take is
    named by its taker and this moment)."""

    chat: str
    issue_id: str
    by: str
    by_id: int | None
    at: Any


class Takes(Protocol):
    """What the others may read of the takes, and end, each in the caller's unit of work;
    each raises SpoolError."""

    def of_row(self, tx: Tx, key: str) -> Take | None:
        """The take standing on this card's row, if any."""

    def latest(self, tx: Tx, issue_ids: Sequence[str]) -> dict[str, str]:
        """Who has each of these issues now, on its latest take in any chat: as shown."""

    def since(self, tx: Tx, place: Destination | None, since: float) -> list[Take]:
        """Every take since then (kept after a Let go) of an issue shown in the place (None:
        anywhere), oldest first."""

    def held_label(self, tx: Tx, take: Take) -> str | None:
        """The issue's label while this take stands and the issue is open in its chat."""

    def end(self, tx: Tx, take: Take) -> list[int]:
        """This take ended on every card of its chat that shows it: their message ids."""


TAKES: Key[Takes] = Key("takes")


class OnIt(Protocol):
    """On it said by a reply under the alert (the chat's replies), as the button says it."""

    def take(
        self, message: SentMessage, button: IssueButton, by: str, by_id: int | None
    ) -> list[int]:
        """The person `by_id` (shown as `by`) has the button's issue: the messages of the chat
        that now show it (none when someone has it already, or it is closed). Raises
        SpoolError."""


ON_IT: Key[OnIt] = Key("on it")
