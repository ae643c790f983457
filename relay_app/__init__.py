"""relay_app: carries GlitchTip alert webhooks into Telegram, and does not lose them."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from zoneinfo import ZoneInfo

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from .acting.daily_summary import DailySummaries
from .acting.escalation import Escalation
from .acting.in_step import CardsInStep
from .acting.outgoing import Outgoing
from .acting.presses import Presses
from .acting.replies import Replies
from .acting.silencing import Silencing
from .acting.snoozing import Snoozing
from .acting.team import Team
from .acting.updates import Handle, Poller, route_updates
from .acting.watcher import Watcher
from .core.logs import configure_logging
from .core.metrics import Metrics
from .core.routing import Destination, parse_chat_id
from .delivery.dispatcher import Dispatcher
from .delivery.health import Health, MemoryHealthStore
from .delivery.intake import Intake
from .delivery.job import Jobs
from .delivery.outbox import Outbox
from .delivery.policy import RetryPolicy
from .delivery.render import Renderer
from .glitchtip.api import GlitchTipApi
from .glitchtip.lookups import CALL_TIMEOUT, IssueLookups
from .glitchtip.webhook import MAX_BODY_BYTES
from .message.trend import Trend
from .operating.config import Settings
from .operating.gauges import LocalSpoolGauge, SpoolGauges
from .operating.setup_watch import SetupWatch, one_worker_says
from .spool import LocalSpool, Queue, Spool, open_local, open_memory, open_spool
from .spool.watched import Watched
from .telegram.client import TelegramClient
from .telegram.courier import Courier, Telegram
from .web.framing import BODY_GATE
from .web.last_webhook import LastWebhook
from .web.misses import Misses
from .web.relay import EXTENSION, Relay, relay_of
from .web.routed import RoutedWebhooks
from .web.views import RelayFlask, blueprint, body_gate
from .web.webhook_alerts import WebhookAlerts
from .words import words_for

Clock = Callable[[], float]

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
        settings = Settings.from_env(os.environ)
    configure_logging(*settings.secrets, log_format=settings.log_format)
    app = RelayFlask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    relay = assemble(settings, clock=clock)
    app.extensions[EXTENSION] = relay
    app.register_blueprint(blueprint())
    # Asked by the worker before it tells a client to send its body (100 Continue).
    app.extensions[BODY_GATE] = body_gate(app.url_map, settings.webhook_secret)

    @app.errorhandler(HTTPException)
    def http_error_as_json(error: HTTPException) -> tuple[Response, int]:
        if error.code in (404, 405):
            relay.misses.record(request.method, request.path, error.code)
        return jsonify(error=error.description), error.code or 500

    return app


def assemble(
    settings: Settings, *, clock: Clock = time.time, telegram: Telegram | None = None
) -> Relay:
    """The relay's parts, wired: what `create_app` serves. `telegram` replaces the Bot API
    (tests script its answers)."""
    timing = settings.timing
    memory = open_memory(pace=timing.pace)
    spool = open_spool(
        path=settings.spool_path,
        url=settings.spool_url,
        max_pending=settings.spool_max_pending,
        default_destination=settings.default_destination,
        clock=clock,
        pace=timing.pace,
    )
    # What the workers share lives in the spool; with RELAY_SPOOL_PATH=off, in this process's
    # memory, which has the same parts and so keeps the same rules for this process alone.
    shared = spool or memory
    local = _local_spool(settings, spool)
    files = [spool, local.spool if local is not None else None, memory]
    queues: list[Queue] = [each.queue for each in files if each is not None]
    health, metrics = _health_and_metrics(spool, local, queues, timing.probe_interval)
    setup = None
    if telegram is None:
        client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)
        telegram = Courier(client, attempt_timeout=settings.send_timeout)
        setup = SetupWatch(
            settings,
            reach_again_every=timing.reach_again,
            speaks=one_worker_says(shared.warnings),
            failing=lambda: health.send_failed(clock()),
            telegram_answers=lambda: health.current().sending,
        )
        metrics.add_gauges(setup)
    last_webhook = LastWebhook(shared.arrivals, clock=clock)
    metrics.add_gauges(last_webhook)
    words = words_for(settings.language)
    # Buttons need the spool, which keeps what each one acts on (Settings.from_env says so).
    buttons = settings.glitchtip_api_token is not None and spool is not None

    def wake() -> None:  # the dispatcher, made below, looks at once
        dispatcher.wake()

    outbox = Outbox(shared.queue, wake=wake, clock=clock)
    escalation = Escalation(shared.escalations, metrics=metrics, clock=clock)

    def posted_again(issue: Watched, found: Trend) -> None:  # through the routes, made below
        _post_escalating(webhooks, issue, found)

    summaries = _daily_summaries(settings, spool, clock)
    in_step, snoozing = _following_glitchtip(settings, spool, outbox, escalation, metrics, clock)
    watcher = _watcher(settings, spool, metrics, clock, posted_again, in_step, snoozing)
    outgoing = Outgoing(
        spool.sent if spool is not None else None,
        outbox=outbox,
        buttons=buttons,
        words=words,
        glitchtip_links=settings.glitchtip_links,
        keep_for=settings.retry_max_age,
        clock=clock,
        escalation=escalation,
        watcher=watcher,
        summaries=summaries,
    )
    renderer = Renderer(
        words,
        late_after=settings.late_after,
        coalesce=settings.coalesce,
        buttons_at=settings.glitchtip_links if buttons else None,
        cards=shared.sent.message,
        zone=ZoneInfo(settings.timezone),
        on_call=settings.routes.on_call,
        snooze_events=settings.watching.snooze_events,
    )
    jobs = Jobs(
        telegram,
        renderer=renderer,
        policy=RetryPolicy(
            attempts=settings.retry_attempts,
            wait=settings.retry_wait,
            max_age=settings.retry_max_age,
        ),
        health=health,
        metrics=metrics,
        clock=clock,
        attempt_timeout=settings.send_timeout,
        settle_margin=timing.settle_margin,
        second_chance=settings.second_chance,
        outgoing=outgoing,
    )

    def held(destination: Destination) -> None:
        metrics.silenced.inc()
        if summaries is not None:
            summaries.held(destination)

    silencing = Silencing(shared.silences, shared.sent, outbox=outbox, held=held, clock=clock)
    dispatcher = Dispatcher(
        queues=queues,
        jobs=jobs,
        health=health,
        probe=telegram.probe,
        metrics=metrics,
        attempt_timeout=settings.send_timeout,
        clock=clock,
        upkeep=_upkeep(outgoing, silencing, escalation, summaries),
        timing=timing,
        mover=local.mover if local is not None else None,
    )
    intake = Intake(
        spool=spool.queue if spool is not None else None,
        local=local.spool.queue if local is not None else None,
        memory=memory.queue,
        jobs=jobs,
        dispatcher=dispatcher,
        clock=clock,
    )
    lookups = _issue_lookups(settings, metrics, shared)
    webhooks = RoutedWebhooks(
        WebhookAlerts(
            intake=intake,
            renderer=renderer,
            outgoing=outgoing,
            silencing=silencing,
            jobs=jobs,
            lookups=lookups,
            glitchtip_links=settings.glitchtip_links,
            clock=clock,
        ),
        settings.routes,
        default=settings.default_destination,
        metrics=metrics,
        lookups=lookups,
        glitchtip_links=settings.glitchtip_links,
    )
    updates, poller = _acting_from_the_chat(
        settings, spool, telegram, outbox, metrics, clock, silencing, escalation, snoozing
    )
    return Relay(
        settings=settings,
        intake=intake,
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
        silencing=silencing,
        escalation=escalation,
        watcher=watcher,
        summaries=summaries,
        updates=updates,
        poller=poller,
        setup=setup,
    )


def _local_spool(settings: Settings, spool: Spool | None) -> LocalSpool | None:
    """With the spool in PostgreSQL, this host's own file, unless RELAY_LOCAL_SPOOL_PATH=off."""
    if spool is None or settings.spool_url is None or settings.local_spool_path is None:
        return None
    pace = settings.timing.pace
    return open_local(
        settings.local_spool_path, spool, max_pending=settings.spool_max_pending, pace=pace
    )


def _following_glitchtip(
    settings: Settings,
    spool: Spool | None,
    outbox: Outbox,
    escalation: Escalation,
    metrics: Metrics,
    clock: Clock,
) -> tuple[CardsInStep | None, Snoozing | None]:
    """With GLITCHTIP_API_TOKEN and a spool: what the watcher's rounds keep in step with
    GlitchTip, the cards (in_step.py) and the snoozes (snoozing.py)."""
    token, url, links = (
        settings.glitchtip_api_token,
        settings.glitchtip_url,
        settings.glitchtip_links,
    )
    if token is None or url is None or links is None or spool is None:
        return None, None
    in_step = CardsInStep(
        spool.sent, outbox, origin=links, escalation=escalation, metrics=metrics, clock=clock
    )
    snoozing = Snoozing(
        spool.snoozes,
        spool.watched,
        outbox,
        GlitchTipApi(token, url, timeout=settings.send_timeout),
        events=settings.watching.snooze_events,
        metrics=metrics,
        clock=clock,
    )
    return in_step, snoozing


def _watcher(
    settings: Settings,
    spool: Spool | None,
    metrics: Metrics,
    clock: Clock,
    post: Callable[[Watched, Trend], None],
    in_step: CardsInStep | None,
    snoozing: Snoozing | None,
) -> Watcher | None:
    """With GLITCHTIP_API_TOKEN and a spool: the watcher of the issues the relay alerted on."""
    token, url = settings.glitchtip_api_token, settings.glitchtip_url
    if token is None or url is None or spool is None:
        return None
    return Watcher(
        spool.watched,
        GlitchTipApi(token, url, timeout=CALL_TIMEOUT),
        post,
        every=settings.watching.every,
        min_events=settings.watching.min_events,
        glitchtip_links=settings.glitchtip_links,
        metrics=metrics,
        follow=(lambda states, at: in_step.follow(states, asked_at=at)) if in_step else None,
        snoozing=snoozing,
        clock=clock,
        look_every=settings.timing.poll_interval,
    )


def _post_escalating(webhooks: RoutedWebhooks, issue: Watched, found: Trend) -> None:
    """An escalating issue as a webhook of its own: routes, silences and mentions apply."""
    payload = {"alias": "GlitchTip", "text": "GlitchTip Alert", **issue.alert}
    where = Destination(parse_chat_id(issue.chat) or issue.chat, issue.thread)
    escalating = {"count": found.last_hour, "spark": found.sparkline}
    webhooks.take(payload, where, time.monotonic(), also={"escalating": escalating})


def _upkeep(
    outgoing: Outgoing,
    silencing: Silencing,
    escalation: Escalation,
    summaries: DailySummaries | None,
) -> Callable[[], None]:
    """The dispatcher's upkeep, once a second: old records forgotten, silences that ran out
    ended (each at most as often as it asks for), escalation steps that are due fired, daily
    summaries whose time has come posted."""

    def upkeep() -> None:
        outgoing.tidy()
        silencing.sweep()
        escalation.fire_due()
        if summaries is not None:
            summaries.upkeep()

    return upkeep


def _daily_summaries(
    settings: Settings, spool: Spool | None, clock: Clock
) -> DailySummaries | None:
    """With a spool and a route that says `summary`: the daily summaries."""
    places = settings.routes.summaries(settings.default_destination)
    if spool is None or not places:
        return None
    zone = ZoneInfo(settings.timezone)
    return DailySummaries(places, spool.summaries, spool.watched, zone=zone, clock=clock)


def _issue_lookups(settings: Settings, metrics: Metrics, shared: Spool) -> IssueLookups | None:
    """With GLITCHTIP_API_TOKEN, unless RELAY_DETAILS_BUDGET=off: what reads issues' details."""
    token, glitchtip_url = settings.glitchtip_api_token, settings.glitchtip_url
    if token is None or glitchtip_url is None or settings.details_budget is None:
        return None
    api = GlitchTipApi(token, glitchtip_url, timeout=CALL_TIMEOUT)
    return IssueLookups(
        api.details,
        budget=settings.details_budget,
        count=metrics.glitchtip_lookup,
        health=shared.glitchtip_health,
    )


def _health_and_metrics(
    spool: Spool | None, local: LocalSpool | None, queues: list[Queue], probe_interval: float
) -> tuple[Health, Metrics]:
    """Telegram's health, kept in the spool when there is one (every process shares it), and
    the counters, with the gauges read from both."""
    if spool is None:
        health = Health(MemoryHealthStore(), queues=queues, probe_interval=probe_interval)
        return health, Metrics(SpoolGauges(None, health))
    health = Health(spool.health, queues=queues, probe_interval=probe_interval)
    metrics = Metrics(SpoolGauges(spool.admin, health, spool.silences))
    if local is not None:
        metrics.add_gauges(LocalSpoolGauge(local.spool.admin))
    spool.count_lock_waits(metrics.lock_wait)
    return health, metrics


def _acting_from_the_chat(
    settings: Settings,
    spool: Spool | None,
    telegram: Telegram,
    outbox: Outbox,
    metrics: Metrics,
    clock: Clock,
    silencing: Silencing,
    escalation: Escalation,
    snoozing: Snoozing | None,
) -> tuple[Handle | None, Poller | None]:
    """With GLITCHTIP_API_TOKEN (and a spool to keep the sent messages in): what handles each
    update, a press or a reply, and with TELEGRAM_UPDATES=poll this process's poller for them."""
    token, glitchtip_url = settings.glitchtip_api_token, settings.glitchtip_url
    if token is None or glitchtip_url is None or spool is None:
        return None, None
    team = Team(
        store=spool.sent,
        glitchtip=GlitchTipApi(token, glitchtip_url, timeout=settings.send_timeout),
        allowed_users=settings.action_user_ids,
        words=words_for(settings.language),
        metrics=metrics,
        clock=clock,
    )
    route = route_updates(
        Presses(
            team, telegram, outbox, silencing=silencing, escalation=escalation, snoozing=snoozing
        ),
        Replies(team, outbox, bot_id=bot_id(settings.telegram_bot_token)),
    )
    if settings.telegram_updates != "poll":
        return route, None
    poller = Poller(
        client=TelegramClient(settings.telegram_api_url, settings.telegram_bot_token),
        lease=spool.poller_lease,
        handle=route,
        attempt_timeout=settings.send_timeout,
        clock=clock,
        timing=settings.timing,
    )
    return route, poller


def bot_id(token: str) -> int | None:
    """The bot's own user id: the part of its token before the colon."""
    head = token.partition(":")[0]
    return int(head) if head.isdigit() else None


def start_background_work(app: object) -> None:
    """Start sending waiting alerts from this process (gunicorn's post_worker_init): those
    due for a retry or their chat's turn, and those a stopped or crashed process left; and,
    with TELEGRAM_UPDATES=poll, be ready to read the presses on their buttons."""
    relay = relay_of(app)
    if relay is not None:
        relay.dispatcher.start()
        if relay.poller is not None:
            relay.poller.start()
        if relay.setup is not None:
            relay.setup.start()
        if relay.watcher is not None:
            relay.watcher.start()
    else:
        logging.getLogger(__name__).warning(
            "the WSGI app is not relay_app's own (%s): alerts left in the spool by an earlier "
            "process will not be taken up by this worker",
            type(app).__name__,
        )


def stop_background_work(app: object) -> None:
    """Stop deliberately (gunicorn's worker_exit hook): the poller first, so another process
    takes over at once (Poller.shutdown), then Dispatcher.shutdown."""
    relay = relay_of(app)
    if relay is not None:
        if relay.poller is not None:
            relay.poller.shutdown()
        if relay.setup is not None:
            relay.setup.shutdown()
        if relay.watcher is not None:
            relay.watcher.shutdown()
        relay.dispatcher.shutdown()
        if relay.lookups is not None:
            relay.lookups.shutdown()
