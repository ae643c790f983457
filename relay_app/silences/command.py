"""`/silences` in the chat: what is held back there now, until when, and by whom. Registered
with the chat's commands when the relay is assembled."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, tzinfo

from ..message.spans import place_time
from ..telegram.bot_commands import Asked, BotCommand
from ..words import Said, Words
from .store import SilenceStore


def silences_command(
    silences: SilenceStore,
    *,
    clock: Callable[[], float] = time.time,
    zone_of: Callable[[str], tzinfo] = lambda chat: UTC,
) -> BotCommand:
    """`zone_of`: the zone a chat reads times in (routes/zones.py)."""

    def answer(asked: Asked, words: Words) -> Said:
        chat = asked.chat
        active = silences.active(chat, now=clock())
        if not active:
            return Said("silences_none")
        lines = [
            words.silences_line.format(
                what=silence.matchers.describe(words, label=silence.label),
                until=place_time(silence.ends_at, zone_of(chat)),
                by=silence.created_by,
            )
            for silence in active
        ]
        return Said("silences_answer", {"lines": "\n".join(lines)})

    return BotCommand("silences", lambda words: words.command_silences, answer)
