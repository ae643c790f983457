"""The relay as one app holds it: its parts, wired by `relay_app.assemble`, which the views, the
worker's hooks and the tests reach through the Flask app (`relay_of`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import current_app

from ..cards.outgoing import Outgoing
from ..core.lookups import Lookups
from ..core.metrics import Metrics
from ..core.off_thread import OffThread
from ..core.services import Services
from ..core.sources import Sources
from ..delivery.dispatcher import Dispatcher
from ..delivery.job import Jobs
from ..delivery.leadership import Leadership
from ..delivery.outbox import Outbox
from ..intake.attempt import FirstAttempts
from ..intake.hold import Hold
from ..intake.queue import AlertQueue
from ..intake.record import AfterWebhook, LastWebhook
from ..intake.route import RoutedWebhooks
from ..operating.capability import Started
from ..operating.config import Settings
from ..operating.setup_watch import SetupWatch
from ..spool import LocalSpool, Spool
from ..telegram.bot_commands import BotCommand
from ..telegram.poller import Poller
from ..telegram.updates_webhook import Handle
from .misses import Misses

EXTENSION = "relay_app"


@dataclass(frozen=True)
class Relay:
    """The parts of one app that the views, gunicorn's hooks and tests reach."""

    settings: Settings
    # Whose issues an alert's links name (core/sources.py).
    sources: Sources
    alert_queue: AlertQueue
    attempts: FirstAttempts
    dispatcher: Dispatcher
    jobs: Jobs
    metrics: Metrics
    # Where jobs wait: the spool (None: RELAY_SPOOL_PATH=off), beside a spool in PostgreSQL
    # this host's own file (None without), and this process's memory when no disk would.
    spool: Spool | None
    memory: Spool
    outgoing: Outgoing
    # Reading issues' details from GlitchTip for the messages (GLITCHTIP_API_TOKEN).
    lookups: Lookups | None
    # When GlitchTip last reached the relay.
    last_webhook: LastWebhook
    # A webhook taken in: by the routes, each part's alert queued and attempted.
    webhooks: RoutedWebhooks
    # Requests that reach no page: counted, and said once a minute.
    misses: Misses
    local: LocalSpool | None = None
    # The writes to the chat other than alerts (with a spool).
    outbox: Outbox | None = None
    # Silences (with a spool): what holds alerts back from a chat, and ends them.
    silencing: Hold | None = None  # the silences' (a capability's), while they are on
    # What the capabilities provide one another (core/services.py): on call's calls, say.
    services: Services = field(default_factory=Services)
    # Acting on alerts from the chat (a source's token): what handles each of Telegram's
    # updates, posted to the webhook (TELEGRAM_UPDATES=webhook) or polled.
    updates: Handle | None = None
    # What follows a webhook, where a capability provides it (GlitchTip's: the issues an
    # alert counts and does not attach, named).
    after_webhook: AfterWebhook | None = None
    # The threads presses and comments are handled on, and this process's poll for updates.
    acting: OffThread | None = None
    poller: Poller | None = None
    # Whether this process leads the fleet's chores, and their start and stop.
    leadership: Leadership | None = None
    # Asks Telegram at start whether the token and chats work (not with a stand-in Telegram).
    setup: SetupWatch | None = None
    # The capabilities started (operating/capability.py), stopped with the rest.
    running: Started = field(default_factory=Started)
    # The chat's commands, as Telegram lists them (setMyCommands).
    commands: tuple[BotCommand, ...] = ()


def relay_of(app: object) -> Relay | None:
    """The relay inside a WSGI app, or None when it is not relay_app's own (wrapped in
    middleware, say)."""
    extensions = getattr(app, "extensions", None)
    relay = extensions.get(EXTENSION) if isinstance(extensions, dict) else None
    return relay if isinstance(relay, Relay) else None


def current_relay() -> Relay:
    """The relay of the app answering this request."""
    relay = relay_of(current_app)
    assert relay is not None, "the app was made by relay_app.create_app"
    return relay
