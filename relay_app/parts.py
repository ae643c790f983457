"""The parts of the relay that act from the chat and follow GlitchTip, as `relay_app.assemble`
builds them from the settings: what handles Telegram's updates (presses, replies, commands) and
polls for them, the watcher with what it keeps in step (cards, snoozes) and posts again, the
daily summaries and the on-call handoffs. Apart from `assemble` so that the wiring stays one
page."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from .cards.sent import SentStore
from .cards.verbs import CALLS, Calls
from .chat.answers import Answering, Served
from .chat.commands import Askers, BotName, Commands, Status, status_command
from .chat.counters import ANSWERS_REFUSED, COMMANDS, LINK_CARDS
from .chat.links import Links, LinkSource
from .chat.presses import PRESS_THREADS, PRESSES_WAITING, PressActions, Presses
from .chat.replies import Replies
from .chat.scope import ChatScope
from .chat.taking import Taking
from .chat.team import Person, Team
from .chat.updates import Handle, Poller, route_updates
from .core.errors import SpoolError
from .core.metrics import Metrics
from .core.off_thread import OffThread
from .core.routing import Destination, chat_key, parse_chat_id
from .core.typed import user_id_of
from .delivery.health import Health
from .delivery.outbox import Outbox
from .glitchtip.api import GlitchTipApi
from .glitchtip.lookups import CALL_TIMEOUT
from .glitchtip.webhook import source_of
from .intake.routed import RoutedWebhooks
from .message.trend import Trend
from .operating.config import Settings
from .routes.zones import Zones
from .sentry.api import SentryApi
from .sentry.deliveries import DeliveryStore
from .sentry.trackers import Trackers
from .sentry.webhook import SentryIntake, SentryPage
from .snoozes.snoozing import BringBack, Snoozing
from .snoozes.store import SnoozeStore
from .spool import Spool
from .telegram.bot_commands import BotCommand, described
from .telegram.client import TelegramClient
from .telegram.courier import Telegram
from .telegram.people import People
from .telegram.updates_webhook import Handler
from .watch.in_step import CardsInStep
from .watch.issues import issues_command
from .watch.store import Watched, WatchStore
from .watch.watcher import AfterRound, Watcher, WatchPlan
from .web.relay import Relay
from .words import Words, words_for

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Basis:
    """What every part here is made from: the settings, the spool (None: RELAY_SPOOL_PATH=off),
    the counters, the clock, the outbox every write to a chat is queued in, the words, and the
    chat's commands the capabilities answer."""

    settings: Settings
    spool: Spool | None
    metrics: Metrics
    clock: Clock
    outbox: Outbox
    words: Words  # the catalogue in the relay's language, the capabilities' words with it
    commands: Sequence[BotCommand] = ()
    people: People | None = None  # the people the relay met (on call's), where it keeps them


def following_glitchtip(
    basis: Basis, calls: Calls | None
) -> tuple[CardsInStep | None, Snoozing | None]:
    """With GLITCHTIP_API_TOKEN and a spool: what the watcher's rounds keep in step with
    GlitchTip, the cards (in_step.py) and the snoozes (snoozing.py)."""
    settings, spool, outbox, metrics, clock = _unpacked(basis)
    token, url, links = (
        settings.glitchtip_api_token,
        settings.glitchtip_url,
        settings.glitchtip_links,
    )
    if token is None or url is None or links is None or spool is None:
        return None, None
    in_step = CardsInStep(
        spool.of(SentStore),
        outbox,
        origin=links,
        escalation=calls,
        metrics=metrics,
        clock=clock,
    )
    snoozing = Snoozing(
        spool.of(SnoozeStore),
        spool.of(WatchStore),
        BringBack(
            GlitchTipApi(token, url, timeout=settings.send_timeout),
            outbox,
            reopened=lambda issue: in_step.follow(
                {issue: "unresolved"}, asked_at=clock(), settle=0
            ),
            zone_of=zones_for(settings).of,
        ),
        events=settings.watching.snooze_events,
        metrics=metrics,
        clock=clock,
    )
    return in_step, snoozing


def watcher_for(
    basis: Basis,
    post: Callable[[Watched, Trend], None],
    in_step: CardsInStep | None,
    snoozing: Snoozing | None,
) -> Watcher | None:
    """With a source's token (GlitchTip's, Sentry's) and a spool: the watcher of the issues
    the relay alerted on."""
    settings, spool, _, metrics, clock = _unpacked(basis)
    if not settings.acts_on_issues or spool is None:
        return None
    return Watcher(
        spool.of(WatchStore),
        Trackers(*issue_apis(settings, timeout=CALL_TIMEOUT)),
        WatchPlan(
            settings.watching.every,
            settings.watching.min_events,
            settings.issue_homes,
            look_every=settings.timing.poll_interval,
        ),
        AfterRound(
            post,
            follow=(lambda states, at: in_step.follow(states, asked_at=at)) if in_step else None,
            snoozing=snoozing,
        ),
        metrics=metrics,
        clock=clock,
    )


def post_escalating(webhooks: RoutedWebhooks, issue: Watched, found: Trend) -> None:
    """An escalating issue as a webhook of its own: routes, silences and mentions apply."""
    # GlitchTip's heading; another source's alert has its own ("Sentry Alert").
    heading = "GlitchTip Alert" if source_of(issue.alert) == "glitchtip" else ""
    payload = {"alias": "GlitchTip", "text": heading, **issue.alert}
    where = Destination(parse_chat_id(issue.chat) or issue.chat, issue.thread)
    escalating = {"count": found.last_hour, "spark": found.sparkline}
    # Posted again: never said to be new, and its calls are its first message's (oncall/steps.py).
    also = {"escalating": escalating, "again": True}
    webhooks.take(payload, where, time.monotonic(), also=also)


def zones_for(settings: Settings) -> Zones:
    """The zone each chat reads times in: its routes' `timezone`, else RELAY_TIMEZONE."""
    return Zones(
        settings.routes,
        default_destination=settings.default_destination,
        default=ZoneInfo(settings.timezone),
    )


@dataclass(frozen=True)
class FromTheChat:
    """What acts on Telegram's updates: the handler of each (a press, a reply, a command, a
    link), this process's poller for them (TELEGRAM_UPDATES=poll), and the links' look-ups,
    which run off the thread that read the update."""

    updates: Handle | None = None
    poller: Poller | None = None
    links: Links | None = None
    # The threads presses and replies' comments are handled on, off the one that read them.
    acting: OffThread | None = None


def acting_from_the_chat(
    basis: Basis,
    telegram: Telegram,
    health: Health,
    actions: PressActions,
    term: Callable[[], str | None],
    kinds: Mapping[str, Handler],
) -> FromTheChat:
    """With GLITCHTIP_API_TOKEN (and a spool to keep the sent messages in): what handles each
    update, a press or a reply, and with TELEGRAM_UPDATES=poll this process's poller for them,
    which polls while `term` names this process's term as the fleet's leader. `actions`: what
    a press does besides changing the issue in GlitchTip; `kinds`: the capabilities' own kinds
    of update, each by its handler."""
    settings, spool, outbox, metrics, clock = _unpacked(basis)
    if not settings.acts_on_issues or spool is None:
        return FromTheChat()
    glitchtip, sentry = issue_apis(settings, timeout=settings.send_timeout)
    answering = Answering(
        outbox,
        spool.answers,
        first_in=lambda key, window: spool.of(SentStore).first_in(key, window=window, at=clock()),
        refused=lambda reason: metrics.of(ANSWERS_REFUSED).labels(reason).inc(),
        shared=spool.warnings.says,
        clock=clock,
    )
    team = Team(
        store=spool.of(SentStore),
        glitchtip=Trackers(glitchtip, sentry),
        allowed_users=settings.action_user_ids,
        words=basis.words,
        metrics=metrics,
        clock=clock,
        met=met_by(basis.people),
    )
    links = _links(basis, spool, answering, _link_sources(settings, glitchtip, sentry))
    # Presses and replies' comments are handled off the thread that read their update: polled,
    # the one that reads them all; posted, the request Telegram waits on before it posts the
    # next (an update answered at once lets the next come). Off, no update comes.
    acting = (
        OffThread("relay-presses", threads=PRESS_THREADS, most_waiting=PRESSES_WAITING)
        if settings.telegram_updates != "off"
        else None
    )
    route = route_updates(
        Presses(team, telegram, outbox, actions, zones_for(settings).of, acting=acting),
        Replies(
            team,
            answering,
            bot_id=bot_id(settings.telegram_bot_token),
            taking=Taking(team.store, outbox, actions.calls, clock=clock),
            acting=acting,
        ),
        _commands(basis, spool, answering, health),
        links,
        by_kind=kinds,
    )
    if settings.telegram_updates != "poll":
        return FromTheChat(route, None, links, acting)
    poller = Poller(
        client=TelegramClient(settings.telegram_api_url, settings.telegram_bot_token),
        offset=spool.leader,
        term=term,
        handle=route,
        attempt_timeout=settings.send_timeout,
        timing=settings.timing,
    )
    return FromTheChat(route, poller, links, acting)


def _commands(basis: Basis, spool: Spool, answering: Answering, health: Health) -> Commands:
    """The chat's commands: they tell what the relay knows, in the chats it serves."""
    settings, metrics, clock = basis.settings, basis.metrics, basis.clock
    served = Served(
        frozenset(served_chats(settings)),
        BotName(settings.telegram_api_url, settings.telegram_bot_token),
    )

    def status(words: Words) -> Status:
        telegram = health.current().sending
        paused = spool.glitchtip_health.paused()
        counts = spool.admin.counts()
        return Status(
            telegram=words.status_telegram_up if telegram else words.status_telegram_down,
            glitchtip=words.status_glitchtip_failing if paused else words.status_glitchtip_up,
            queue=words.status_queue.format(pending=counts["pending"], dead=counts["dead"]),
        )

    return Commands(
        commands=bot_commands(spool, basis.commands, status, clock),
        served=served,
        first_time=lambda keys: spool.of(SentStore).first_time(keys, at=clock()),
        answering=answering,
        words=basis.words,
        count=lambda command: metrics.of(COMMANDS).labels(command).inc(),
        askers=Askers(
            may_act=lambda person: (
                not settings.action_user_ids or person.id in settings.action_user_ids
            ),
            met=met_by(basis.people),
        ),
    )


def met_by(people: People | None) -> Callable[[Person], None]:
    """Keep the name and username of someone who asked or acted in a chat the relay serves
    (a call by `tg:<id>` shows the name), where someone keeps them (on call); what the spool
    cannot keep now waits for next time."""

    def met(person: Person) -> None:
        if people is None or person.id is None or person.id <= 0:
            return
        try:
            people.met(person.id, person.username, person.name)
        except SpoolError as exc:
            log.debug("%s could not be kept as met: %s", person.handle, exc)

    return met


def bot_commands(
    spool: Spool,
    theirs: Sequence[BotCommand],
    status: Callable[[Words], Status] = lambda words: Status("", "", ""),
    clock: Clock = time.time,
) -> list[BotCommand]:
    """The chat's commands in the order Telegram lists them: `/issues`, the capabilities', then
    `/status`."""
    return [issues_command(spool.of(WatchStore), clock=clock), *theirs, status_command(status)]


def issue_apis(
    settings: Settings, *, timeout: float
) -> tuple[GlitchTipApi | None, SentryApi | None]:
    """The sources' APIs that have a token: GlitchTip's (GLITCHTIP_API_TOKEN, to GLITCHTIP_URL)
    and Sentry's (SENTRY_API_TOKEN, to SENTRY_URL or its region)."""
    token, url, sentry = settings.glitchtip_api_token, settings.glitchtip_url, settings.sentry
    glitchtip = GlitchTipApi(token, url, timeout=timeout) if token and url else None
    if sentry is None or sentry.api_token is None:
        return glitchtip, None
    return glitchtip, SentryApi(sentry.api_token, sentry.url, timeout=timeout)


def _link_sources(
    settings: Settings, glitchtip: GlitchTipApi | None, sentry: SentryApi | None
) -> list[LinkSource]:
    """The sources with a token whose issue links get cards, each at its address."""
    homes = settings.issue_homes
    sources = []
    if glitchtip is not None and homes.glitchtip is not None:
        sources.append(LinkSource(homes.glitchtip, glitchtip))
    if sentry is not None and homes.sentry is not None:
        sources.append(LinkSource(homes.sentry, sentry, "sentry"))
    return sources


def _links(
    basis: Basis, spool: Spool, answering: Answering, sources: Sequence[LinkSource]
) -> Links | None:
    """Links to the sources' issues pasted in the chats the relay serves, answered with cards
    of the issues each chat follows."""
    settings, metrics = basis.settings, basis.metrics
    if not sources:
        return None
    scope = ChatScope(
        settings.routes,
        settings.default_destination,
        watched=spool.of(WatchStore),
        sent=spool.of(SentStore),
        glitchtip_orgs=settings.glitchtip_organizations,
    )
    return Links(
        served=Served(frozenset(served_chats(settings))),
        sources=sources,
        answering=answering,
        scope=scope,
        count=lambda outcome: metrics.of(LINK_CARDS).labels(outcome).inc(),
    )


def served_chats(settings: Settings) -> set[str]:
    """The chats the relay posts to, which its commands and links answer in."""
    return {
        chat_key(settings.default_destination.chat),
        *settings.allowed_chat_ids,
        *(chat_key(chat) for chat in settings.routes.chats),
    }


def command_list(
    settings: Settings, spool: Spool | None, commands: Sequence[BotCommand]
) -> list[dict[str, str]]:
    """The commands Telegram offers as people type `/`, described in the relay's language;
    none when the relay reads no updates (no GLITCHTIP_API_TOKEN or no spool)."""
    if settings.glitchtip_api_token is None or spool is None:
        return []
    return described(commands, words_for(settings.language))


def bot_id(token: str) -> int | None:
    """The bot's own user id: the part of its token before the colon."""
    head = token.partition(":")[0]
    return user_id_of(head)


def _unpacked(basis: Basis) -> tuple[Settings, Spool | None, Outbox, Metrics, Clock]:
    return basis.settings, basis.spool, basis.outbox, basis.metrics, basis.clock


def sentry_page(relay: Relay, clock: Clock) -> SentryPage | None:
    """With SENTRY_CLIENT_SECRET: Sentry's webhook (sentry/webhook.py), and, with its token
    and a spool, the cards of its issues kept in step by its issue webhooks."""
    settings = relay.settings
    config, origin = settings.sentry, settings.sentry_links
    if config is None:
        return None
    in_step = None
    if config.api_token and relay.spool is not None and relay.outbox is not None and origin:
        in_step = CardsInStep(
            relay.spool.of(SentStore),
            relay.outbox,
            origin=origin,
            escalation=relay.services.find(CALLS),
            metrics=relay.metrics,
            clock=clock,
            source="Sentry",
        )
    intake = SentryIntake(
        relay.webhooks, settings.routes, settings.default_destination, relay.last_webhook
    )
    deliveries = (relay.spool or relay.memory).of(DeliveryStore)
    return SentryPage(config, intake, deliveries, in_step=in_step, clock=clock)
