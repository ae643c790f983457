"""On call, as a capability: escalation steps and the calls they make (it provides the core's
`cards.verbs.CALLS`, which presses, replies and the watcher stop and resume), takers called
again, handoffs, direct calls, covers, `/oncall`, `/cover` and `/start`, `relay-app oncall`,
and the tables that keep them. Who is on duty, the covers applied, it provides as the core's
`routes.rotation.ROSTER`, which the renderer asks for to name the people a call mentions."""

from __future__ import annotations

import logging
from collections.abc import Callable
from zoneinfo import ZoneInfo

from ..cards.calls_made import CALLS_MADE
from ..cards.takers import TAKES
from ..cards.verbs import CALLS
from ..core.services import Lent
from ..delivery.posted_once import POSTED_ONCE
from ..message.open_issues import STILL_OPEN
from ..operating.capability import Capability, Core, Running
from ..routes.rotation import ROSTER, Roster
from ..telegram.people import PEOPLE
from . import direct, handoff_text
from .calendar_feed import CalendarFeed
from .calls_made import CallsMadeStore
from .cli import add_oncall_command, roster_with_covers
from .command import Covering, cover_command, oncall_command, start_command
from .counters import ESCALATION_STEPS, HANDOFFS
from .covers import CoverStore, KeptCovers
from .forgetting import Forgetting
from .handoffs import Handoffs
from .people import KnownPeople, PeopleStore, PrivateChats
from .recalls import RecallStore
from .steps import Escalation
from .steps_store import EscalationStore

log = logging.getLogger(__name__)


def _start(core: Core) -> Running:
    """The escalation (provided as CALLS), the handoffs of the rotations that announce, and
    the forgetting of old covers and private calls: run by the fleet's leader's upkeep."""
    settings = core.settings
    covers = KeptCovers(core.shared.of(CoverStore), clock=core.clock)
    roster = Roster(settings.routes.on_call, ZoneInfo(settings.timezone), covers)
    core.services.provide(ROSTER, roster)
    escalation = Escalation(
        # A mute (a capability's mark that quiets an issue) counts as an act on it.
        core.shared.of(lambda store: EscalationStore(store, core.marks)),
        # Who has each issue: On it's takes, lent.
        recalls=core.shared.of(
            lambda store: RecallStore(store, core.marks, core.lending.of(TAKES, core.shared))
        ),
        roster=roster,
        metrics=core.metrics,
        clock=core.clock,
    )
    core.services.provide(CALLS, escalation)
    upkeep: list[Callable[[], object]] = [escalation.fire_due]
    handoffs = _handoffs(core, roster)
    if handoffs is not None:
        upkeep.append(handoffs.upkeep)
    forgetting = Forgetting(
        core.shared.of(CoverStore), core.shared.of(PeopleStore), clock=core.clock
    )
    upkeep.append(forgetting.upkeep)
    covering = Covering(roster, core.shared.of(CoverStore), covers.changed)
    commands = (
        oncall_command(roster, clock=core.clock),
        cover_command(covering, clock=core.clock),
        start_command(core.shared.of(PeopleStore), clock=core.clock),
    )
    people = core.shared.of(PeopleStore)
    core.services.provide(PEOPLE, KnownPeople(people, clock=core.clock))
    secret = settings.calendar_secret
    feeds = (
        (lambda: CalendarFeed(secret, lambda: roster, clock=core.clock),)
        if secret is not None and roster
        else ()
    )
    return Running(
        commands=commands,
        # A person who blocked the bot in their private chat is called there no more.
        updates={"my_chat_member": PrivateChats(people, clock=core.clock)},
        upkeep=upkeep,
        follow_ups=(escalation.follow_up,),
        feeds=feeds,
    )


def _handoffs(core: Core, roster: Roster) -> Handoffs | None:
    """With a spool and a rotation that says `announce`, named by a route: its handoffs,
    posted once for the fleet where the summaries keep such posts (they lend them)."""
    settings, spool = core.settings, core.spool
    places = settings.routes.handoffs(settings.default_destination)
    if spool is None or not places:
        return None
    posts = core.lending.of(POSTED_ONCE, spool)
    if posts is None:
        log.error("rotations announce their handoffs, but nothing keeps posts made once: none said")
        return None
    return Handoffs(
        places,
        posts,
        roster=roster,
        reports=core.lending.of(STILL_OPEN, spool),
        posted=core.metrics.of(HANDOFFS).inc,
        clock=core.clock,
    )


CAPABILITY = Capability(
    "oncall",
    counters=(ESCALATION_STEPS, HANDOFFS),
    shapes=(handoff_text.SHAPE, direct.SHAPE),
    cli=(add_oncall_command,),
    roster=roster_with_covers,
    tables=("escalations", "recalls", "covers", "people", "direct_calls"),
    lends=(Lent(CALLS_MADE, CallsMadeStore),),
    start=_start,
)
