"""The relay's configuration: environment variables in, one frozen Settings out.

A relay that starts half-configured loses alerts quietly, so every problem is fatal at start and
names the variable to fix. Secret values are never echoed back in these messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from ..core.logs import LogFormat
from ..core.routing import ChatId, Destination, chat_key, parse_chat_id
from ..core.timing import PRODUCTION, Timing
from ..routes import NO_ROUTES, RouteTable
from ..words import LANGUAGES
from .binds import DEFAULT_BIND, admin_bind_from_env, bind_from_env
from .env_values import (
    ConfigError,
    base_url,
    integer,
    listed,
    number,
    port_of,
    required,
    switch,
    time_zone,
)
from .routes_file import NOTHING_IN_FORCE, RoutesInForce, routes_from_env
from .settings_of import SettingsOf, Theirs, read_theirs, sources_named
from .spool_env import (
    DEFAULT_SPOOL_PATH,
    local_spool_path_from_env,
    spool_path_from_env,
    spool_url_from_env,
)
from .watch_env import DEFAULT_WATCHING, Watching, watching_from_env

DEFAULT_TELEGRAM_API_URL = "https://api.telegram.org"

# GlitchTip gives up on us after 10 s; one attempt must leave time to answer.
MAX_SEND_TIMEOUT = 9.0

# A few hundred milliseconds: a look-up in GlitchTip's API on the same network takes tens.
DEFAULT_DETAILS_BUDGET = 0.3
MAX_DETAILS_BUDGET = 2.0

T = TypeVar("T")
_BOT_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]{20,}")
_URL_SAFE = re.compile(r"[A-Za-z0-9._~-]+")
MIN_SECRET_LENGTH = 16
# What a variable that failed stands in for while the others are read.
_NO_CHAT: ChatId = 0
_DEFAULT_SPOOL: str | None = DEFAULT_SPOOL_PATH

UpdatesMode = Literal["poll", "webhook", "off"]
_UPDATES_MODES: dict[str, UpdatesMode] = {"poll": "poll", "webhook": "webhook", "off": "off"}

_SECRET_HINT = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"  # noqa: S105 (a hint, not a password)


__all__ = [
    "DEFAULT_BIND",
    "ChatId",
    "ConfigError",
    "Settings",
    "admin_bind_from_env",
    "bind_from_env",
    "language_from_env",
    "log_format_from_env",
    "metrics_enabled",
    "spool_path_from_env",
    "spool_url_from_env",
]


@dataclass(frozen=True)
class Settings:
    telegram_bot_token: str = field(repr=False)
    telegram_chat_id: ChatId
    webhook_secret: str = field(repr=False)
    telegram_thread_id: int | None = None
    telegram_api_url: str = DEFAULT_TELEGRAM_API_URL
    send_timeout: float = 5.0
    retry_attempts: int = 3
    retry_wait: float = 30.0
    retry_max_age: float = 21600.0
    # None when RELAY_SPOOL_PATH=off, or when the spool is in PostgreSQL.
    spool_path: str | None = DEFAULT_SPOOL_PATH
    # RELAY_SPOOL_URL: the spool in PostgreSQL, shared by every relay pointed at it.
    spool_url: str | None = field(default=None, repr=False)
    # RELAY_LOCAL_SPOOL_PATH: with spool_url, where alerts wait that it cannot take in time.
    local_spool_path: str | None = None
    spool_max_pending: int = 10000
    late_after: float = 60.0
    # RELAY_TIMEZONE: the routes' quiet hours' zone where a route names none.
    timezone: str = "UTC"
    # Chats a webhook URL may name with ?chat_id= besides the default one, as chat_key()s.
    allowed_chat_ids: frozenset[str] = frozenset()
    # Merge alerts waiting for the same destination into digest messages.
    coalesce: bool = True
    # Send a dead letter once more when its chat accepts a message again, if it died only
    # because its attempts that may have reached Telegram ran out.
    second_chance: bool = True
    # Serve GET /metrics (Prometheus).
    metrics: bool = True
    log_format: LogFormat = "text"
    # Where gunicorn listens for GlitchTip (read by gunicorn.conf.py, checked here with the rest).
    bind: str = DEFAULT_BIND
    # A second listener for /metrics, /readyz and /healthz, which then leave the webhook's.
    admin_bind: str | None = None
    # With the token, how long an alert waits for its issues' details from GlitchTip's API;
    # None (RELAY_DETAILS_BUDGET=off): no look-ups.
    details_budget: float | None = DEFAULT_DETAILS_BUDGET
    # How the presses on those buttons reach the relay.
    telegram_updates: UpdatesMode = "off"
    # Telegram user ids that may press them, and mute and comment from the chat; empty: anyone.
    action_user_ids: frozenset[int] = frozenset()
    # The language of every word the relay writes to the chat (words/); logs stay English.
    language: str = "en"
    # RELAY_TIME_SCALE: every interval the relay waits on, times this (tests, drills).
    time_scale: float = 1.0
    routes: RouteTable = NO_ROUTES  # RELAY_ROUTES (routes_file.py)
    # What gunicorn's master made of that file: when it was accepted, whether it is refused now.
    routes_in_force: RoutesInForce = NOTHING_IN_FORCE
    watching: Watching = DEFAULT_WATCHING  # with the token: the watcher (watch_env.py)
    # What the capabilities read of the environment themselves (GlitchTip's GLITCHTIP_*
    # variables, glitchtip/settings.py; Sentry's SENTRY_*, sentry/settings.py), each with what
    # read it; one whose variables are unset is absent.
    theirs: tuple[tuple[SettingsOf[Any], object], ...] = ()
    # RELAY_CALENDAR_SECRET: the rotations as calendar feeds at /calendar/<secret>/<name>.ics;
    # None: no feed.
    calendar_secret: str | None = field(default=None, repr=False)

    @property
    def default_destination(self) -> Destination:
        return Destination(self.telegram_chat_id, self.telegram_thread_id, default=True)

    @property
    def timing(self) -> Timing:
        """Every interval the relay waits on (core/timing.py). Telegram's own pace stays
        whatever the scale, unless the relay talks to a stand-in (TELEGRAM_API_URL)."""
        telegram = urlsplit(DEFAULT_TELEGRAM_API_URL).hostname
        own = urlsplit(self.telegram_api_url).hostname == telegram
        return PRODUCTION.scaled(self.time_scale, keep_telegrams_pace=own)

    @property
    def admin_port(self) -> int | None:
        return port_of(self.admin_bind) if self.admin_bind is not None else None

    def of(self, settings_of: SettingsOf[T]) -> T | None:
        """What a capability read of the environment (`settings_of`'s value); None when none of
        its variables is set."""
        found = next((value for read, value in self.theirs if read.name == settings_of.name), None)
        return found  # type: ignore[return-value]  # kept by the reader that reads it as T

    @property
    def acts_on_issues(self) -> bool:
        """Whether an issue tracker's token is set (a source's capability's: GlitchTip's,
        Sentry's): its issues get buttons, and the chat is listened to."""
        return any(read.token(value) is not None for read, value in self.theirs)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values no log line or command output may show (the database password is
        registered by the PostgreSQL spool, which reads it out of RELAY_SPOOL_URL)."""
        values = (
            self.telegram_bot_token,
            self.webhook_secret,
            self.calendar_secret,
        )
        theirs = (secret for read, value in self.theirs for secret in read.secrets(value))
        return tuple(value for value in (*values, *theirs) if value)

    @staticmethod
    def destination_from_env(environ: Mapping[str, str]) -> Destination:
        """TELEGRAM_CHAT_ID and TELEGRAM_THREAD_ID alone: where alerts for the default chat go
        now (a tool's question, without the rest of the variables). Raises ConfigError."""
        thread = _optional_positive_int(environ, "TELEGRAM_THREAD_ID")
        return Destination(_chat_id(environ), thread, default=True)

    @classmethod
    def from_env(cls, environ: Mapping[str, str], theirs: Sequence[SettingsOf[Any]]) -> Settings:
        """Every variable read, the core's and those the capabilities read themselves
        (`theirs`: the registry's, capabilities.py); every problem found is reported at once,
        in one ConfigError."""
        problems: list[ConfigError] = []

        def read(reader: Callable[[], T], fallback: T) -> T:
            try:
                return reader()
            except ConfigError as exc:
                problems.append(exc)
                return fallback

        bind = read(lambda: bind_from_env(environ), DEFAULT_BIND)
        admin_bind = read(lambda: admin_bind_from_env(environ, bind), None)
        found = read(lambda: read_theirs(environ, theirs), Theirs(()))
        # Whose token puts buttons under their issues, in the registry's order: GlitchTip's
        # first.
        token_name = found.token_name
        token_names = " or ".join(found.could_be) or "a source's API token"
        settings = cls(
            telegram_bot_token=read(lambda: bot_token_from_env(environ), ""),
            telegram_chat_id=read(lambda: _chat_id(environ), _NO_CHAT),
            webhook_secret=read(lambda: _webhook_secret(environ), ""),
            calendar_secret=read(lambda: _calendar_secret(environ), None),
            telegram_thread_id=read(
                lambda: _optional_positive_int(environ, "TELEGRAM_THREAD_ID"), None
            ),
            telegram_api_url=read(lambda: api_url_from_env(environ), DEFAULT_TELEGRAM_API_URL),
            send_timeout=read(
                lambda: number(
                    environ,
                    "RELAY_SEND_TIMEOUT",
                    default=5.0,
                    low=0.1,
                    high=MAX_SEND_TIMEOUT,
                    why="GlitchTip waits at most 10 s for our answer",
                ),
                5.0,
            ),
            retry_attempts=read(
                lambda: integer(environ, "RELAY_RETRY_ATTEMPTS", default=3, low=1, high=100), 3
            ),
            # Not below 0.1 s: an attempt refused at once would otherwise spin for hours.
            retry_wait=read(
                lambda: number(environ, "RELAY_RETRY_WAIT", default=30.0, low=0.1, high=3600.0),
                30.0,
            ),
            retry_max_age=read(
                lambda: number(
                    environ, "RELAY_RETRY_MAX_AGE", default=21600.0, low=1.0, high=30 * 86400.0
                ),
                21600.0,
            ),
            spool_path=read(lambda: spool_path_from_env(environ), _DEFAULT_SPOOL),
            spool_url=read(lambda: spool_url_from_env(environ), None),
            local_spool_path=read(lambda: local_spool_path_from_env(environ), None),
            spool_max_pending=read(
                lambda: integer(
                    environ, "RELAY_SPOOL_MAX_PENDING", default=10000, low=1, high=1_000_000
                ),
                10000,
            ),
            late_after=read(
                lambda: number(environ, "RELAY_LATE_AFTER", default=60.0, low=1.0, high=86400.0),
                60.0,
            ),
            timezone=read(lambda: time_zone(environ, "RELAY_TIMEZONE"), "UTC"),
            watching=read(lambda: watching_from_env(environ), DEFAULT_WATCHING),
            allowed_chat_ids=read(lambda: _allowed_chat_ids(environ), frozenset()),
            coalesce=read(lambda: switch(environ, "RELAY_COALESCE", default=True), True),
            second_chance=read(lambda: switch(environ, "RELAY_SECOND_CHANCE", default=True), True),
            metrics=read(lambda: metrics_enabled(environ), True),
            log_format=read(lambda: log_format_from_env(environ), "text"),
            bind=bind,
            admin_bind=admin_bind,
            details_budget=read(lambda: _details_budget(environ), None),
            telegram_updates=read(
                lambda: _updates_mode(environ, token_name is not None, token_names), "off"
            ),
            action_user_ids=read(lambda: _user_ids(environ), frozenset()),
            language=read(lambda: language_from_env(environ), "en"),
            time_scale=read(
                lambda: number(environ, "RELAY_TIME_SCALE", default=1.0, low=0.01, high=1.0), 1.0
            ),
            routes=read(lambda: routes_from_env(environ, sources_named(theirs)), NO_ROUTES),
            routes_in_force=RoutesInForce.from_env(environ),
            theirs=found.values,
        )
        if token_name is not None and settings.spool_path is None and not settings.spool_url:
            problems.append(
                ConfigError(
                    token_name,
                    "buttons need the spool, which keeps what each one acts on, and "
                    "RELAY_SPOOL_PATH=off has none: set RELAY_SPOOL_PATH (or RELAY_SPOOL_URL), or "
                    f"unset {token_name}",
                )
            )
        if problems:
            raise ConfigError.gathered(problems)
        if settings.spool_url is not None:
            # One spool: the database's. The file's default does not apply.
            settings = replace(settings, spool_path=None)
        return settings


def language_from_env(environ: Mapping[str, str]) -> str:
    """RELAY_LANGUAGE: the chat's language."""
    raw = environ.get("RELAY_LANGUAGE", "").strip().lower() or "en"
    if raw not in LANGUAGES:
        known = " or ".join(sorted(LANGUAGES))
        raise ConfigError(
            "RELAY_LANGUAGE", f"{raw!r} is not a language the relay speaks; use {known}"
        )
    return raw


def _details_budget(environ: Mapping[str, str]) -> float | None:
    """RELAY_DETAILS_BUDGET: seconds an alert may wait for its issues' details, or off."""
    if environ.get("RELAY_DETAILS_BUDGET", "").strip().lower() == "off":
        return None
    return number(
        environ,
        "RELAY_DETAILS_BUDGET",
        default=DEFAULT_DETAILS_BUDGET,
        low=0.0,
        high=MAX_DETAILS_BUDGET,
        why="the alert itself matters more: it waits for details no longer (or use off)",
    )


def metrics_enabled(environ: Mapping[str, str]) -> bool:
    """RELAY_METRICS, which gunicorn.conf.py reads before anything else too."""
    return switch(environ, "RELAY_METRICS", default=True)


def log_format_from_env(environ: Mapping[str, str]) -> LogFormat:
    """RELAY_LOG_FORMAT, which gunicorn.conf.py reads to configure gunicorn's own logs."""
    name = "RELAY_LOG_FORMAT"
    raw = environ.get(name, "").strip().lower()
    if raw in ("", "text"):
        return "text"
    if raw == "json":
        return "json"
    raise ConfigError(name, f"{raw!r} is not a log format; use text (the default) or json")


def _updates_mode(environ: Mapping[str, str], tokened: bool, token_names: str) -> UpdatesMode:
    """TELEGRAM_UPDATES; `tokened`: whether a tracker's token is set (`token_names`: which
    could be)."""
    name = "TELEGRAM_UPDATES"
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return "poll" if tokened else "off"
    mode = _UPDATES_MODES.get(raw)
    if mode is None:
        raise ConfigError(name, f"{raw!r} is not one of poll, webhook or off")
    if mode != "off" and not tokened:
        raise ConfigError(
            name,
            f"{raw} reads presses on the alerts' buttons, and there are none without "
            f"{token_names}: set one, or leave TELEGRAM_UPDATES unset",
        )
    return mode


def _user_ids(environ: Mapping[str, str]) -> frozenset[int]:
    ids = listed(
        environ,
        "TELEGRAM_ACTION_USER_IDS",
        lambda raw: int(raw) if raw.isascii() and raw.isdigit() and int(raw) > 0 else None,
        "is not a Telegram user id; list numeric user ids separated by commas, like "
        "12345678,87654321",
    )
    return frozenset(ids)


def bot_token_from_env(environ: Mapping[str, str]) -> str:
    """TELEGRAM_BOT_TOKEN, which `relay-app chats` reads without the rest."""
    name = "TELEGRAM_BOT_TOKEN"
    token = required(environ, name, "set it to the token @BotFather gave your bot")
    if not _BOT_TOKEN.fullmatch(token):
        raise ConfigError(
            name,
            "does not look like a bot token (expected '<digits>:<secret>' as @BotFather prints it)",
        )
    return token


def _chat_id(environ: Mapping[str, str]) -> ChatId:
    name = "TELEGRAM_CHAT_ID"
    raw = required(
        environ, name, "set it to the numeric chat id (negative for groups) or @channelname"
    )
    chat = parse_chat_id(raw)
    if chat is None:
        raise ConfigError(
            name,
            f"{raw!r} is neither an integer chat id (like -1001234567890) nor an @channelname",
        )
    return chat


def _allowed_chat_ids(environ: Mapping[str, str]) -> frozenset[str]:
    chats: list[ChatId] = listed(
        environ,
        "TELEGRAM_ALLOWED_CHAT_IDS",
        parse_chat_id,
        "is neither an integer chat id nor an @channelname; list chat ids separated by "
        "commas, like -1001234567890,-1009876543210",
    )
    return frozenset(chat_key(chat) for chat in chats)


def _calendar_secret(environ: Mapping[str, str]) -> str | None:
    """RELAY_CALENDAR_SECRET, checked as the webhook's; None when it is not set."""
    name = "RELAY_CALENDAR_SECRET"
    secret = environ.get(name, "").strip()
    if not secret:
        return None
    if len(secret) < MIN_SECRET_LENGTH or not _URL_SAFE.fullmatch(secret):
        raise ConfigError(
            name,
            f"must be at least {MIN_SECRET_LENGTH} URL-safe characters "
            f"(letters, digits, '-', '_', '.', '~'); {_SECRET_HINT}",
        )
    if secret == environ.get("RELAY_WEBHOOK_SECRET", "").strip():
        raise ConfigError(
            name,
            "is RELAY_WEBHOOK_SECRET: a calendar's address is shared with calendar apps, which "
            f"must not learn where alerts are posted; {_SECRET_HINT}",
        )
    return secret


def _webhook_secret(environ: Mapping[str, str]) -> str:
    name = "RELAY_WEBHOOK_SECRET"
    secret = required(environ, name, _SECRET_HINT)
    if len(secret) < MIN_SECRET_LENGTH or not _URL_SAFE.fullmatch(secret):
        raise ConfigError(
            name,
            f"must be at least {MIN_SECRET_LENGTH} URL-safe characters "
            f"(letters, digits, '-', '_', '.', '~'); {_SECRET_HINT}",
        )
    return secret


def _optional_positive_int(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(name, f"{raw!r} is not a positive integer (the forum topic's id)")
    return int(raw)


def api_url_from_env(environ: Mapping[str, str]) -> str:
    """TELEGRAM_API_URL, which `relay-app chats` reads without the rest."""
    url = base_url(environ, "TELEGRAM_API_URL", f"leave it unset for {DEFAULT_TELEGRAM_API_URL}")
    return url or DEFAULT_TELEGRAM_API_URL
