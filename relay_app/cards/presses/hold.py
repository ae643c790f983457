"""The third stage of a press: whether it may act. With TELEGRAM_ACTION_USER_IDS set, anyone
else is refused and no tracker is called. The verb must be one the row shows now (a Resolve left
on a stale keyboard after the issue was resolved does nothing), and one of Ignore's timed
choices needs something that brings the issue back (its source itself, or the watcher's
snoozes: ignoring.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..card import STATUS_FOR, Button, IssueButton, core_verb, shows_theirs, verbs_for
from ..ignore_choices import SnoozeFor
from ..team import Team
from ..verbs import Press as TheirPress
from .ignoring import NOT_WATCHED, IgnoreChoices
from .receive import Press
from .route import Found
from .told import Told, log


@dataclass(frozen=True)
class Allowed:
    """A press that may act, and for one of Ignore's choices, what it ignores the issue until
    and where the watcher finds it (None for any other verb)."""

    snooze: SnoozeFor | None = None


class Holding:
    def __init__(
        self,
        team: Team,
        told: Told,
        buttons: Sequence[Button],
        theirs: Mapping[str, TheirPress],
        ignoring: IgnoreChoices,
    ) -> None:
        """`buttons`, `theirs`: the capabilities' buttons with an owner, and their presses."""
        self._team = team
        self._told = told
        self._buttons = tuple(buttons)
        self._theirs = theirs
        self._ignoring = ignoring

    def allowed(self, press: Press, found: Found) -> Allowed | None:
        """Whether the press may act; None (answered) when it may not."""
        verb, button = found.verb, found.button
        if not self._team.may_act(press.by):
            log.warning(
                "a press by %s (user id %s) to %s %s was refused: not in TELEGRAM_ACTION_USER_IDS",
                press.by.handle,
                press.by.id,
                verb,
                button.label,
            )
            self._told.count("refused")
            self._told.answer(press, self._team.words.press_not_allowed, alert=True)
            return None
        if not self._offered(verb, button):
            why = f"came from an out-of-date button (the issue is {button.status or 'unresolved'})"
            self._told.out_of_date(press, verb, button, why)
            return None
        core = core_verb(verb)
        if core is None or core not in STATUS_FOR:
            return Allowed()
        snooze = self._ignoring.snooze_for(core, button)
        if snooze == NOT_WATCHED:
            self._not_watched(press, verb, button)
            return None
        return Allowed(snooze)

    def _offered(self, verb: str, button: IssueButton) -> bool:
        """Whether the message still shows `verb`, and this relay can do it."""
        if verb in self._theirs:
            return any(each.verb == verb for each in shows_theirs(button, self._buttons))
        # An Ignore on a card from before its choices ignores for ever, as it said.
        if verb not in verbs_for(button) and not (verb == "ignore" and _open(button)):
            return False
        return self._ignoring.offered(verb, button)

    def _not_watched(self, press: Press, verb: str, button: IssueButton) -> None:
        log.info(
            "a press by %s to %s %s: the relay does not watch the issue, so nothing could "
            "bring it back; nothing done",
            press.by.handle,
            verb,
            button.label,
        )
        self._told.count("stale")
        words = self._team.words
        self._told.answer(press, words.notice_cannot_snooze.format(label=button.label), alert=True)


def _open(button: IssueButton) -> bool:
    return button.status in (None, "unresolved")
