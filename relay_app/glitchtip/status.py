"""GlitchTip's state, as the relay says it: its line of `/status` (whether its API answers, is
paused after failing, or is not connected), and its part of the start-up line and of `relay-app
check` (what its variables enable)."""

from __future__ import annotations

from collections.abc import Callable

from ..operating.config import Settings
from ..words import Words
from .health import SpoolGlitchTipHealth
from .settings import GLITCHTIP_SETTINGS


def glitchtip_status(
    health: SpoolGlitchTipHealth, *, connected: bool
) -> Callable[[str, Words], str | None]:
    """`connected`: GLITCHTIP_API_TOKEN is set."""

    def line(chat: str, words: Words) -> str | None:
        if not connected:
            state = "status_glitchtip_off"
        else:
            state = "status_glitchtip_failing" if health.paused() else "status_glitchtip_up"
        return words.word("status_glitchtip").format(state=words.word(state))

    return line


def glitchtip_state(settings: Settings) -> str:
    """What GlitchTip's variables enable: 'GlitchTip: alerts, buttons, details and the watcher
    (https://gt.example.org)'."""
    config = settings.of(GLITCHTIP_SETTINGS)
    url = config.url if config is not None else None
    where = f" ({url})" if url is not None else ""
    if config is not None and config.api_token is not None:
        return f"GlitchTip: alerts, buttons, details and the watcher{where}"
    return f"GlitchTip: alerts only{where} (no GLITCHTIP_API_TOKEN: no buttons)"
