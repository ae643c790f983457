"""Marks: what a capability says of an issue in a chat, on each of the issue's cards there,
kept in the capability's own tables and read, through what it declares (`Capability.marks`),
where the core reads a card. A mark is a line under the card (in the capability's words), by
whom, since and until when, and may hold the issue's calls meanwhile. Mute is one: an issue
muted in a chat is marked on its every card there by the silence that holds it
(silences/marks.py); Sentry's assignment is another (sentry/assignments.py). The card's record
keeps nothing of either.

Some marks are kept by the card's row, not by the issue (`RowMarks`): On it is one (takes/),
since an issue's cards in one chat may stand apart (a card sent after its issue was taken and
resolved offers On it again, while the older ones say who had it). Such a capability is told
when a card's rows are kept (to carry its state on to them) and when they are forgotten.

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


@dataclass(frozen=True)
class Shown:
    """A card's row: its key, and the issue it shows."""

    key: str
    issue_id: str


def _nothing_carried(tx: Tx, chat: str, rows: Sequence[Shown]) -> bool:
    return False


def _nothing_kept(tx: Tx, keys: Sequence[str], before: float) -> None:
    return None


@dataclass(frozen=True)
class RowMarks:
    """A capability's marks kept by a card's row (its key), each in its unit of work; each
    raises SpoolError.
    - `read`: the marks on these rows, as they hold now (a row without any left out);
    - `carried`: a card's rows just kept in the chat: its marks carried on to them from the
      issue's other cards there (On it, taken on an earlier card): whether any was, which the
      card's edit is to show;
    - `forget`: these rows are forgotten with their messages, sent before `before` (the
      store's time): their marks with them, and what the capability keeps no longer."""

    read: Callable[[Tx, Sequence[str]], Mapping[str, Sequence[Mark]]]
    carried: Callable[[Tx, str, Sequence[Shown]], bool] = _nothing_carried
    forget: Callable[[Tx, Sequence[str], float], None] = _nothing_kept


class Marks:
    """The marks of the capabilities that are on, read together."""

    def __init__(self, readers: Sequence[MarkReader] = (), rows: Sequence[RowMarks] = ()) -> None:
        self._readers = tuple(readers)
        self._rows = tuple(rows)

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
        """Which of these issues a mark of the issue keeps from being called about in the chat
        now (a mute; a row's mark, a take, is asked of its row: `quiet_rows`)."""
        return {
            issue_id
            for issue_id, marks in self.of(tx, chat, issue_ids).items()
            if any(mark.quiets for mark in marks)
        }

    def of_rows(self, tx: Tx, chat: str, rows: Sequence[Shown]) -> dict[str, tuple[Mark, ...]]:
        """Each of these rows' marks in the chat, its issue's and its own, by the row's key (a
        row without any left out)."""
        by_issue = self.of(tx, chat, [row.issue_id for row in rows])
        found = {row.key: by_issue[row.issue_id] for row in rows if row.issue_id in by_issue}
        keys = list(dict.fromkeys(row.key for row in rows))
        for each in self._rows if keys else ():
            for key, marks in each.read(tx, keys).items():
                if key in keys and marks:
                    found[key] = (*found.get(key, ()), *marks)
        return found

    def quiet_rows(self, tx: Tx, chat: str, rows: Sequence[Shown]) -> set[str]:
        """Which of these rows (their keys) a mark keeps from being called about now."""
        return {
            key
            for key, marks in self.of_rows(tx, chat, rows).items()
            if any(mark.quiets for mark in marks)
        }

    def carried(self, tx: Tx, chat: str, rows: Sequence[Shown]) -> bool:
        """A card's rows just kept: whether a capability carried a mark on to them."""
        carried = False
        for each in self._rows if rows else ():
            carried = each.carried(tx, chat, rows) or carried
        return carried

    def forget(self, tx: Tx, keys: Sequence[str], before: float) -> None:
        """These rows are forgotten with their messages: the capabilities' marks of them too."""
        for each in self._rows:
            each.forget(tx, keys, before)
