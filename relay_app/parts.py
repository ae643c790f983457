"""What the wiring builds apart from `relay_app.assemble`: the sources (GlitchTip's, the first;
its home), their APIs from their tokens and the services the capabilities ask for of them,
what reads their issues' details for alerts, and the zone each chat reads times in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from zoneinfo import ZoneInfo

from .cards.ignore_choices import SNOOZING
from .cards.presses.presses import (
    PRESS_ANSWER_BUDGET,
    PRESS_THREADS,
    PRESSES_WAITING,
    PressActions,
    Presses,
)
from .cards.team import Team, met_by
from .cards.verbs import CALLS
from .chat.links import LINK_SOURCES, LinkSource
from .core.errors import SpoolError
from .core.metrics import Metrics
from .core.off_thread import OffThread
from .core.services import Services
from .glitchtip.api import ISSUE_ACTIONS, ISSUE_HISTORY, ISSUE_WATCH, GlitchTipApi
from .glitchtip.details import Hourly, IssueDetails
from .glitchtip.lookups import (
    CALL_TIMEOUT,
    DetailSource,
    EachSource,
    IssueLookups,
    Lookups,
    unscoped,
)
from .glitchtip.source import GLITCHTIP
from .message.subjects import Home, IssueHomes
from .operating.capability import Core, SourceOf, Started
from .operating.config import Settings
from .routes.zones import Zones
from .sentry.api import SentryApi
from .sentry.hooks import customer_domain_issue
from .sentry.settings import SENTRY_SETTINGS
from .sentry.source import SENTRY
from .sentry.trackers import Trackers
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


def issue_apis(
    settings: Settings, *, timeout: float
) -> tuple[GlitchTipApi | None, SentryApi | None]:
    """The sources' APIs that have a token: GlitchTip's (GLITCHTIP_API_TOKEN, to GLITCHTIP_URL)
    and Sentry's (SENTRY_API_TOKEN, to SENTRY_URL or its region)."""
    token, url = settings.glitchtip_api_token, settings.glitchtip_url
    sentry = settings.of(SENTRY_SETTINGS)
    glitchtip = GlitchTipApi(token, url, timeout=timeout) if token and url else None
    if sentry is None or sentry.api_token is None:
        return glitchtip, None
    return glitchtip, SentryApi(sentry.api_token, sentry.url, timeout=timeout)


def glitchtip_home(settings: Settings) -> Home | None:
    """Where GlitchTip's issues get buttons, with GLITCHTIP_API_TOKEN: its links' origin
    (GLITCHTIP_PUBLIC_URL, or GLITCHTIP_URL), within GLITCHTIP_ORGANIZATIONS."""
    if settings.glitchtip_api_token is None or settings.glitchtip_links is None:
        return None
    return Home(settings.glitchtip_links, settings.glitchtip_organizations)


# The relay's first source, handed to the registry (capabilities.py): its ids have no prefix.
GLITCHTIPS = SourceOf(GLITCHTIP, glitchtip_home)


def link_sources(
    settings: Settings,
    homes: IssueHomes,
    glitchtip: GlitchTipApi | None,
    sentry: SentryApi | None,
) -> list[LinkSource]:
    """The sources with a token whose issue links get cards, each at its address (`homes`)."""
    sources = []
    if glitchtip is not None and (home := homes.of(GLITCHTIP.name)) is not None:
        sources.append(LinkSource(home.origin, glitchtip, GLITCHTIP))
    config = settings.of(SENTRY_SETTINGS)
    if sentry is not None and (home := homes.of(SENTRY.name)) is not None and config:
        written_as = partial(customer_domain_issue, sentry_url=config.url)
        sources.append(LinkSource(home.origin, sentry, SENTRY, written_as))
    return sources


def source_services(settings: Settings, homes: IssueHomes) -> Services:
    """What the sources' tokens make, for the capabilities to ask for: what changes their
    issues (a press, a reply), and the sources whose links get cards (at their `homes`)."""
    services = Services()
    glitchtip, sentry = issue_apis(settings, timeout=settings.send_timeout)
    if glitchtip is not None or sentry is not None:
        services.provide(ISSUE_ACTIONS, Trackers(glitchtip, sentry))
        services.provide(ISSUE_HISTORY, Trackers(glitchtip, sentry))
        # The watcher's calls keep their own, shorter deadline (it asks in batches).
        services.provide(ISSUE_WATCH, Trackers(*issue_apis(settings, timeout=CALL_TIMEOUT)))
    services.provide(LINK_SOURCES, tuple(link_sources(settings, homes, glitchtip, sentry)))
    return services


def issue_lookups(
    settings: Settings,
    metrics: Metrics,
    shared: Spool,
    hourly: Hourly | None,
    other: DetailSource | None,
) -> Lookups | None:
    """Unless RELAY_DETAILS_BUDGET=off, what reads issues' details: GlitchTip's API with
    GLITCHTIP_API_TOKEN (its failing known to every process on the spool), and another
    source's as its capability provides it (`other`: Sentry's, with SENTRY_API_TOKEN)."""
    budget = settings.details_budget
    if budget is None:
        return None
    sources: list[tuple[Callable[[str], bool], IssueLookups]] = []
    token, glitchtip_url = settings.glitchtip_api_token, settings.glitchtip_url
    if token is not None and glitchtip_url is not None:
        api = GlitchTipApi(token, glitchtip_url, timeout=CALL_TIMEOUT)
        read = _with_hours(partial(_as_its_organizations, api), hourly)
        found = IssueLookups(
            read, budget=budget, count=metrics.glitchtip_lookup, health=shared.glitchtip_health
        )
        # GlitchTip's ids are those no other source owns.
        sources.append((lambda issue_id: other is None or not other.owns(issue_id), found))
    if other is not None:
        read = _with_hours(other.read, hourly)
        found = IssueLookups(read, budget=budget, count=other.count, setup=other.setup)
        sources.insert(0, (other.owns, found))
    if not sources:
        return None
    return sources[0][1] if len(sources) == 1 else EachSource(sources)


def _as_its_organizations(api: GlitchTipApi, key: str) -> IssueDetails:
    """A GlitchTip issue's details, read as the organization its look-up key names (`acme/12`)."""
    org, issue_id = unscoped(key)
    return api.details(issue_id, org=org)


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
    team = Team(
        store=core.sent_store(spool),
        glitchtip=trackers,
        allowed_users=settings.action_user_ids,
        words=core.words,
        metrics=core.metrics,
        clock=core.clock,
        met=met_by(people),
    )
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
