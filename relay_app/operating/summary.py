"""The relay's start-up summary: one line, said by gunicorn's master when it starts and again on
each reload, holding what an operator asks first when alerts do not arrive (which version runs,
where it listens, where it sends, where it keeps alerts, through which proxy). No secret is in
it: not the token, not the webhook secret, not a password in a URL."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata

from ..core.logs import redacted_url
from .config import Settings
from .selfcheck import proxy_for
from .sources import SaysState, sources

DISTRIBUTION = "relay-app"


def version() -> str:
    """The installed relay's version; 'unknown' when it runs from a tree that was never
    installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def _spool(settings: Settings) -> str:
    if settings.spool_url is None and settings.spool_path is None:
        return "no spool (RELAY_SPOOL_PATH=off: alerts wait in memory only)"
    if settings.spool_url is None:
        return f"spool {settings.spool_path}"
    if settings.local_spool_path is None:
        return f"spool {redacted_url(settings.spool_url)}"
    return (
        f"spool {redacted_url(settings.spool_url)} (while it stalls, {settings.local_spool_path})"
    )


def summary_line(
    settings: Settings, listening: Sequence[str], said: Sequence[SaysState] = ()
) -> str:
    """What the relay is about to do, in one line. `listening`: the addresses gunicorn binds
    (its -b, its config or RELAY_BIND), which the webhook and the admin endpoints share unless
    RELAY_ADMIN_BIND is one of them. `said`: what the capabilities that are sources say of
    their state (the registry's `says`)."""
    destination = settings.default_destination
    chat = f"chat {destination.chat}" + (
        f" topic {destination.thread}" if destination.thread is not None else ""
    )
    if settings.allowed_chat_ids:
        chat += f" (and {len(settings.allowed_chat_ids)} more allowed by ?chat_id=)"
    spool = _spool(settings)
    api = redacted_url(settings.telegram_api_url)
    proxy = proxy_for(settings.telegram_api_url)
    telegram = f"Telegram at {api}" + (f" through the proxy {proxy}" if proxy else " directly")
    routes = settings.routes
    # The routes in force: after a reload that refused a broken file, the last good one's.
    count = len(routes.routes)
    routed = f"; {count} route{'' if count == 1 else 's'} from {routes.source}" if routes else ""
    return (
        f"relay_app {version()}: listening on {', '.join(listening)}; {chat}; {spool}; "
        f"language {settings.language}; {sources(settings, said)}; {telegram}{routed}"
    )
