"""SENTRY_CLIENT_SECRET, SENTRY_API_TOKEN and SENTRY_URL: Sentry as a second source of alerts
(docs/sentry.md). The client secret of a Sentry internal integration turns on `POST
/sentry/webhook`, whose requests it signs; its token puts buttons under Sentry's issues and
goes to SENTRY_URL alone (sentry.io's region hosts are asked of it: sentry/api.py). Read with
every other variable, as Sentry's capability declares them (`SENTRY_SETTINGS`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..message.subjects import origin_of
from ..operating.env_values import ConfigError, base_url, credential_free
from ..operating.settings_of import SettingsOf

DEFAULT_SENTRY_URL = "https://sentry.io"
# Sentry's client secrets and internal integration tokens are 64 hex characters; older tokens
# and organization tokens (`sntrys_…`) differ, so only what cannot be one is refused.
_MIN_SECRET = 16
_MAX_SECRET = 512


@dataclass(frozen=True)
class SentryConfig:
    client_secret: str = field(repr=False)
    api_token: str | None = field(default=None, repr=False)
    url: str = DEFAULT_SENTRY_URL


def sentry_from_env(environ: Mapping[str, str]) -> SentryConfig | None:
    """The three variables, every problem in them reported at once; None when none is set."""
    problems: list[ConfigError] = []
    secret = _secret(environ, "SENTRY_CLIENT_SECRET", problems)
    token = _secret(environ, "SENTRY_API_TOKEN", problems)
    try:
        url = credential_free(
            "SENTRY_URL",
            base_url(environ, "SENTRY_URL", f"leave it unset for {DEFAULT_SENTRY_URL}"),
        )
    except ConfigError as exc:
        problems.append(exc)
        url = None
    if secret is None and (token is not None or url is not None) and not problems:
        problems.append(
            ConfigError(
                "SENTRY_CLIENT_SECRET",
                "is not set, and the other SENTRY_ variables are: Sentry's webhooks are refused "
                "without it. Copy the Client Secret from Settings → Custom Integrations → your "
                "internal integration in Sentry (docs/sentry.md)",
            )
        )
    if problems:
        raise ConfigError.gathered(problems)
    if secret is None:
        return None
    return SentryConfig(secret, token, url or DEFAULT_SENTRY_URL)


def _secret(environ: Mapping[str, str], name: str, problems: list[ConfigError]) -> str | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isascii() or not raw.isprintable() or " " in raw:
        problems.append(ConfigError(name, "holds spaces or characters no Sentry secret has"))
        return None
    if not _MIN_SECRET <= len(raw) <= _MAX_SECRET:
        problems.append(
            ConfigError(
                name,
                f"is {len(raw)} characters, not one of Sentry's (its client secrets and tokens "
                "are 64); copy it again from your internal integration in Sentry",
            )
        )
        return None
    return raw


def _secrets(config: SentryConfig) -> tuple[str, ...]:
    return tuple(value for value in (config.client_secret, config.api_token) if value)


SENTRY_SETTINGS: SettingsOf[SentryConfig] = SettingsOf(
    "sentry",
    sentry_from_env,
    token=lambda config: config.api_token,
    token_name="SENTRY_API_TOKEN",  # noqa: S106 (a variable's name, not a token)
    secrets=_secrets,
)


def sentry_links(config: SentryConfig | None) -> str | None:
    """The origin Sentry's issue links have (SENTRY_URL's), when Sentry is a source."""
    return origin_of(config.url) if config is not None else None
