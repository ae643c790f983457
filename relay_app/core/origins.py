"""Where a URL points, read once with urllib3's parser (the one `requests` sends with, so what
is read here is where a request would go): its origin, the scheme, host and port a browser
compares, for the relay's decisions about where a token may go and whose links an issue's are
(docs/security.md).

A URL with a user or password names no origin here, nor does one named as an origin alone
(`bare`: a region host, a base URL) with a fragment: `https://x@host` and `https://sentry.io#@evil`
are forms that read one way and send another, and no tracker writes them. A link people paste
may end in a fragment (`#events`), which goes nowhere."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from urllib3.exceptions import LocationParseError
from urllib3.util import Url, parse_url

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    scheme: str  # 'http' or 'https'
    host: str  # lower case; an IPv6 address in brackets
    port: int  # the scheme's default when the URL names none

    def __str__(self) -> str:
        shown = "" if self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{self.host}{shown}"

    @property
    def parent_domain(self) -> str | None:
        """The domain a region host of this origin's may be under: the host less its first
        label (`sentry.example.org` → `example.org`), or the host itself when it has two
        (`sentry.io`); None for an address, which has no domain."""
        if _is_address(self.host):
            return None
        labels = self.host.split(".")
        return ".".join(labels[1:]) if len(labels) > 2 else self.host

    def holds(self, other: Origin) -> bool:
        """Whether `other` is this origin's or a host under its parent domain, by the same
        scheme and port: where a region host this origin's tracker names may be."""
        if (other.scheme, other.port) != (self.scheme, self.port):
            return False
        parent = self.parent_domain
        return other.host == self.host or (
            parent is not None and not _is_address(other.host) and other.host.endswith("." + parent)
        )


def origin_of(url: str, *, bare: bool = False) -> Origin | None:
    """The origin of an http(s) URL; None for anything else, and for one with a user or a
    password. `bare`: the URL must be the origin alone (no path but '/', no query, no
    fragment), as a region host is named."""
    try:
        parts = parse_url(url.strip())
    except (LocationParseError, ValueError):
        return None
    scheme, host = (parts.scheme or "").lower(), (parts.host or "").lower().rstrip(".")
    if scheme not in DEFAULT_PORTS or not host or parts.auth is not None:
        return None
    if bare and not _origin_alone(parts):
        return None
    return Origin(scheme, host, parts.port or DEFAULT_PORTS[scheme])


def _origin_alone(parts: Url) -> bool:
    """Whether a URL names its origin and nothing more: no path but '/', no query or fragment."""
    return (parts.path or "/") == "/" and parts.query is None and parts.fragment is None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
