"""The fifth stage of a press: the issue's tracker asked to change its status (for one of
Ignore's choices, with the condition where the source keeps it: ignoring.py). A press never
waits behind a tracker that hangs: whatever the tracker does, it is answered within
`answer_within`; a call not answered by then is answered "asked GlitchTip, the card will say",
and its end is shown on the card, or, when the tracker refused or never answered, said under it
(the call keeps its own deadline, RELAY_SEND_TIMEOUT)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ...core.errors import TrackerError
from ...core.trackers import IssueStatus
from ...words.catalogue import of_source
from ..card import IssueButton
from ..team import Team
from .receive import Press
from .told import Told


@dataclass(frozen=True)
class Changed:
    """The tracker made the change: its answer (the issue as it is now), and how long it took."""

    answer: Mapping[str, object]
    seconds: float


class TrackerCalls:
    def __init__(self, team: Team, told: Told, answer_within: float) -> None:
        self._team = team
        self._told = told
        self._answer_within = answer_within

    def set_status(
        self,
        press: Press,
        button: IssueButton,
        status: IssueStatus,
        details: dict[str, int] | None,
    ) -> Changed | TrackerError:
        """The tracker's answer, or why it did not make the change."""
        started = time.monotonic()
        early = threading.Timer(self._answer_within, self._asking, (press, button))
        early.daemon = True
        early.start()
        try:
            answer = self._team.trackers.set_status(
                button.issue_id, status, details, org=button.org
            )
        except TrackerError as exc:
            return exc
        finally:
            early.cancel()  # what went wrong is the answer, when it is still to be given
        return Changed(answer, time.monotonic() - started)

    def _asking(self, press: Press, button: IssueButton) -> None:
        """The press answered while its tracker has not: the card will say how it ended."""
        words = of_source(self._team.words, button.issue_id)
        self._told.answer(press, words.notice_asking.format(label=button.label), alert=False)
