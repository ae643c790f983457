"""relay_app: carries GlitchTip's and Sentry's alert webhooks into Telegram, and does not lose
them."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol
from zoneinfo import ZoneInfo

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from .capabilities import REGISTRY
from .cards.edits import card_edits
from .cards.in_step import CARDS_IN_STEP
from .cards.outgoing import OldRecords, Outgoing
from .cards.sent import SentStore
from .core.errors import SpoolError
from .core.issue_details import HOURLY
from .core.json_body import MAX_BODY_BYTES
from .core.logs import configure_logging
from .core.metrics import CounterSpec, Metrics
from .core.services import Services
from .delivery.dispatcher import Chores, Dispatcher
from .delivery.health import Health, MemoryHealthStore
from .delivery.job import Attempts, Jobs, Writing
from .delivery.leadership import Chore, Leadership, Upkeep, WhenLeading
from .delivery.mentions import OnCall
from .delivery.outbox import Outbox
from .delivery.policy import RetryPolicy
from .delivery.render import Added, Renderer
from .intake.alerts import SourceIssues, WebhookAlerts
from .intake.attempt import FirstAttempts
from .intake.hold import HOLD
from .intake.queue import AlertQueue
from .intake.record import AFTER_WEBHOOK, AfterWebhook, LastWebhook
from .intake.route import TAKE_IN, RoutedWebhooks
from .message.subjects import NO_HOMES, IssueHomes
from .operating.capability import Core, Registry, Started
from .operating.config import Settings
from .operating.gauges import LocalSpoolGauge, SpoolGauges
from .operating.routes_file import RefusedAgain
from .operating.settings_of import sources_named
from .operating.setup_watch import AskAgain, Fleet, Reach, SetupWatch
from .parts import (
    acting_threads,
    issue_lookups,
    poller_for,
    source_services,
    updates_handled,
    zones_for,
)
from .routes.rotation import ROSTER, Roster
from .spool import LocalSpool, Queue, Spool, on_store, open_local, open_memory, open_store
from .spool.setup_found import SetupFound
from .telegram.bot_commands import COMMANDS, BotCommand, described
from .telegram.client import TelegramClient
from .telegram.courier import Courier, Telegram
from .telegram.people import PEOPLE, People
from .web.framing import BODY_GATE
from .web.misses import Misses
from .web.relay import EXTENSION, Relay, relay_of
from .web.views import RelayFlask, add_feed, add_page, blueprint, body_gate
from .words import Words, words_for

Clock = Callable[[], float]
# What the dispatcher's upkeep posts when its time comes.
OnTime = RefusedAgain

__all__ = [
    "Relay",
    "assemble",
    "create_app",
    "relay_of",
    "start_background_work",
    "stop_background_work",
]


def create_app(settings: Settings | None = None, *, clock: Clock = time.time) -> Flask:
    """The WSGI app. Settings come from the environment unless given (tests build them);
    `clock` replaces wall-clock time, so tests can move it. Background work starts separately,
    in each worker: `start_background_work`."""
    if settings is None:
        settings = Settings.from_env(os.environ, REGISTRY.settings)
    configure_logging(*settings.secrets, log_format=settings.log_format)
    app = RelayFlask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    relay = assemble(settings, clock=clock)
    app.extensions[EXTENSION] = relay
    app.register_blueprint(blueprint())
    for make in relay.running.pages:  # the capabilities' (Sentry's webhook)
        if (page := make()) is not None:
            add_page(app, page)
            relay.metrics.may_miss(page.refusal.reason)
    for make_feed in relay.running.feeds:  # the capabilities' (on call's calendars)
        if (feed := make_feed()) is not None:
            add_feed(app, feed)
    # Asked by the worker before it tells a client to send its body (100 Continue).
    app.extensions[BODY_GATE] = body_gate(app.url_map, settings.webhook_secret)

    @app.errorhandler(HTTPException)
    def http_error_as_json(error: HTTPException) -> tuple[Response, int]:
        if error.code in (404, 405):
            relay.misses.record(request.method, request.path, error.code)
        return jsonify(error=error.description), error.code or 500

    return app


def assemble(
    settings: Settings,
    *,
    clock: Clock = time.time,
    telegram: Telegram | None = None,
    capabilities: Registry = REGISTRY,
) -> Relay:
    """The relay's parts, wired: what `create_app` serves. `telegram` replaces the Bot API
    (tests script its answers); `capabilities`, the registry's (a test adds its own)."""
    if all(each.source.prefix for each in capabilities.sources_declared):
        # The first source's issues (their ids bare) would be read as no source's: no buttons,
        # no details, silently.
        raise ValueError("the registry declares no first source (capabilities.py's sources)")
    timing = settings.timing
    memory = open_memory(pace=timing.pace)
    spool = _spool(settings, clock)
    # What the workers share lives in the spool; with RELAY_SPOOL_PATH=off, in this process's
    # memory, which has the same parts and so keeps the same rules for this process alone.
    shared = spool or memory
    local = _local_spool(settings, spool)
    queues = _queues(spool, local, memory)
    health, metrics = _health_and_metrics(
        spool,
        local,
        queues,
        timing.probe_interval,
        counters=[CARDS_IN_STEP, *capabilities.counters],
    )
    registry = capabilities.on(settings)  # asked once, here
    marks = registry.marks
    homes = capabilities.homes(settings)  # where each source's issues get buttons
    # The cards, read with what the capabilities mark on them (a mute).
    sent = shared.of(lambda store: SentStore(store, marks))

    def term() -> str | None:  # this process's term, while it leads the fleet (made below)
        return leadership.term()

    def leads() -> bool:
        return term() is not None

    def commands() -> list[dict[str, str]]:  # asked once Telegram answers: all started by then
        listed = services.find(COMMANDS)
        return described(listed, words) if listed is not None else []

    setup = None
    if telegram is None:
        telegram, setup = _bot_api(settings, shared, health, clock, leads, commands)
        metrics.add_gauges(setup)
    last_webhook = LastWebhook(shared.arrivals, clock=clock)
    metrics.add_gauges(last_webhook)
    metrics.add_gauges(settings.routes_in_force)
    words = registry.words_in(words_for(settings.language))
    # Buttons need the spool, which keeps what each one acts on (Settings.from_env says so).
    buttons = settings.acts_on_issues and spool is not None

    def wake() -> None:  # the dispatcher, made below, looks at once
        dispatcher.wake()

    outbox = Outbox(shared.queue, answers=shared.answers, wake=wake, clock=clock)

    refused_again = RefusedAgain(
        settings.routes_in_force,
        sources_named(capabilities.settings),
        every=timing.routes_refused_again,
        clock=clock,
    )
    on_time = (refused_again,)
    services = source_services(settings, capabilities.sources_declared)
    zones = zones_for(settings)
    acting = acting_threads(settings)
    core = Core(
        settings,
        spool,
        shared,
        metrics,
        clock,
        outbox,
        words,
        services,
        zones.of,
        telegram,
        health,
        term,
        last_webhook,
        capabilities.sources,
        homes,
        buttons=tuple(registry.buttons),
        lending=registry.lending,
        marks=marks,
        acting=acting,
    )
    running = registry.start(core)
    after_webhook = services.find(AFTER_WEBHOOK)  # a capability's: GlitchTip's hidden issues
    # Telegram's updates: the core's presses, given what the capabilities started added.
    updates = updates_handled(core, running)
    poller = poller_for(settings, shared, term, updates)
    outgoing = Outgoing(
        sent if spool is not None else None,
        outbox,
        buttons=buttons,
        words=words,
        sources=capabilities.sources,
        theirs=registry.buttons,
        clock=clock,
        follow_ups=running.follow_ups,
    )
    renderer = _renderer(
        settings,
        sent,
        words,
        buttons=buttons,
        homes=homes,
        roster=_roster(settings, services),
        registry=registry,
        # Every capability's shapes, notes and kinds of write, on or not: a job one left in
        # the spool is still written.
        everything=capabilities,
        people=services.find(PEOPLE),
        started=running,
        after=after_webhook,
    )
    policy = RetryPolicy(
        attempts=settings.retry_attempts, wait=settings.retry_wait, max_age=settings.retry_max_age
    )
    jobs = Jobs(
        telegram,
        Writing(renderer, outgoing),
        Attempts(
            policy,
            timeout=settings.send_timeout,
            settle_margin=timing.settle_margin,
            second_chance=settings.second_chance,
        ),
        health=health,
        metrics=metrics,
        clock=clock,
        places=running.places,
    )

    upkeep = _upkeep(
        OldRecords(sent, keep_for=settings.retry_max_age, clock=clock),
        running.upkeep,
        on_time,
        leads,
    )
    dispatcher = Dispatcher(
        queues,
        jobs,
        metrics,
        chores=Chores(upkeep, local.mover if local is not None else None),
        clock=clock,
        timing=timing,
    )
    alert_queue = AlertQueue(queues=queues, jobs=jobs, dispatcher=dispatcher, clock=clock)
    attempts = FirstAttempts(queues=queues, dispatcher=dispatcher, clock=clock)
    lookups = issue_lookups(settings, services.find(HOURLY), running.details)
    issues = SourceIssues(lookups, buttons=outgoing.buttons, homes=homes)
    webhooks = RoutedWebhooks(
        WebhookAlerts(
            queue=alert_queue,
            attempts=attempts,
            renderer=renderer,
            silencing=services.find(HOLD),
            jobs=jobs,
            issues=issues,
            clock=clock,
        ),
        settings.routes,
        default=settings.default_destination,
        metrics=metrics,
        issues=issues,
    )
    services.provide(TAKE_IN, webhooks)  # an escalating issue posted again (the watcher's)
    chores = _fleet_chores(*running.chores, poller, setup)
    leadership = Leadership(shared.leader, chores, timing=timing, clock=clock)
    return Relay(
        settings=settings,
        sources=capabilities.sources,
        alert_queue=alert_queue,
        attempts=attempts,
        dispatcher=dispatcher,
        jobs=jobs,
        metrics=metrics,
        spool=spool,
        local=local,
        memory=memory,
        outgoing=outgoing,
        lookups=lookups,
        last_webhook=last_webhook,
        webhooks=webhooks,
        misses=Misses(metrics.missed, shared=shared.warnings.says),
        outbox=outbox,
        silencing=services.find(HOLD),
        services=services,
        updates=updates,
        acting=acting,
        poller=poller,
        after_webhook=after_webhook,
        leadership=leadership,
        setup=setup,
        running=running,
        commands=_listed(services),
    )


def _listed(services: Services) -> tuple[BotCommand, ...]:
    """The chat's commands as Telegram lists them; none while nothing answers them."""
    listed = services.find(COMMANDS)
    return listed if listed is not None else ()


def _roster(settings: Settings, services: Services) -> Roster:
    """Who is on duty, the covers applied: on call's; the rotations alone without it."""
    found = services.find(ROSTER)
    return (
        found if found is not None else Roster(settings.routes.on_call, ZoneInfo(settings.timezone))
    )


def _local_spool(settings: Settings, spool: Spool | None) -> LocalSpool | None:
    """With the spool in PostgreSQL, this host's own file, unless RELAY_LOCAL_SPOOL_PATH=off."""
    if spool is None or settings.spool_url is None or settings.local_spool_path is None:
        return None
    pace = settings.timing.pace
    return open_local(
        settings.local_spool_path, spool, max_pending=settings.spool_max_pending, pace=pace
    )


def _queues(spool: Spool | None, local: LocalSpool | None, memory: Spool) -> list[Queue]:
    """Where an alert may wait, in the order it tries them: memory last."""
    files = [spool, local.spool if local is not None else None, memory]
    return [each.queue for each in files if each is not None]


def _bot_api(
    settings: Settings,
    shared: Spool,
    health: Health,
    clock: Clock,
    leads: Callable[[], bool],
    commands: Callable[[], list[dict[str, str]]],
) -> tuple[Courier, SetupWatch]:
    """Telegram's Bot API, and the watch over what the relay's setup needs of it, asked by the
    fleet's leader (`leads`), the chat's `commands` registered with it."""
    client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)
    setup = SetupWatch(
        settings,
        Fleet(shared.of(SetupFound), leads),
        ask_again=AskAgain(
            unreached=settings.timing.reach_again, spool=settings.timing.reach_again
        ),
        reach=Reach(lambda: health.send_failed(clock()), lambda: health.current().sending),
        commands=commands,
    )
    return Courier(client, attempt_timeout=settings.send_timeout), setup


def _fleet_chores(*parts: Chore | SetupWatch | None) -> list[Chore]:
    """What the fleet's leader runs (the poller, the watcher), and the start-up check's cue to
    ask as this process comes to lead."""
    return [
        WhenLeading(part.came_to_lead) if isinstance(part, SetupWatch) else part
        for part in parts
        if part is not None
    ]


def _upkeep(
    records: OldRecords,
    theirs: Sequence[Callable[[], object]],
    on_time: Iterable[OnTime | None],
    leads: Callable[[], bool],
) -> Upkeep:
    """The dispatcher's upkeep, once a second where the fleet's leader is: old records
    forgotten, the capabilities' own (silences that ran out ended, escalation steps that are due
    fired, on-call handoffs said, each at most as often as it asks for), and what is posted or
    said at its time (daily summaries, a routes file still refused) when it has come."""
    posts = [each.upkeep for each in on_time if each is not None]
    return Upkeep([records.tidy, *theirs, *posts], leads=leads)


def _spool(settings: Settings, clock: Clock) -> Spool | None:
    """The spool the settings name, for the service; None with RELAY_SPOOL_PATH=off."""
    store = open_store(
        path=settings.spool_path,
        url=settings.spool_url,
        default_destination=settings.default_destination,
    )
    if store is None:
        return None
    limit, pace = settings.spool_max_pending, settings.timing.pace
    return on_store(store, max_pending=limit, clock=clock, pace=pace)


def _renderer(
    settings: Settings,
    sent: SentStore,
    words: Words,
    *,
    buttons: bool,
    homes: IssueHomes,
    roster: Roster,
    registry: Registry,
    everything: Registry,
    people: People | None,
    started: Started,
    after: AfterWebhook | None,
) -> Renderer:
    """What every job writes, made when it is sent: with the capabilities' shapes of alert,
    their notes, and the cards' edits."""
    zones = zones_for(settings)
    return Renderer(
        words,
        late_after=settings.late_after,
        coalesce=settings.coalesce,
        sources=everything.sources,
        buttons_at=homes if buttons else NO_HOMES,
        hidden_named_at=after.names_left_out_at if buttons and after is not None else None,
        # Two sources configured (GlitchTip's and Sentry's): a rule-named heading says whose.
        names_sources=sum(
            each.source is not None and each.source.configured(settings)
            for each in registry.capabilities
        )
        > 1,
        on_call=OnCall(roster, roster.zone, zones, names=_names(people)),
        added=Added(
            everything.shapes,
            everything.notes,
            card_edits(
                sent.message,
                snooze_events=settings.watching.snooze_events,
                zone_of=zones.of,
                theirs=registry.buttons,
            ),
            # Those started here write with what they keep; the rest as they declare.
            writers=[*everything.writers, *started.writers],
        ),
    )


def _names(people: People | None) -> Callable[[Sequence[str]], Mapping[str, str]]:
    """The names of the people a message calls by `tg:<id>`, where the relay met them (on
    call keeps them); none when the spool cannot say now, or nobody keeps them (the message
    calls them by number then)."""

    def names(mentions: Sequence[str]) -> Mapping[str, str]:
        if people is None:
            return {}
        try:
            return people.names(mentions)
        except SpoolError as exc:
            logging.getLogger(__name__).debug(
                "the names of %s could not be read now: %s", mentions, exc
            )
            return {}

    return names


def _health_and_metrics(
    spool: Spool | None,
    local: LocalSpool | None,
    queues: list[Queue],
    probe_interval: float,
    *,
    counters: Sequence[CounterSpec],
) -> tuple[Health, Metrics]:
    """Telegram's health, kept in the spool when there is one (every process shares it), and
    the counters, with the gauges read from both."""
    if spool is None:
        health = Health(MemoryHealthStore(), queues=queues, probe_interval=probe_interval)
        return health, Metrics(SpoolGauges(None, health), counters=counters)
    health = Health(spool.health, queues=queues, probe_interval=probe_interval)
    metrics = Metrics(SpoolGauges(spool.admin, health), counters=counters)
    if local is not None:
        metrics.add_gauges(LocalSpoolGauge(local.spool.admin))
    spool.count_lock_waits(metrics.lock_wait)
    return health, metrics


def start_background_work(app: object) -> None:
    """Start sending waiting alerts from this process (gunicorn's post_worker_init): those
    due for a retry or their chat's turn, and those a stopped or crashed process left; and,
    with TELEGRAM_UPDATES=poll, be ready to read the presses on their buttons."""
    relay = relay_of(app)
    if relay is not None:
        relay.dispatcher.start()
        # The fleet's chores (the poller, the watcher, the upkeep) run where its leader is;
        # so does the start-up check, which waits for this process to lead.
        if relay.leadership is not None:
            relay.leadership.start()
        if relay.setup is not None:
            relay.setup.start()
    else:
        logging.getLogger(__name__).warning(
            "the WSGI app is not relay_app's own (%s): alerts left in the spool by an earlier "
            "process will not be taken up by this worker",
            type(app).__name__,
        )


def stop_background_work(app: object) -> None:
    """Stop deliberately (gunicorn's worker_exit hook): the fleet's chores first, the leader's
    lease given back, so another process takes over at once (Leadership.shutdown), then the
    poll in flight ended, then the capabilities started, the presses' threads, then
    Dispatcher.shutdown, then the look-ups."""
    relay = relay_of(app)
    if relay is None:
        return
    _shut_down(relay.leadership, relay.setup, relay.poller)
    relay.running.stop()
    _shut_down(relay.acting, relay.dispatcher, relay.lookups)


class _Stops(Protocol):
    def shutdown(self) -> None: ...


def _shut_down(*parts: _Stops | None) -> None:
    for part in parts:
        if part is not None:
            part.shutdown()
