"""`/oncall` in the chat: who is on duty in each rotation, until when, and who is next, on the
rotations' wall clock. Registered with the chat's commands when the relay is assembled."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from zoneinfo import ZoneInfo

from ..routes.rotation import Rotation
from ..telegram.bot_commands import BotCommand
from ..words import Said, Words


def oncall_command(
    rotations: Mapping[str, Rotation], zone: ZoneInfo, *, clock: Callable[[], float] = time.time
) -> BotCommand:
    """`zone`: a rotation's own when it names none (RELAY_TIMEZONE)."""

    def answer(chat: str, words: Words) -> Said:
        if not rotations:
            return Said("oncall_none")
        now = clock()
        lines = []
        for rotation in rotations.values():
            duty = rotation.on_duty(now, zone)
            lines.append(
                words.oncall_line.format(
                    name=rotation.name,
                    person=duty.person,
                    until=f"{duty.until:%d.%m %H:%M} {duty.until.tzname()}",
                    next=duty.next_person,
                )
            )
        return Said("oncall_answer", {"lines": "\n".join(lines)})

    return BotCommand("oncall", lambda words: words.command_oncall, answer)
