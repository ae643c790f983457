"""Snoozes, as a capability: Ignore's timed and counted choices kept (its table), and brought back
when their time or count comes, on the watcher's rounds, which it joins (core/rounds.py);
it provides the core's SNOOZING (cards/ignore_choices.py), which the presses ask for: the
choices are the core card's verbs."""

from __future__ import annotations

from ..cards.ignore_choices import SNOOZING
from ..core.rounds import ISSUE_PLACES, ROUNDS
from ..glitchtip.api import GlitchTipApi
from ..glitchtip.source import GLITCHTIP
from ..operating.capability import Capability, Core, Running
from .counters import SNOOZES
from .snoozing import BringBack, Snoozing
from .store import SnoozeStore


def _start(core: Core) -> Running:
    """With GLITCHTIP_API_TOKEN, a spool and the watcher's rounds: the snoozes kept, asked
    about each round, and brought back."""
    settings, spool, clock = core.settings, core.spool, core.clock
    token, url, links = (
        settings.glitchtip_api_token,
        settings.glitchtip_url,
        settings.glitchtip_links,
    )
    rounds, places = core.services.find(ROUNDS), core.services.find(ISSUE_PLACES)
    if token is None or url is None or links is None or spool is None:
        return Running()
    if rounds is None or places is None:
        return Running()
    # Its cards follow at once when an issue comes back, not at the next round.
    in_step = core.cards_in_step(spool, origin=links, source=GLITCHTIP.shown)
    snoozing = Snoozing(
        spool.of(SnoozeStore),
        places,
        BringBack(
            GlitchTipApi(token, url, timeout=settings.send_timeout),
            core.outbox,
            reopened=lambda issue: in_step.follow(
                {issue: "unresolved"}, asked_at=clock(), settle=0
            ),
            zone_of=core.zone_of,
        ),
        events=settings.watching.snooze_events,
        metrics=core.metrics,
        clock=clock,
    )
    core.services.provide(SNOOZING, snoozing)
    rounds.join(snoozing)
    return Running()


CAPABILITY = Capability("snoozes", counters=(SNOOZES,), tables=("snoozes",), start=_start)
