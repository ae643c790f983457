"""The board, as a capability: where a route says `board = true`, one message in its chat (and
topic) lists the issues open there, kept pinned and edited in place as they open, are taken,
resolved or ignored (keeping.py). Its tables: `boards`, `board_issues`."""

from __future__ import annotations

from ..cards.takers import TAKES
from ..core.issue_details import HOURLY
from ..delivery.render import Writer
from ..operating.capability import Capability, Core, Running
from ..operating.config import Settings
from .check import board_verdicts
from .counters import BOARDS
from .keeping import EVERY, HELD_FOR, KIND, LOOK_EVERY, Boards, left_behind
from .store import BoardStore


def _on(settings: Settings) -> bool:
    return bool(settings.routes.boards(settings.default_destination))


def _start(core: Core) -> Running:
    counted = core.metrics.of(BOARDS)
    boards = Boards(
        core.shared.of(lambda store: BoardStore(store, core.lending.of(TAKES, core.shared))),
        core.outbox,
        core.telegram,
        core.settings.routes.boards(core.settings.default_destination),
        sources=core.sources,
        zone_of=core.zone_of,
        hourly=core.services.find(HOURLY),
        count=lambda outcome: counted.labels(outcome).inc(),
        clock=core.clock,
        every=core.settings.timing.of(EVERY),
        look_every=core.settings.timing.of(LOOK_EVERY),
        held_for=core.settings.timing.of(HELD_FOR),
    )
    return Running(
        upkeep=(lambda: boards.upkeep(core.words),),
        follow_ups=(boards.follow_up,),
        writers=(Writer(KIND, boards.write),),
    )


CAPABILITY = Capability(
    "board",
    on=_on,
    counters=(BOARDS,),
    writers=(Writer(KIND, left_behind),),
    checks=(board_verdicts,),
    tables=("boards", "board_issues"),
    words={
        "en": {
            "board_heading": "📋 <b>Open issues: {count}</b>",
            "board_taken": "👤 {person}",
            "board_nobody": "nobody on it",
            "board_since": "since {time}",
            "board_events": "{count} in the last hour",
            "board_more": "… and {count} more",
            "board_clear": "✅ <b>All clear</b>",
            "board_clear_since": "✅ <b>All clear</b> since {time}",
        },
        "ru": {
            "board_heading": "📋 <b>Открытые задачи: {count}</b>",
            "board_taken": "👤 {person}",
            "board_nobody": "никто не взял",
            "board_since": "с {time}",
            "board_events": "{count} за последний час",
            "board_more": "… и ещё {count}",
            "board_clear": "✅ <b>Всё спокойно</b>",
            "board_clear_since": "✅ <b>Всё спокойно</b> с {time}",
        },
    },
    start=_start,
)
