"""GLITCHTIP_API_TOKEN, GLITCHTIP_URL, GLITCHTIP_PUBLIC_URL and GLITCHTIP_ORGANIZATIONS:
what GlitchTip's capability reads of the environment (docs/operating.md). Its webhook needs none
of them: the token (event:write) puts buttons under its issues and goes to GLITCHTIP_URL alone,
and only issues whose links are under GLITCHTIP_PUBLIC_URL (else GLITCHTIP_URL), of
GLITCHTIP_ORGANIZATIONS when it is set, get them. Read with every other variable, as the
capability declares them (`GLITCHTIP_SETTINGS`), every problem in one error with theirs."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from ..message.subjects import origin_of
from ..operating.env_values import ConfigError, base_url, credential_free
from ..operating.settings_of import SettingsOf

T = TypeVar("T")


@dataclass(frozen=True)
class GlitchTipConfig:
    api_token: str | None = field(default=None, repr=False)
    # Where the relay reaches GlitchTip's API, the one place its token goes.
    url: str | None = None
    public_url: str | None = None
    # The organizations whose issues get buttons and links' cards; None: any the token reaches
    # (GlitchTip's webhook signs nothing, and names any link).
    organizations: frozenset[str] | None = None

    @property
    def links(self) -> str | None:
        """The origin GlitchTip's issue links must have for an issue to get buttons."""
        public = self.public_url or self.url
        return origin_of(public) if public is not None else None


def glitchtip_from_env(environ: Mapping[str, str]) -> GlitchTipConfig | None:
    """The four variables, every problem in them reported at once; None when none is set."""
    problems: list[ConfigError] = []

    def read(reader: Callable[[], T | None]) -> T | None:
        try:
            return reader()
        except ConfigError as exc:
            problems.append(exc)
            return None

    token = read(lambda: _glitchtip_token(environ))
    config = GlitchTipConfig(
        api_token=token,
        url=read(lambda: _glitchtip_url(environ, token)),
        public_url=read(lambda: _glitchtip_public_url(environ)),
        organizations=read(lambda: _glitchtip_organizations(environ)),
    )
    if problems:
        raise ConfigError.gathered(problems)
    return None if config == GlitchTipConfig() else config


_API_TOKEN = re.compile(r"[0-9a-fA-F]{64}")


def _glitchtip_token(environ: Mapping[str, str]) -> str | None:
    """GLITCHTIP_API_TOKEN. Never echoed."""
    name = "GLITCHTIP_API_TOKEN"
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    if not _API_TOKEN.fullmatch(raw):
        raise ConfigError(
            name,
            f"is not a GlitchTip API token: GlitchTip's are 64 hex characters, this is "
            f"{len(raw)} characters{'' if raw.isascii() else ', not all of them ASCII'}; copy "
            "it from Profile → Auth Tokens in GlitchTip",
        )
    return raw


def _glitchtip_url(environ: Mapping[str, str], glitchtip_token: str | None) -> str | None:
    """GLITCHTIP_URL: where the relay reaches GlitchTip's API, the one place its token goes.
    Required with the token: a token sent wherever an alert's link pointed would go to any
    host whoever knows the webhook URL names."""
    name = "GLITCHTIP_URL"
    url = credential_free(
        name, base_url(environ, name, "for example https://glitchtip.example.org")
    )
    if url is None and glitchtip_token is not None:
        raise ConfigError(
            name,
            "is not set, and GLITCHTIP_API_TOKEN is: set it to the address where the relay "
            "reaches GlitchTip (https://glitchtip.example.org, or http://web:8000 beside it in "
            "Docker); the token is sent there and nowhere else",
        )
    return url


def _glitchtip_public_url(environ: Mapping[str, str]) -> str | None:
    """GLITCHTIP_PUBLIC_URL: the address in GlitchTip's issue links (its GLITCHTIP_DOMAIN), when
    the relay reaches GlitchTip by another (GLITCHTIP_URL)."""
    name = "GLITCHTIP_PUBLIC_URL"
    return credential_free(name, base_url(environ, name, "set it to GlitchTip's GLITCHTIP_DOMAIN"))


_ORG_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def _glitchtip_organizations(environ: Mapping[str, str]) -> frozenset[str] | None:
    """GLITCHTIP_ORGANIZATIONS: the slugs of the organizations the relay acts in, comma
    separated; None when unset (any the token reaches)."""
    name = "GLITCHTIP_ORGANIZATIONS"
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    slugs = [slug.strip() for slug in raw.split(",") if slug.strip()]
    wrong = [slug for slug in slugs if not _ORG_SLUG.fullmatch(slug)]
    if not slugs or wrong:
        raise ConfigError(
            name,
            f"{(wrong or [raw])[0]!r} is not an organization's slug: give the slugs in GlitchTip's"
            " links (https://glitchtip.example.org/<slug>/issues/4), comma separated",
        )
    return frozenset(slugs)


def _secrets(config: GlitchTipConfig) -> tuple[str, ...]:
    return (config.api_token,) if config.api_token else ()


GLITCHTIP_SETTINGS: SettingsOf[GlitchTipConfig] = SettingsOf(
    "glitchtip",
    glitchtip_from_env,
    token=lambda config: config.api_token,
    token_name="GLITCHTIP_API_TOKEN",  # noqa: S106 (a variable's name, not a token)
    secrets=_secrets,
)
