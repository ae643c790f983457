"""Each source the relay serves, and what its variables enable, in one line: the start-up
summary's (summary.py) and `relay-app check`'s (selfcheck.py)."""

from __future__ import annotations

from .config import Settings


def sources(settings: Settings) -> str:
    """Each source, and what its variables enable: 'GlitchTip: alerts, buttons, details and the
    watcher (https://gt.example.org); Sentry off (no SENTRY_CLIENT_SECRET); presses:
    TELEGRAM_UPDATES=poll'."""
    where = f" ({settings.glitchtip_url})" if settings.glitchtip_url is not None else ""
    if settings.glitchtip_api_token is not None:
        glitchtip = f"GlitchTip: alerts, buttons, details and the watcher{where}"
    else:
        glitchtip = f"GlitchTip: alerts only{where} (no GLITCHTIP_API_TOKEN: no buttons)"
    sentry = settings.sentry
    if sentry is None:
        said = "Sentry off (no SENTRY_CLIENT_SECRET)"
    elif sentry.api_token is not None:
        said = f"Sentry: signed alerts, buttons and details ({sentry.url})"
    else:
        said = f"Sentry: signed alerts only ({sentry.url}; no SENTRY_API_TOKEN: no buttons)"
    presses = (
        f"presses: TELEGRAM_UPDATES={settings.telegram_updates}"
        if settings.acts_on_issues
        else "no presses (no source's token)"
    )
    return f"{glitchtip}; {said}; {presses}"
