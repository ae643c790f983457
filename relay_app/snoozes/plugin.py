"""Snoozes, as a capability: Ignore's timed and counted choices kept (its table), and brought back
when their time or count comes, on the watcher's rounds, which it joins (core/rounds.py);
it provides the core's SNOOZING (cards/ignore_choices.py), which the presses ask for: the
choices are the core card's verbs."""

from __future__ import annotations

from ..cards.ignore_choices import SNOOZING
from ..cards.in_step import CardsInStep
from ..core.rounds import ISSUE_PLACES, ROUNDS
from ..core.trackers import ISSUE_ACTIONS
from ..operating.capability import Capability, Core, Running
from .counters import SNOOZES
from .snoozing import BringBack, Snoozing
from .store import SnoozeStore


def _start(core: Core) -> Running:
    """With a source that keeps no snoozes itself (GlitchTip), its token, a spool and the
    watcher's rounds: the snoozes kept, asked about each round, and brought back."""
    spool, clock = core.spool, core.clock
    rounds, places = core.services.find(ROUNDS), core.services.find(ISSUE_PLACES)
    actions = core.services.find(ISSUE_ACTIONS)
    # Each source the relay keeps Ignore's choices for, with a token, and its issues' home.
    kept_for = [(source, home) for source, home in core.homes.homes if not source.keeps_snoozes]
    if not kept_for or spool is None or rounds is None or places is None or actions is None:
        return Running()
    # Its cards follow at once when an issue comes back, not at the next round.
    in_step = [
        (source, core.cards_in_step(spool, origin=home.origin, source=source.shown))
        for source, home in kept_for
    ]

    def reopened(issue_id: str) -> None:
        following: CardsInStep | None = next(
            (cards for source, cards in in_step if source.holds(issue_id)), None
        )
        if following is not None:
            following.follow({issue_id: "unresolved"}, asked_at=clock(), settle=0)

    snoozing = Snoozing(
        spool.of(SnoozeStore),
        places,
        BringBack(actions, core.outbox, reopened=reopened, zone_of=core.zone_of),
        events=core.settings.watching.snooze_events,
        metrics=core.metrics,
        clock=clock,
    )
    core.services.provide(SNOOZING, snoozing)
    rounds.join(snoozing)
    return Running()


CAPABILITY = Capability("snoozes", counters=(SNOOZES,), tables=("snoozes",), start=_start)
