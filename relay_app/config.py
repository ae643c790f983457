"""The relay's configuration: environment variables in, one frozen Settings out.

A relay that starts half-configured loses alerts quietly, so every problem is fatal at start and
names the variable to fix. Secret values are never echoed back in these messages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .logs import LogFormat
from .routing import ChatId, Destination, chat_key, parse_chat_id

DEFAULT_TELEGRAM_API_URL = "https://api.telegram.org"

# GlitchTip gives up on us after 10 s; one attempt must leave time to answer.
MAX_SEND_TIMEOUT = 9.0

DEFAULT_SPOOL_PATH = "relay-spool.sqlite3"
# RELAY_SPOOL_PATH=off: no spool, retries held in memory only (lost with the process).
SPOOL_OFF = "off"

_BOT_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]{20,}")
_URL_SAFE = re.compile(r"[A-Za-z0-9._~-]+")
MIN_SECRET_LENGTH = 16
_SECRET_HINT = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"  # noqa: S105 (a hint, not a password)


class ConfigError(ValueError):
    """A configuration variable is missing or malformed; the relay must not start."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable


__all__ = [
    "ChatId",
    "ConfigError",
    "Settings",
    "log_format_from_env",
    "metrics_enabled",
    "spool_path_from_env",
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
    # None when RELAY_SPOOL_PATH=off.
    spool_path: str | None = DEFAULT_SPOOL_PATH
    spool_max_pending: int = 10000
    late_after: float = 60.0
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

    @property
    def default_destination(self) -> Destination:
        return Destination(self.telegram_chat_id, self.telegram_thread_id)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        return cls(
            telegram_bot_token=_bot_token(environ),
            telegram_chat_id=_chat_id(environ),
            webhook_secret=_webhook_secret(environ),
            telegram_thread_id=_optional_positive_int(environ, "TELEGRAM_THREAD_ID"),
            telegram_api_url=_api_url(environ),
            send_timeout=_number(
                environ,
                "RELAY_SEND_TIMEOUT",
                default=5.0,
                low=0.1,
                high=MAX_SEND_TIMEOUT,
                why="GlitchTip waits at most 10 s for our answer",
            ),
            retry_attempts=_integer(environ, "RELAY_RETRY_ATTEMPTS", default=3, low=1, high=100),
            # Not below 0.1 s: an attempt refused at once would otherwise spin for hours.
            retry_wait=_number(environ, "RELAY_RETRY_WAIT", default=30.0, low=0.1, high=3600.0),
            retry_max_age=_number(
                environ, "RELAY_RETRY_MAX_AGE", default=21600.0, low=1.0, high=30 * 86400.0
            ),
            spool_path=spool_path_from_env(environ),
            spool_max_pending=_integer(
                environ, "RELAY_SPOOL_MAX_PENDING", default=10000, low=1, high=1_000_000
            ),
            late_after=_number(environ, "RELAY_LATE_AFTER", default=60.0, low=1.0, high=86400.0),
            allowed_chat_ids=_allowed_chat_ids(environ),
            coalesce=_switch(environ, "RELAY_COALESCE", default=True),
            second_chance=_switch(environ, "RELAY_SECOND_CHANCE", default=True),
            metrics=metrics_enabled(environ),
            log_format=log_format_from_env(environ),
        )


def metrics_enabled(environ: Mapping[str, str]) -> bool:
    """RELAY_METRICS, which gunicorn.conf.py reads before anything else too."""
    return _switch(environ, "RELAY_METRICS", default=True)


def log_format_from_env(environ: Mapping[str, str]) -> LogFormat:
    """RELAY_LOG_FORMAT, which gunicorn.conf.py reads to configure gunicorn's own logs."""
    name = "RELAY_LOG_FORMAT"
    raw = environ.get(name, "").strip().lower()
    if raw in ("", "text"):
        return "text"
    if raw == "json":
        return "json"
    raise ConfigError(name, f"{raw!r} is not a log format; use text (the default) or json")


def spool_path_from_env(environ: Mapping[str, str]) -> str | None:
    """RELAY_SPOOL_PATH as the service reads it (the CLI reads it the same way)."""
    raw = environ.get("RELAY_SPOOL_PATH", "").strip()
    if not raw:
        return DEFAULT_SPOOL_PATH
    if raw.lower() == SPOOL_OFF:
        return None
    if raw.endswith(("/", os.sep)):
        raise ConfigError(
            "RELAY_SPOOL_PATH", f"{raw!r} names a directory; name a file in it instead"
        )
    return raw


def _required(environ: Mapping[str, str], name: str, hint: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigError(name, f"is not set; {hint}")
    return value


def _bot_token(environ: Mapping[str, str]) -> str:
    name = "TELEGRAM_BOT_TOKEN"
    token = _required(environ, name, "set it to the token @BotFather gave your bot")
    if not _BOT_TOKEN.fullmatch(token):
        raise ConfigError(
            name,
            "does not look like a bot token (expected '<digits>:<secret>' as @BotFather prints it)",
        )
    return token


def _chat_id(environ: Mapping[str, str]) -> ChatId:
    name = "TELEGRAM_CHAT_ID"
    raw = _required(
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
    name = "TELEGRAM_ALLOWED_CHAT_IDS"
    allowed = set()
    for raw in environ.get(name, "").split(","):
        if not raw.strip():
            continue
        chat = parse_chat_id(raw)
        if chat is None:
            raise ConfigError(
                name,
                f"{raw.strip()!r} is neither an integer chat id nor an @channelname; list chat "
                "ids separated by commas, like -1001234567890,-1009876543210",
            )
        allowed.add(chat_key(chat))
    return frozenset(allowed)


def _switch(environ: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(name, f"{raw!r} is not a switch; use 1 or 0")


def _webhook_secret(environ: Mapping[str, str]) -> str:
    name = "RELAY_WEBHOOK_SECRET"
    secret = _required(environ, name, _SECRET_HINT)
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


def _api_url(environ: Mapping[str, str]) -> str:
    name = "TELEGRAM_API_URL"
    raw = environ.get(name, "").strip() or DEFAULT_TELEGRAM_API_URL
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            name, f"{raw!r} is not an http(s) URL; leave it unset for {DEFAULT_TELEGRAM_API_URL}"
        )
    if parts.query or parts.fragment:
        raise ConfigError(name, f"{raw!r} must be a base URL without '?' or '#' parts")
    return raw.rstrip("/")


def _number(
    environ: Mapping[str, str],
    name: str,
    *,
    default: float,
    low: float,
    high: float,
    integer: bool = False,
    why: str = "",
) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    kind = "an integer" if integer else "a number of seconds"
    try:
        value = float(int(raw)) if integer else float(raw)
    except ValueError:
        raise ConfigError(name, f"{raw!r} is not {kind}") from None
    if not low <= value <= high:
        reason = f" ({why})" if why else ""
        raise ConfigError(
            name, f"{raw} is out of range; use {kind} from {low:g} to {high:g}{reason}"
        )
    return value


def _integer(environ: Mapping[str, str], name: str, *, default: int, low: int, high: int) -> int:
    return int(_number(environ, name, default=default, low=low, high=high, integer=True))
