"""Marks: what a capability says of an issue in a chat, on each of the issue's cards there,
kept in the capability's own tables and read, through what it declares (`Capability.marks`),
where the core reads a card. A mark is a line under the card (in the capability's words), by
whom, since and until when, and may hold the issue's calls meanwhile. Mute is one: an issue
muted in a chat is marked on its every card there by the silence that holds it
(silences/marks.py); Sentry's assignment is another (sentry/assignments.py). The card's record
keeps nothing of either.

The card's rows and their marks are read in one unit of work, so a card shows what holds when
it is read: a mark that ran out is gone from it at once, whoever ends it later."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..spool.store import Tx


@dataclass(frozen=True)
class Mark:
    """One capability's mark of an issue in a chat. `name` tells its capability's buttons
    which the row shows (Mute's 'muted': Unmute); `ref` is the capability's own id of it (a
    silence's); `by` who made it (a person, or whom its source names); `at` since when and
    `until` till when (None: until its capability says otherwise), on the caller's clock;
    `line` and `line_of_several` are the names of its words under a card of one issue, and of
    several (naming the issue's `{label}`), each given `{user}`, `{time}` (`at`) and `{until}`;
    `quiets`: nobody is called about the issue meanwhile."""

    name: str
    by: str
    at: float
    line: str
    line_of_several: str
    until: float | None = None
    ref: int | None = None
    quiets: bool = False


# A capability's marks of these issues in this chat, as they hold now: each issue's (those
# without any left out). Runs in the reader's unit of work; raises SpoolError.
MarkReader = Callable[[Tx, str, Sequence[str]], Mapping[str, Sequence[Mark]]]


class Marks:
    """The marks of the capabilities that are on, read together."""

    def __init__(self, readers: Sequence[MarkReader] = ()) -> None:
        self._readers = tuple(readers)

    def of(self, tx: Tx, chat: str, issue_ids: Sequence[str]) -> dict[str, tuple[Mark, ...]]:
        """Each of these issues' marks in the chat (an issue without any left out)."""
        found: dict[str, tuple[Mark, ...]] = {}
        wanted = list(dict.fromkeys(issue_ids))
        if not wanted:
            return found
        for read in self._readers:
            for issue_id, marks in read(tx, chat, wanted).items():
                if issue_id in wanted:
                    found[issue_id] = (*found.get(issue_id, ()), *marks)
        return found

    def quiet(self, tx: Tx, chat: str, issue_ids: Sequence[str]) -> set[str]:
        """Which of these issues a mark keeps from being called about in the chat now."""
        return {
            issue_id
            for issue_id, marks in self.of(tx, chat, issue_ids).items()
            if any(mark.quiets for mark in marks)
        }
