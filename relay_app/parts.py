"""What the wiring builds apart from `relay_app.assemble`: the services the capabilities ask for
of every source's API, what reads their issues' details for alerts, the zone each chat reads
times in, and what handles Telegram's updates (the core's presses, the poller)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from zoneinfo import ZoneInfo

from .cards.ignore_choices import SNOOZING
from .cards.presses.presses import (
    PRESS_ANSWER_BUDGET,
    PRESS_THREADS,
    PRESSES_WAITING,
    PressActions,
    Presses,
)
from .cards.verbs import CALLS
from .core.errors import SpoolError
from .core.issue_details import Hourly, IssueDetails
from .core.lookups import (
    CALL_TIMEOUT,
    DetailSource,
    EachSource,
    IssueLookups,
    Lookups,
    unscoped,
)
from .core.off_thread import OffThread
from .core.services import Services
from .core.trackers import ISSUE_ACTIONS, ISSUE_HISTORY, ISSUE_WATCH, TRACKERS, Tracker, Trackers
from .operating.capability import Core, SourceOf, Started
from .operating.config import Settings
from .routes.zones import Zones
from .spool import Spool
from .telegram.client import TelegramClient
from .telegram.people import PEOPLE
from .telegram.poller import Poller
from .telegram.updates import route_updates
from .telegram.updates_webhook import Handle


def zones_for(settings: Settings) -> Zones:
    """The zone each chat reads times in: its routes' `timezone`, else RELAY_TIMEZONE."""
    return Zones(
        settings.routes,
        default_destination=settings.default_destination,
        default=ZoneInfo(settings.timezone),
    )


def source_services(settings: Settings, sources: Sequence[SourceOf]) -> Services:
    """What the sources' tokens make, for the capabilities to ask for: what changes their
    issues (a press, a reply), reads their histories (a chart) and watches them (the watcher's
    calls keep their own, shorter deadline: it asks in batches), and each source's API (what
    reads a pasted link's issue)."""
    services = Services()

    def trackers(timeout: float) -> Trackers:
        return Trackers(
            [Tracker(each.source, each.api(settings, timeout), each.token_name) for each in sources]
        )

    found = trackers(settings.send_timeout)
    if found.any:
        services.provide(ISSUE_ACTIONS, found)
        services.provide(ISSUE_HISTORY, found)
        services.provide(ISSUE_WATCH, trackers(CALL_TIMEOUT))
        services.provide(TRACKERS, found)
    return services


def issue_lookups(
    settings: Settings, hourly: Hourly | None, sources: Sequence[DetailSource]
) -> Lookups | None:
    """Unless RELAY_DETAILS_BUDGET=off, what reads issues' details: each source's as its
    capability declares them (GlitchTip's with GLITCHTIP_API_TOKEN, Sentry's with
    SENTRY_API_TOKEN), each with its own cache, pool and pause."""
    budget = settings.details_budget
    if budget is None or not sources:
        return None
    each = [
        (
            source.owns,
            IssueLookups(
                _with_hours(source.read, hourly),
                setup=source.setup,
                budget=budget,
                count=source.count,
                health=source.health,
            ),
        )
        for source in sources
    ]
    return each[0][1] if len(each) == 1 else EachSource(each)


def _with_hours(
    read: Callable[[str], IssueDetails], hourly: Hourly | None
) -> Callable[[str], IssueDetails]:
    """An issue's details from its source's API, with its last 24 hours where the watcher has
    read them: looked up with them, within the details' budget, off the webhook's own path."""

    def with_hours(key: str) -> IssueDetails:
        details = read(key)
        if hourly is None:
            return details
        try:
            hours = hourly(unscoped(key)[1])
        except SpoolError:  # the details go without them
            return details
        return replace(details, hourly=tuple(hours)) if hours else details

    return with_hours


def acting_threads(settings: Settings) -> OffThread | None:
    """The threads presses and comments are handled on, off the thread that read their update:
    polled, the one that reads them all; posted, the request Telegram waits on before it posts
    the next (an update answered at once lets the next come). Off, no update comes."""
    if settings.telegram_updates == "off":
        return None
    return OffThread("relay-presses", threads=PRESS_THREADS, most_waiting=PRESSES_WAITING)


def updates_handled(core: Core, started: Started) -> Handle | None:
    """What handles each of Telegram's updates (telegram/updates.py): a press by the core's
    dispatcher, given every capability's buttons and presses, the others by the kind each
    capability registered; None without a tracker's token (and a spool), where no update is
    read."""
    settings, spool = core.settings, core.spool
    trackers = core.services.find(ISSUE_ACTIONS)
    if not settings.acts_on_issues or spool is None or trackers is None:
        return None
    people = core.services.find(PEOPLE)
    team = core.team(spool, trackers)
    actions = PressActions(
        buttons=core.buttons,
        theirs=started.presses,
        calls=core.services.find(CALLS),
        snoozing=lambda: core.services.find(SNOOZING),
        pressed_elsewhere=people.pressed_privately if people is not None else None,
        budget=core.services.find(PRESS_ANSWER_BUDGET),
        sources=core.sources,
    )
    presses = Presses(team, core.telegram, core.outbox, actions, core.zone_of, acting=core.acting)
    return route_updates(presses, started.updates)


def poller_for(
    settings: Settings, spool: Spool, term: Callable[[], str | None], handle: Handle | None
) -> Poller | None:
    """With TELEGRAM_UPDATES=poll: this process's poll for the updates, while it leads."""
    if settings.telegram_updates != "poll" or handle is None:
        return None
    return Poller(
        client=TelegramClient(settings.telegram_api_url, settings.telegram_bot_token),
        offset=spool.leader,
        term=term,
        handle=handle,
        attempt_timeout=settings.send_timeout,
        timing=settings.timing,
    )
