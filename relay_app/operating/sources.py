"""Each source the relay serves, and what its variables enable, in one line: the start-up
summary's (summary.py) and `relay-app check`'s (selfcheck.py). Each source's capability says
its state itself (`Capability.says`: GlitchTip's, Sentry's), off included, so that the line
names what would turn it on."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .config import Settings

# A source's state as a capability says it: 'Sentry off (no SENTRY_CLIENT_SECRET)'.
SaysState = Callable[[Settings], str]


def sources(settings: Settings, said: Sequence[SaysState] = ()) -> str:
    """Each source, and what its variables enable: 'GlitchTip: alerts, buttons, details and the
    watcher (https://gt.example.org); Sentry off (no SENTRY_CLIENT_SECRET); presses:
    TELEGRAM_UPDATES=poll'."""
    presses = (
        f"presses: TELEGRAM_UPDATES={settings.telegram_updates}"
        if settings.acts_on_issues
        else "no presses (no source's token)"
    )
    return "; ".join([*(say(settings) for say in said), presses])
